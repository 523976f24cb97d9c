/* XID class table and the kernel-log parser (xid.h). */
#include "xid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char pf_xid_source[] =
    "NVIDIA XID catalogue (docs.nvidia.com/deploy/xid-errors); node-fault "
    "set as HyperPod and NVSentinel act on it (48, 63, 64, 74, 79, 94, 95) "
    "plus 92, 119, 120";

static const struct pf_xid_info table[] = {
    { 13, PF_XID_APP, "graphics engine exception", "" },
    { 31, PF_XID_APP, "GPU memory page fault", "" },
    { 43, PF_XID_APP, "GPU stopped processing", "" },
    { 45, PF_XID_APP, "preemptive cleanup, due to previous errors", "" },
    { 48, PF_XID_NODE, "double-bit ECC error", "reset" },
    { 63, PF_XID_NODE, "row remap or page retirement recorded", "reset" },
    { 64, PF_XID_NODE, "row remap or page retirement failed", "replace" },
    { 74, PF_XID_NODE, "NVLink error", "reset" },
    { 79, PF_XID_NODE, "GPU has fallen off the bus", "reset" },
    { 92, PF_XID_NODE, "high single-bit ECC error rate", "drain" },
    { 94, PF_XID_NODE, "contained ECC error", "reset" },
    { 95, PF_XID_NODE, "uncontained ECC error", "reset" },
    { 119, PF_XID_NODE, "GSP RPC timeout", "reset" },
    { 120, PF_XID_NODE, "GSP error", "reset" },
};

const struct pf_xid_info *pf_xid_info(int xid)
{
    static const struct pf_xid_info other = { 0, PF_XID_OTHER, "", "" };

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].xid == xid)
            return &table[i];
    return &other;
}

const char *pf_xid_kind_name(enum pf_xid_kind k)
{
    switch (k) {
    case PF_XID_NODE: return "node";
    case PF_XID_APP: return "application";
    case PF_XID_OTHER: return "other";
    }
    return "other";
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Hex digits at *p (at most maxd), up to end; false when none. */
static bool hex_field(const char **p, const char *end, int maxd, unsigned *out)
{
    unsigned v = 0;
    int n = 0;

    while (*p < end && n < maxd && hexval(**p) >= 0) {
        v = v * 16 + (unsigned)hexval(**p);
        (*p)++;
        n++;
    }
    *out = v;
    return n > 0;
}

static const char *find(const char *s, size_t len, const char *needle)
{
    size_t nl = strlen(needle);

    for (size_t i = 0; i + nl <= len; i++)
        if (s[i] == needle[0] && !memcmp(s + i, needle, nl))
            return s + i;
    return NULL;
}

bool pf_xid_parse_line(const char *line, size_t len, struct pf_xid_hit *out)
{
    static const char tag[] = "NVRM: Xid (PCI:";
    const char *end = line + len, *p = find(line, len, tag), *tuple;
    long xid = 0;
    int digits = 0;

    if (!p)
        return false;
    memset(out, 0, sizeof(*out));
    p += sizeof(tag) - 1;
    tuple = p;
    /* DDDD:BB:DD, the domain sometimes written with 8 digits */
    if (!hex_field(&p, end, 8, &out->domain) || p >= end || *p++ != ':' ||
        !hex_field(&p, end, 2, &out->bus) || p >= end || *p++ != ':' ||
        !hex_field(&p, end, 2, &out->dev))
        return false;
    if ((size_t)(p - tuple) >= sizeof(out->busid))
        return false;
    memcpy(out->busid, tuple, (size_t)(p - tuple));
    out->busid[p - tuple] = '\0';
    /* an optional .function, then "): " */
    if (p < end && *p == '.') {
        unsigned fn;
        p++;
        if (!hex_field(&p, end, 1, &fn))
            return false;
    }
    if (end - p < 3 || p[0] != ')' || p[1] != ':' || p[2] != ' ')
        return false;
    p += 3;
    while (p < end && *p >= '0' && *p <= '9' && digits < 6) {
        xid = xid * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits == 0 || (p < end && *p >= '0' && *p <= '9'))
        return false;
    /* the number ends the field: ", ..." or the end of the line */
    if (p < end && *p != ',' && *p != ' ' && *p != '\r')
        return false;
    out->xid = (int)xid;
    return true;
}

int pf_xid_scan(const char *buf, size_t len, pf_xid_cb cb, void *ctx)
{
    size_t start = 0;
    int hits = 0;

    while (start < len) {
        const char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len;
        struct pf_xid_hit h;

        if (pf_xid_parse_line(buf + start, end - start, &h)) {
            hits++;
            if (cb)
                cb(ctx, &h);
        }
        start = end + 1;
    }
    return hits;
}

#define CHUNK 8192

pf_err pf_xid_read_log(const char *path, size_t max_bytes, pf_xid_cb cb,
                       void *ctx, int *hits, char *err)
{
    /* A record or line never spans more than CHUNK here: /dev/kmsg hands
     * out whole records (at most 8 KiB: the kernel's limit) per read; a
     * file's lines are carried across reads up to that length. */
    char *buf = malloc(2 * CHUNK + 1);
    size_t carry = 0, total = 0;
    int fd;

    *hits = 0;
    if (!buf)
        return pf_fail(err, PF_ERR_NOMEM, "kernel log: out of memory");
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        free(buf);
        return pf_fail(err, e == ENOENT ? PF_ERR_NOTFOUND : PF_ERR_IO,
                       "%s: %s", path, strerror(e));
    }
    while (total < max_bytes) {
        ssize_t r = read(fd, buf + carry, CHUNK);
        size_t have, done;

        if (r < 0 && errno == EINTR)
            continue;
        /* /dev/kmsg: a record overwritten under us; go on with the next */
        if (r < 0 && errno == EPIPE)
            continue;
        if (r < 0 && errno == EAGAIN)
            break;                    /* the end of the kernel's buffer */
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return pf_fail(err, PF_ERR_IO, "%s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        total += (size_t)r;
        have = carry + (size_t)r;
        /* whole lines now; the unfinished tail is carried */
        done = have;
        while (done > 0 && buf[done - 1] != '\n')
            done--;
        if (have - done >= CHUNK)
            done = have;              /* an over-long line: scan it cut */
        *hits += pf_xid_scan(buf, done, cb, ctx);
        carry = have - done;
        memmove(buf, buf + done, carry);
    }
    if (carry > 0)
        *hits += pf_xid_scan(buf, carry, cb, ctx);
    close(fd);
    free(buf);
    return PF_OK;
}

bool pf_xid_bus_matches(const char *nvml_bus_id, const struct pf_xid_hit *h)
{
    unsigned dom, bus, dev;
    const char *p = nvml_bus_id, *end = p + strlen(p);

    if (!hex_field(&p, end, 8, &dom) || p >= end || *p++ != ':' ||
        !hex_field(&p, end, 2, &bus) || p >= end || *p++ != ':' ||
        !hex_field(&p, end, 2, &dev))
        return false;
    return dom == h->domain && bus == h->bus && dev == h->dev;
}

void pf_xid_list_add(struct pf_xid_list *l, int xid)
{
    for (int i = 0; i < l->n; i++)
        if (l->x[i].xid == xid) {
            l->x[i].count++;
            return;
        }
    if (l->n < PF_MAX_XIDS) {
        l->x[l->n].xid = xid;
        l->x[l->n].count = 1;
        l->n++;
    } else {
        l->more++;
    }
}
