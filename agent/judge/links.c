/* What a link must reach (links.h): the fleet baseline's bar over the
 * catalog floor, and the relative thresholds where no floor applies. */
#include "links.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../baseline/baseline.h"

static double good(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pf_base_pair_floor(const struct pf_baseline *b, const char *type,
                          const char *engine, uint64_t bytes, double catalog,
                          double fraction, struct pf_base_held *h)
{
    const struct pf_base_entry *e =
        type && type[0] ? pf_base_find(b, type, engine, "pair", 2, bytes)
                        : NULL;
    struct pf_base_held mine;
    double thr;

    if (!h)
        h = &mine;
    memset(h, 0, sizeof(*h));
    h->catalog_gbps = catalog;
    h->fraction = fraction;
    h->bytes = bytes;
    if (!e) {
        snprintf(h->note, sizeof(h->note), "no baseline for these pairs "
                 "(%s): the catalog floor alone judges",
                 b->note[0] ? b->note : "no key for this type and size");
        return catalog;
    }
    h->median_gbps = pf_base_median(e);
    h->runs = e->n;
    if (e->n < PF_BASE_MIN_RUNS) {
        snprintf(h->note, sizeof(h->note), "the baseline has %d run(s) for "
                 "these pairs, fewer than %d: the catalog floor alone "
                 "judges", e->n, PF_BASE_MIN_RUNS);
        return catalog;
    }
    thr = fraction * h->median_gbps;
    if (fraction <= 0 || thr <= catalog) {
        snprintf(h->note, sizeof(h->note), "the catalog floor %.4g GB/s is "
                 "at or above %.2f x the fleet's median %.4g GB/s (%d runs): "
                 "the catalog floor judges", catalog, fraction,
                 h->median_gbps, e->n);
        return catalog;
    }
    h->applied = true;
    h->floor_gbps = thr;
    snprintf(h->note, sizeof(h->note), "links held to %.4g GB/s = %.2f x the "
             "fleet's median pair link %.4g GB/s (%d runs, %s), above the "
             "catalog floor %.4g GB/s", thr, fraction, h->median_gbps, e->n,
             b->source[0] ? b->source : "baseline", catalog);
    return thr;
}

double pf_links_relative_floor(int n, const double *gbps)
{
    double *v, median;

    if (n < 1 || !(v = calloc((size_t)n, sizeof(*v))))
        return 0;
    for (int i = 0; i < n; i++)
        v[i] = good(gbps[i]);
    qsort(v, (size_t)n, sizeof(*v), by_value);
    median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    free(v);
    return PF_STRAG_LINK_RATIO * median;
}

double pf_inside_relative_floor(int n, const double *gbps)
{
    double *best, median;

    if (n != 3)
        return pf_links_relative_floor(n, gbps);
    if (!(best = calloc((size_t)n, sizeof(*best))))
        return 0;
    for (int r = 0; r < n; r++) {
        double l = gbps[(r + n - 1) % n], m = gbps[r];
        l = isfinite(l) && l > 0 ? l : 0;
        m = isfinite(m) && m > 0 ? m : 0;
        best[r] = l > m ? l : m;
    }
    qsort(best, (size_t)n, sizeof(*best), by_value);
    median = n % 2 ? best[n / 2] : (best[n / 2 - 1] + best[n / 2]) / 2;
    free(best);
    return PF_STRAG_LINK_RATIO * median;
}
