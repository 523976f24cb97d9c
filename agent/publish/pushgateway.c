/* The Pushgateway path of the metrics (metrics.h): one PUT of the
 * exposition text to the node's group, <base>/metrics/job/efa_preflight/
 * instance/<node>, which replaces what the node pushed before. */
#include "pushgateway.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../util/clock.h"
#include "../util/sizes.h"

#define JOB "efa_preflight"
#define PUSH_CONNECT_MS 10000

/* Pushgateway's form of a grouping-key value: plain when it is a simple
 * name, else "@base64/" + base64url (RFC 4648, '=' padded). */
static bool plain_value(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
              *s == '.'))
            return false;
    return true;
}

static bool base64url(const char *in, char *out, size_t cap)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                              "0123456789-_";
    size_t n = strlen(in), o = 0;
    const unsigned char *s = (const unsigned char *)in;

    if ((n + 2) / 3 * 4 + 1 > cap)
        return false;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
    return true;
}

pf_err pf_metrics_push_url(const char *base, const char *instance, char *out,
                           size_t cap, char *err)
{
    size_t blen = strlen(base);
    char enc[4 * PF_NAME_MAX];
    int n;

    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    if (plain_value(instance)) {
        n = snprintf(out, cap, "%.*s/metrics/job/" JOB "/instance/%s",
                     (int)blen, base, instance);
    } else {
        /* An empty value is "=" in this form. */
        if (!base64url(instance, enc, sizeof(enc)))
            return pf_fail(err, PF_ERR_USAGE, "Pushgateway instance name is "
                           "too long");
        n = snprintf(out, cap, "%.*s/metrics/job/" JOB "/instance@base64/%s",
                     (int)blen, base, *instance ? enc : "=");
    }
    if (n < 0 || (size_t)n >= cap)
        return pf_fail(err, PF_ERR_USAGE, "Pushgateway URL too long");
    return PF_OK;
}

/* The URL as messages show it: any user:password@ dropped. */
static void display_url(const char *url, char *out, size_t cap)
{
    const char *auth = strstr(url, "://");
    const char *at, *slash;

    if (!auth) {
        snprintf(out, cap, "%s", url);
        return;
    }
    auth += 3;
    slash = strchr(auth, '/');
    at = strchr(auth, '@');
    if (at && (!slash || at < slash))
        snprintf(out, cap, "%.*s%s", (int)(auth - url), url, at + 1);
    else
        snprintf(out, cap, "%s", url);
}

struct reply {
    char text[256];
    size_t len;
};

static size_t on_reply(char *data, size_t size, size_t n, void *user)
{
    struct reply *r = user;
    size_t len = size * n, room = sizeof(r->text) - 1 - r->len;
    size_t take = len < room ? len : room;

    memcpy(r->text + r->len, data, take);
    r->len += take;
    r->text[r->len] = '\0';
    return len;
}

pf_err pf_metrics_push(const char *base, const char *instance,
                       const char *text, int64_t deadline_ms, char *err)
{
    char url[PF_PATH_MAX + 4 * PF_NAME_MAX], shown[sizeof(url)];
    char curl_err[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    struct reply reply = { "", 0 };
    int64_t left = pf_ms_left(deadline_ms);
    long status = 0;
    CURLcode cc;
    CURL *h;
    pf_err rc;

    rc = pf_metrics_push_url(base, instance, url, sizeof(url), err);
    if (rc != PF_OK)
        return rc;
    display_url(url, shown, sizeof(shown));
    if (left <= 0)
        return pf_fail(err, PF_ERR_TIMEOUT, "Pushgateway %s: not pushed, the "
                       "run's deadline has passed", shown);
    h = curl_easy_init();
    hdrs = curl_slist_append(NULL, "Content-Type: text/plain; version=0.0.4; "
                                   "charset=utf-8");
    if (!h || !hdrs) {
        curl_slist_free_all(hdrs);
        if (h)
            curl_easy_cleanup(h);
        return pf_fail(err, PF_ERR_NOMEM, "Pushgateway: out of memory");
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(left < PUSH_CONNECT_MS ? left : PUSH_CONNECT_MS));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_reply);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK)
        return pf_fail(err, cc == CURLE_OPERATION_TIMEDOUT ? PF_ERR_TIMEOUT
                                                           : PF_ERR_IO,
                       "Pushgateway %s: %s", shown,
                       curl_err[0] ? curl_err : curl_easy_strerror(cc));
    if (status < 200 || status > 299) {
        reply.text[strcspn(reply.text, "\r\n")] = '\0';
        return pf_fail(err, PF_ERR_API, "Pushgateway %s: HTTP %ld%s%s", shown,
                       status, reply.text[0] ? ": " : "", reply.text);
    }
    return PF_OK;
}
