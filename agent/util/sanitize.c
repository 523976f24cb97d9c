#include "sanitize.h"

#include <stdint.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at p (RFC 3629, table 3-7 of
 * the Unicode standard) and its code point; 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, uint32_t *cp)
{
    unsigned char c = p[0];

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        if ((p[1] & 0xC0) != 0x80)
            return 0;
        *cp = (uint32_t)(c & 0x1F) << 6 | (p[1] & 0x3F);
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
        unsigned char hi = c == 0xED ? 0x9F : 0xBF;  /* no surrogates */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
            return 0;
        *cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 |
              (p[2] & 0x3F);
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;  /* <= U+10FFFF */
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80)
            return 0;
        *cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
              (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
        return 4;
    }
    return 0;
}

/* Code points that change how the rest of a line is shown. */
static bool unsafe(uint32_t cp, bool keep_newline)
{
    if (cp == '\n')
        return !keep_newline;
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) ||
           cp == 0x2028 || cp == 0x2029 ||             /* line, paragraph */
           (cp >= 0x202A && cp <= 0x202E) ||           /* embed, override */
           (cp >= 0x2066 && cp <= 0x2069);             /* isolates */
}

static size_t sanitize(char *dst, size_t dstlen, const char *src,
                       bool keep_newline)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;

    if (dstlen == 0)
        return 0;
    if (!src) {
        dst[0] = '\0';
        return 0;
    }
    /* o never passes the read position, so dst == src is safe. */
    while (*p) {
        uint32_t cp = 0;
        size_t n = utf8_seq(p, &cp);

        if (n == 0 || unsafe(cp, keep_newline)) {
            if (o + 1 >= dstlen)
                break;
            dst[o++] = cp == '\t' && n == 1 ? ' ' : '?';
            p += n ? n : 1;
            continue;
        }
        if (o + n >= dstlen)
            break;                    /* cut at a character boundary */
        memmove(dst + o, p, n);
        o += n;
        p += n;
    }
    dst[o] = '\0';
    return o;
}

size_t pf_sanitize(char *dst, size_t dstlen, const char *src)
{
    return sanitize(dst, dstlen, src, false);
}

size_t pf_sanitize_text(char *dst, size_t dstlen, const char *src)
{
    return sanitize(dst, dstlen, src, true);
}

void pf_sanitize_inplace(char *s, size_t max)
{
    if (s)
        sanitize(s, max, s, false);
}

bool pf_is_clean(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (p && *p) {
        uint32_t cp = 0;
        size_t n = utf8_seq(p, &cp);
        if (n == 0 || unsafe(cp, false))
            return false;
        p += n;
    }
    return true;
}

/* Never longer than before: the buffers cJSON owns are rewritten where
 * they are. */
static void fix_item(cJSON *it)
{
    if (it->string && !pf_is_clean(it->string))
        sanitize(it->string, strlen(it->string) + 1, it->string, false);
    if (cJSON_IsString(it) && it->valuestring) {
        size_t len = strlen(it->valuestring) + 1;
        sanitize(it->valuestring,
                 len < PF_SAN_JSON_MAX ? len : PF_SAN_JSON_MAX,
                 it->valuestring, false);
    }
}

static void fix_list(cJSON *it)
{
    for (; it; it = it->next) {
        fix_item(it);
        fix_list(it->child);
    }
}

void pf_sanitize_json(cJSON *item)
{
    if (!item)
        return;
    fix_item(item);
    fix_list(item->child);
}
