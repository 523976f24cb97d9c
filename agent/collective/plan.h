/* The time to verdict, planned up front. When the group has formed and
 * the engine is open, what is left of the run's deadline (less the margin
 * kept for publishing) is split: the sweep gets PF_PLAN_SWEEP_SHARE of it,
 * the pairwise phase and the re-tests keep the rest. The sweep starts no
 * size it cannot finish inside its share and stops as soon as the ring's
 * outcome is decided (wrong data, or a size that holds a floor run at
 * under half of it), so localisation never loses its time to the sweep.
 * The decisions are made on data every rank holds (the sweep's per-size
 * allgather, rank 0's clock inside it), so every rank stops at the same
 * size. */
#ifndef PF_PLAN_H
#define PF_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "../types/coll.h"

#define PF_PLAN_SWEEP_SHARE 0.5
/* A ring under this fraction of its floor, at a size the floor holds
 * from, is decided: larger sizes would not lift it over. */
#define PF_PLAN_DECIDED_RATIO 0.5

/* Make the plan at now (ms clock): the run started start_ms with a
 * timeout of total_s; the collective's own deadline is coll_deadline,
 * publish_s before the run's. Logs it. */
void pf_plan_make(struct pf_time_plan *p, int64_t now, int64_t start_ms,
                  double total_s, int64_t coll_deadline, double publish_s);

/* What one size told, for the decision after it. */
struct pf_plan_size {
    uint64_t bytes;
    double op_s;                      /* slowest rank's seconds per
                                         all_reduce, out of or in place */
    int ops;                          /* all_reduces timed per size (both
                                         placements, checks included) */
    long wrong;                       /* over every rank */
    double busbw;                     /* the row's better busbw */
    double floor_gbps;                /* 0: none */
    uint64_t floor_from;              /* the floor holds from (0: largest) */
    double left_s;                    /* rank 0's sweep time left */
};

/* Whether the sweep stops after this size (why into why, cap bytes);
 * next_bytes is the next size, 0 when this was the last. */
bool pf_plan_sweep_stops(const struct pf_plan_size *s, uint64_t next_bytes,
                         char *why, size_t cap);

/* The iterations of the pairwise test that fit in left_s: rounds of
 * (iters + 1) exchanges of per_op_s each, plus a second. PAIR iters when
 * they fit, fewer down to 1, 0 when not even one fits. */
int pf_plan_pair_iters(double left_s, int rounds, double per_op_s,
                       int iters);

#endif
