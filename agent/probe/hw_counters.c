/* EFA hardware counters (hw_counters.h). */
#include "hw_counters.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../types/coll.h"
#include "../util/fsutil.h"

#define SETTLE_MAX_MS 1000

static const char *const names[PF_HWC_COUNT] = {
    [PF_HWC_TX_BYTES] = "tx_bytes",
    [PF_HWC_RX_BYTES] = "rx_bytes",
    [PF_HWC_TX_PKTS] = "tx_pkts",
    [PF_HWC_RX_PKTS] = "rx_pkts",
    [PF_HWC_RX_DROPS] = "rx_drops",
    [PF_HWC_SEND_BYTES] = "send_bytes",
    [PF_HWC_RECV_BYTES] = "recv_bytes",
    [PF_HWC_RDMA_READ_BYTES] = "rdma_read_bytes",
    [PF_HWC_RDMA_READ_WR_ERR] = "rdma_read_wr_err",
    [PF_HWC_RDMA_WRITE_BYTES] = "rdma_write_bytes",
    [PF_HWC_RDMA_WRITE_WR_ERR] = "rdma_write_wr_err",
    [PF_HWC_RETRANS_BYTES] = "retrans_bytes",
    [PF_HWC_RETRANS_PKTS] = "retrans_pkts",
    [PF_HWC_RETRANS_TIMEOUT_EVENTS] = "retrans_timeout_events",
    [PF_HWC_UNRESPONSIVE_REMOTE_EVENTS] = "unresponsive_remote_events",
    [PF_HWC_IMPAIRED_REMOTE_CONN_EVENTS] = "impaired_remote_conn_events",
    [PF_HWC_LIFESPAN] = "lifespan",
};

const char *pf_hwc_name(enum pf_hwc c)
{
    return (int)c >= 0 && c < PF_HWC_COUNT ? names[c] : "?";
}

bool pf_hwc_is_error(enum pf_hwc c)
{
    switch (c) {
    case PF_HWC_RX_DROPS:
    case PF_HWC_RDMA_READ_WR_ERR:
    case PF_HWC_RDMA_WRITE_WR_ERR:
    case PF_HWC_RETRANS_TIMEOUT_EVENTS:
    case PF_HWC_UNRESPONSIVE_REMOTE_EVENTS:
    case PF_HWC_IMPAIRED_REMOTE_CONN_EVENTS:
        return true;
    default:
        return false;
    }
}

static bool read_u64(const char *path, uint64_t *out)
{
    char buf[32], err[PF_ERRLEN], *end;
    unsigned long long v;

    if (pf_read_line(path, buf, sizeof(buf), err) != PF_OK || !buf[0])
        return false;
    errno = 0;
    v = strtoull(buf, &end, 10);
    if (errno || *end || buf[0] == '-')
        return false;
    *out = v;
    return true;
}

static int not_dot(const struct dirent *d) { return d->d_name[0] != '.'; }

/* Add one port's counters into out; false when it has no hw_counters. */
static bool read_port(const char *dir, struct pf_hwc_snap *out,
                      uint32_t *seen)
{
    char path[PF_PATH_MAX];
    struct stat st;

    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return false;
    *seen = 0;
    for (int c = 0; c < PF_HWC_COUNT; c++) {
        uint64_t v;
        snprintf(path, sizeof(path), "%s/%s", dir, names[c]);
        if (!read_u64(path, &v))
            continue;
        *seen |= 1u << c;
        if (c == PF_HWC_LIFESPAN)
            out->v[c] = v > out->v[c] ? v : out->v[c];
        else
            out->v[c] += v;
    }
    return true;
}

void pf_hwc_read(const char *root, const char *dev, struct pf_hwc_snap *out)
{
    char rel[PF_PATH_MAX], ports[PF_PATH_MAX], dir[PF_PATH_MAX];
    char err[PF_ERRLEN];
    struct dirent **list;
    int n;

    memset(out, 0, sizeof(*out));
    snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports", dev);
    if (pf_path_join(ports, sizeof(ports), root, rel, err) != PF_OK)
        return;
    n = scandir(ports, &list, not_dot, alphasort);
    if (n < 0)
        return;
    out->present = ~0u;
    for (int i = 0; i < n; i++) {
        uint32_t seen;
        snprintf(dir, sizeof(dir), "%s/%s/hw_counters", ports,
                 list[i]->d_name);
        if (read_port(dir, out, &seen)) {
            out->nports++;
            out->present &= seen;
        }
        free(list[i]);
    }
    free(list);
    if (out->nports == 0)
        out->present = 0;
    out->present &= (1u << PF_HWC_COUNT) - 1;
}

void pf_hwc_read_all(const char *root, const struct pf_node *node,
                     struct pf_hwc_snap *out, int n)
{
    for (int i = 0; i < n && i < PF_MAX_EFA; i++)
        pf_hwc_read(root, node->efa[i].name, &out[i]);
}

void pf_hwc_delta(const struct pf_hwc_snap *before,
                  const struct pf_hwc_snap *after, struct pf_nic_delta *d)
{
    memset(d, 0, sizeof(*d));
    d->present = before->present & after->present;
    for (int c = 0; c < PF_HWC_COUNT; c++) {
        if (!(d->present & (1u << c)))
            continue;
        if (c == PF_HWC_LIFESPAN)
            d->d[c] = after->v[c];    /* a setting, not a count */
        else if (after->v[c] >= before->v[c])
            d->d[c] = after->v[c] - before->v[c];
        else
            d->went_back = true;
    }
}

static bool has(uint32_t present, enum pf_hwc c)
{
    return present & (1u << c);
}

uint64_t pf_hwc_bytes(const uint64_t *v, uint32_t present, bool *known)
{
    static const enum pf_hwc verbs[] = { PF_HWC_SEND_BYTES, PF_HWC_RECV_BYTES,
                                         PF_HWC_RDMA_READ_BYTES,
                                         PF_HWC_RDMA_WRITE_BYTES };
    uint64_t sum = 0;

    *known = false;
    if (has(present, PF_HWC_TX_BYTES) && has(present, PF_HWC_RX_BYTES)) {
        *known = true;
        return v[PF_HWC_TX_BYTES] + v[PF_HWC_RX_BYTES];
    }
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (has(present, verbs[i])) {
            *known = true;
            sum += v[verbs[i]];
        }
    return sum;
}

uint64_t pf_hwc_errors(const uint64_t *v, uint32_t present)
{
    uint64_t sum = 0;

    for (int c = 0; c < PF_HWC_COUNT; c++)
        if (pf_hwc_is_error((enum pf_hwc)c) && has(present, (enum pf_hwc)c))
            sum += v[c];
    return sum;
}

void pf_hwc_errors_text(const uint64_t *v, uint32_t present, const char *sign,
                        char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int c = 0; c < PF_HWC_COUNT && used < len; c++) {
        if (!pf_hwc_is_error((enum pf_hwc)c) || !has(present, (enum pf_hwc)c) ||
            v[c] == 0)
            continue;
        int k = snprintf(out + used, len - used, "%s%s %s%llu",
                         used ? ", " : "", names[c], sign,
                         (unsigned long long)v[c]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
}

int pf_hwc_absent_text(const struct pf_hwc_snap *s, int n, char *out,
                       size_t len)
{
    size_t used = 0;
    int absent = 0;

    out[0] = '\0';
    for (int c = 0; c < PF_HWC_COUNT; c++) {
        bool anywhere = false;
        for (int i = 0; i < n && !anywhere; i++)
            anywhere = has(s[i].present, (enum pf_hwc)c);
        if (anywhere || n == 0)
            continue;
        absent++;
        if (used < len) {
            int k = snprintf(out + used, len - used, "%s%s", used ? ", " : "",
                             names[c]);
            if (k > 0)
                used += (size_t)k;
        }
    }
    return absent;
}

int pf_hwc_settle_ms(const struct pf_hwc_snap *s, int n)
{
    uint64_t ms = 0;

    for (int i = 0; i < n; i++)
        if (has(s[i].present, PF_HWC_LIFESPAN) && s[i].v[PF_HWC_LIFESPAN] > ms)
            ms = s[i].v[PF_HWC_LIFESPAN];
    return ms > SETTLE_MAX_MS ? SETTLE_MAX_MS : (int)ms;
}

void pf_hwc_fmt_bytes(char *out, size_t len, double b)
{
    static const char *const unit[] = { "B", "kB", "MB", "GB", "TB", "PB" };
    int u = 0;

    while (b >= 1000 && u < 5) {
        b /= 1000;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}
