/* The floor curves' arithmetic (floor.h): a catalog point by node count
 * and NIC count, a point by message size, a rule at a size. */
#include "floor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pf_floor_points(const struct pf_instance *it, int nodes,
                     const struct pf_floor **lo, const struct pf_floor **hi)
{
    *lo = *hi = NULL;
    if (!it || nodes < 1)
        return false;
    for (int i = 0; i < it->nfloors; i++) {
        const struct pf_floor *p = &it->floors[i];
        if (nodes == 1 ? p->nodes != 1 : p->nodes < 2)
            continue;
        if (p->nodes <= nodes && (!*lo || p->nodes > (*lo)->nodes))
            *lo = p;
        if (p->nodes >= nodes && (!*hi || p->nodes < (*hi)->nodes))
            *hi = p;
    }
    if (!*lo)
        *lo = *hi;
    if (!*hi)
        *hi = *lo;
    return *lo != NULL;
}

int pf_floor_sizes(const struct pf_floor *f, struct pf_size_floor *out)
{
    if (f->nsizes > 0) {
        int n = f->nsizes < PF_MAX_SIZE_FLOORS ? f->nsizes : PF_MAX_SIZE_FLOORS;
        memcpy(out, f->sizes, (size_t)n * sizeof(*out));
        return n;
    }
    if (!f->from_bytes)
        return 0;
    out[0] = (struct pf_size_floor){ f->from_bytes, f->busbw_gbps };
    return 1;
}

double pf_size_floor_at(const struct pf_size_floor *s, int n, uint64_t bytes)
{
    if (n <= 0 || bytes < s[0].bytes)
        return 0;
    for (int i = 0; i + 1 < n; i++) {
        if (bytes >= s[i + 1].bytes)
            continue;
        /* busbw grows roughly by a step per doubling of the message
         * (2x p4d: 44, 66, 75 GB/s at 64 MiB, 256 MiB, 1 GiB): linear in
         * log2 size, as the node curve is in log2 N. */
        double t = (log2((double)bytes) - log2((double)s[i].bytes)) /
                   (log2((double)s[i + 1].bytes) - log2((double)s[i].bytes));
        return s[i].gbps + t * (s[i + 1].gbps - s[i].gbps);
    }
    return s[n - 1].gbps;     /* flat beyond the last: never more asked */
}

/* A point's floor at a size: a bare number holds at every size. */
static double point_at(const struct pf_floor *f, const struct pf_size_floor *s,
                       int n, uint64_t bytes)
{
    return n ? pf_size_floor_at(s, n, bytes) : f->busbw_gbps;
}

static int by_bytes(const void *a, const void *b)
{
    const struct pf_size_floor *x = a, *y = b;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* Between two node points the curve by size: at every size either names
 * from where both have a floor, each point's own size curve, linear in
 * log2 N between them. */
static void interp_sizes(const struct pf_floor *lo, const struct pf_floor *hi,
                         double t, struct pf_floor *out)
{
    struct pf_size_floor a[PF_MAX_SIZE_FLOORS], b[PF_MAX_SIZE_FLOORS];
    struct pf_size_floor u[2 * PF_MAX_SIZE_FLOORS];
    int na = pf_floor_sizes(lo, a), nb = pf_floor_sizes(hi, b), nu = 0;
    uint64_t first = 0;

    if (na && a[0].bytes > first)
        first = a[0].bytes;
    if (nb && b[0].bytes > first)
        first = b[0].bytes;
    for (int i = 0; i < na + nb; i++) {
        uint64_t x = i < na ? a[i].bytes : b[i - na].bytes;
        bool dup = false;
        for (int k = 0; k < nu; k++)
            dup = dup || u[k].bytes == x;
        if (x >= first && !dup)
            u[nu++].bytes = x;
    }
    qsort(u, (size_t)nu, sizeof(u[0]), by_bytes);
    out->nsizes = 0;
    for (int k = 0; k < nu && out->nsizes < PF_MAX_SIZE_FLOORS; k++) {
        double x = point_at(lo, a, na, u[k].bytes);
        double y = point_at(hi, b, nb, u[k].bytes);
        out->sizes[out->nsizes++] =
            (struct pf_size_floor){ u[k].bytes, x + t * (y - x) };
    }
    out->busbw_gbps = out->from_bytes
        ? pf_size_floor_at(out->sizes, out->nsizes, out->from_bytes)
        : lo->busbw_gbps + t * (hi->busbw_gbps - lo->busbw_gbps);
    if (out->nsizes <= 1)
        out->nsizes = 0;      /* one size: from_bytes and busbw_gbps say it */
}

bool pf_instance_floor(const struct pf_instance *it, int nodes,
                       struct pf_floor *out)
{
    const struct pf_floor *lo, *hi;
    double t;

    memset(out, 0, sizeof(*out));
    if (!pf_floor_points(it, nodes, &lo, &hi))
        return false;
    if (lo == hi) {
        *out = *lo;
        out->nodes = nodes;
        return true;
    }
    /* Busbw falls roughly by a constant step per doubling of the node
     * count (p5 at 1 GiB: ~435, 274, 220 GB/s at 2, 8, 32 nodes): linear
     * in log2 N. */
    t = (log2(nodes) - log2(lo->nodes)) / (log2(hi->nodes) - log2(lo->nodes));
    out->nodes = nodes;
    /* Held from the larger of the two sizes; 0 (the largest swept) is
     * never larger than a size the sweep must reach anyway. */
    out->from_bytes = lo->from_bytes > hi->from_bytes ? lo->from_bytes
                                                      : hi->from_bytes;
    interp_sizes(lo, hi, t, out);
    out->verified = lo->verified && hi->verified;
    snprintf(out->source, sizeof(out->source), "linear in log2 N between "
             "the %d-node floor (%g GB/s) and the %d-node floor (%g GB/s)",
             lo->nodes, lo->busbw_gbps, hi->nodes, hi->busbw_gbps);
    return true;
}

uint64_t pf_floor_rule_min_bytes(const struct pf_floor_rule *r)
{
    return r->nsizes > 0 ? r->sizes[0].bytes : r->from_bytes;
}

double pf_floor_rule_at(const struct pf_floor_rule *r, uint64_t bytes)
{
    if (r->gbps <= 0)
        return 0;
    if (r->nsizes > 0)
        return pf_size_floor_at(r->sizes, r->nsizes, bytes);
    return bytes >= r->from_bytes ? r->gbps : 0;
}

const struct pf_floor *pf_instance_host_floor(const struct pf_instance *it,
                                              int nics)
{
    const struct pf_floor *best = NULL;

    if (!it)
        return NULL;
    for (int i = 0; i < it->nhost_floors; i++)
        if (it->host_floors[i].nodes <= nics &&
            (!best || it->host_floors[i].nodes > best->nodes))
            best = &it->host_floors[i];
    return best;
}
