/* The time plan (plan.h). */
#include "plan.h"

#include <stdio.h>
#include <string.h>

#include "../util/log.h"

void pf_plan_make(struct pf_time_plan *p, int64_t now, int64_t start_ms,
                  double total_s, int64_t coll_deadline, double publish_s)
{
    double left_s = (double)(coll_deadline - now) / 1000.0;

    memset(p, 0, sizeof(*p));
    if (left_s < 0)
        left_s = 0;
    p->total_s = total_s;
    p->before_s = (double)(now - start_ms) / 1000.0;
    p->publish_s = publish_s;
    p->sweep_s = left_s * PF_PLAN_SWEEP_SHARE;
    p->after_s = left_s - p->sweep_s;
    p->sweep_end = now + (int64_t)(p->sweep_s * 1000.0);
    pf_info("deadline plan: %.0f s in all; %.1f s before the sweep (probe, "
            "discovery, rendezvous, fabric set-up); the sweep %.1f s; the "
            "pairwise phase and re-tests %.1f s; %.1f s kept for publishing",
            total_s, p->before_s, p->sweep_s, p->after_s, publish_s);
}

bool pf_plan_sweep_stops(const struct pf_plan_size *s, uint64_t next_bytes,
                         char *why, size_t cap)
{
    double next_s;

    if (s->wrong > 0) {
        snprintf(why, cap, "decided at %llu bytes: %ld wrong elements; "
                 "the time left goes to finding who", 
                 (unsigned long long)s->bytes, s->wrong);
        return true;
    }
    if (s->floor_gbps > 0 && s->floor_from && s->bytes >= s->floor_from &&
        s->busbw < s->floor_gbps * PF_PLAN_DECIDED_RATIO) {
        snprintf(why, cap, "decided at %llu bytes: busbw %.3f GB/s is under "
                 "half the floor %.3f GB/s; the time left goes to finding "
                 "who", (unsigned long long)s->bytes, s->busbw,
                 s->floor_gbps);
        return true;
    }
    if (!next_bytes || s->bytes == 0)
        return false;
    /* A larger size costs at most its share of bytes more per operation
     * (small sizes cost less: latency does not grow with size). */
    next_s = s->op_s * s->ops * (double)next_bytes / (double)s->bytes;
    if (next_s > s->left_s) {
        snprintf(why, cap, "the next size (%llu bytes) would take about "
                 "%.1f s and %.1f s of the sweep's share are left; the rest "
                 "is kept for the pairwise phase",
                 (unsigned long long)next_bytes, next_s,
                 s->left_s > 0 ? s->left_s : 0);
        return true;
    }
    return false;
}

int pf_plan_pair_iters(double left_s, int rounds, double per_op_s, int iters)
{
    for (int it = iters; it >= 1; it--)
        if (rounds * (it + 1) * per_op_s + 1.0 <= left_s)
            return it;
    return 0;
}
