/* The arithmetic of the nccl-tests-style sweep (sweep.c), apart from the
 * engine so it can be tested without a fabric. */
#ifndef PF_SWEEP_H
#define PF_SWEEP_H

#include <stdint.h>

#include "../types/coll.h"
#include "../types/config.h"
#include "../util/err.h"

struct pf_run;
struct pf_engine;
struct pf_boot;

/* The nccl-tests-style sweep over an opened engine, under the time plan
 * (plan.h): sizes run until the ring is decided (against the judgement's
 * stop floor, judge/judge.h pf_judge_stop) or the sweep's share is spent,
 * rows into run->coll. */
pf_err pf_sweep(struct pf_run *run, struct pf_engine *e, struct pf_boot *b,
                int64_t deadline, char *err);

/* busbw factor for all_reduce: 2(n-1)/n, as nccl-tests (0 for one rank,
 * whose all_reduce crosses no bus). */
static inline double pf_busbw_factor(int nranks)
{
    return nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0;
}

/* Sizes min, min*factor, ... up to max (bytes, rounded down to whole
 * float32 elements). PF_ERR_USAGE for min < 4, min > max, factor < 2 with
 * min < max, or more than max_n sizes. */
pf_err pf_sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, int factor,
                      uint64_t *out, int max_n, int *n, char *err);

/* The largest size to sweep: -e when given, else 64 MiB or the floor's
 * size when that is larger (so a catalogued type is judged by default),
 * and never below -b. rule NULL: no floor known (the local launcher, before
 * any rank has probed its instance type). */
uint64_t pf_sweep_max_bytes(const struct pf_config *cfg,
                            const struct pf_floor_rule *rule);

/* The sweep's sizes, decided once (collective.c, before any peer is
 * waited for): from cfg->min_bytes by cfg->step_factor up to
 * pf_sweep_max_bytes under rule (the judgement's planned floor, NULL: no
 * floor known).
 * Sizes pf_sweep_sizes refuses leave plan->nsizes 0. */
pf_err pf_sweep_plan(const struct pf_config *cfg,
                     const struct pf_floor_rule *rule,
                     struct pf_sweep_plan *plan, char *err);

/* A row from per-operation seconds (already averaged over ranks):
 * algbw = bytes / s / 1e9, busbw = algbw x 2(n-1)/n, time in us. */
void pf_sweep_fill_row(struct pf_row *row, uint64_t bytes, int nranks,
                       double oop_s, double ip_s, long oop_wrong,
                       long ip_wrong);

/* Footer figures from c->rows: avg_busbw (mean over out-of-place and
 * in-place busbw of every row, as nccl-tests' "Avg bus bandwidth"),
 * peak_busbw (the better busbw of the largest size), wrong_total. */
void pf_sweep_summarize(struct pf_coll *c);

#endif
