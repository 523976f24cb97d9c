/* The sweep, engine-agnostic, the way nccl-tests runs it: warm-up at the
 * largest then the smallest size; per size a barrier, iters timed
 * all_reduces out of place then in place, then (with checking on) fresh
 * data, one more all_reduce and an exact element-by-element check. Each
 * row's time is the mean over ranks (nccl-tests' default, -a 1) and
 * #wrong the sum over ranks; both come from one allgather per size. */
#include "engine.h"
#include "plan.h"
#include "sweep.h"

#include "../types/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/clock.h"
#include "../util/log.h"

struct rank_result {                  /* one process's view of one size */
    double oop_s, ip_s;               /* seconds per all_reduce */
    int64_t oop_wrong, ip_wrong;
    double sweep_left_s;              /* rank 0's: the time plan's clock */
};

pf_err pf_sweep_sizes(uint64_t min_bytes, uint64_t max_bytes, int factor,
                      uint64_t *out, int max_n, int *n, char *err)
{
    uint64_t size;

    *n = 0;
    if (min_bytes < sizeof(float))
        return pf_fail(err, PF_ERR_USAGE, "min_bytes %llu: the sweep needs at "
                       "least one float32 (4 bytes)",
                       (unsigned long long)min_bytes);
    if (min_bytes > max_bytes)
        return pf_fail(err, PF_ERR_USAGE, "min_bytes %llu is larger than "
                       "max_bytes %llu", (unsigned long long)min_bytes,
                       (unsigned long long)max_bytes);
    if (factor < 2 && min_bytes < max_bytes)
        return pf_fail(err, PF_ERR_USAGE, "step_factor %d: must be at least 2 "
                       "when min_bytes < max_bytes", factor);
    for (size = min_bytes; size <= max_bytes; size *= (uint64_t)factor) {
        if (*n >= max_n)
            return pf_fail(err, PF_ERR_USAGE, "min_bytes %llu .. max_bytes "
                           "%llu by step_factor %d gives more than %d sizes",
                           (unsigned long long)min_bytes,
                           (unsigned long long)max_bytes, factor, max_n);
        out[(*n)++] = size / sizeof(float) * sizeof(float);
        if (min_bytes == max_bytes || size > max_bytes / (uint64_t)factor)
            break;
    }
    return PF_OK;
}

/* The largest size without -e: 64 MiB, or the floor's size when larger. */
#define DEFAULT_MAX_BYTES (64ull << 20)

uint64_t pf_sweep_max_bytes(const struct pf_config *cfg,
                            const struct pf_floor_rule *rule)
{
    uint64_t max = DEFAULT_MAX_BYTES;

    if (cfg->max_bytes)
        return cfg->max_bytes;
    if (rule && rule->gbps > 0 && rule->from_bytes > max)
        max = rule->from_bytes;
    return max > cfg->min_bytes ? max : cfg->min_bytes;
}

pf_err pf_sweep_plan(const struct pf_config *cfg,
                     const struct pf_floor_rule *rule,
                     struct pf_sweep_plan *plan, char *err)
{
    pf_err rc;

    memset(plan, 0, sizeof(*plan));
    plan->min_bytes = cfg->min_bytes;
    plan->max_bytes = pf_sweep_max_bytes(cfg, rule);
    rc = pf_sweep_sizes(plan->min_bytes, plan->max_bytes, cfg->step_factor,
                        plan->sizes, PF_MAX_ROWS, &plan->nsizes, err);
    if (rc != PF_OK)
        plan->nsizes = 0;
    return rc;
}

void pf_sweep_fill_row(struct pf_row *row, uint64_t bytes, int nranks,
                       double oop_s, double ip_s, long oop_wrong,
                       long ip_wrong)
{
    double f = pf_busbw_factor(nranks);

    memset(row, 0, sizeof(*row));
    row->bytes = bytes;
    row->count = bytes / sizeof(float);
    row->oop_us = oop_s * 1e6;
    row->oop_algbw = oop_s > 0 ? (double)bytes / oop_s / 1e9 : 0;
    row->oop_busbw = row->oop_algbw * f;
    row->oop_wrong = oop_wrong;
    row->ip_us = ip_s * 1e6;
    row->ip_algbw = ip_s > 0 ? (double)bytes / ip_s / 1e9 : 0;
    row->ip_busbw = row->ip_algbw * f;
    row->ip_wrong = ip_wrong;
}

void pf_sweep_summarize(struct pf_coll *c)
{
    double sum = 0;

    c->avg_busbw = c->peak_busbw = 0;
    c->wrong_total = 0;
    for (int i = 0; i < c->nrows; i++) {
        sum += c->rows[i].oop_busbw + c->rows[i].ip_busbw;
        c->wrong_total += c->rows[i].oop_wrong + c->rows[i].ip_wrong;
    }
    if (c->nrows > 0) {
        const struct pf_row *last = &c->rows[c->nrows - 1];
        c->avg_busbw = sum / (2.0 * c->nrows);
        c->peak_busbw = last->oop_busbw > last->ip_busbw ? last->oop_busbw
                                                         : last->ip_busbw;
    }
}

/* Timed all_reduces, then (when checking) one more on fresh data. */
static pf_err measure(struct pf_engine *e, struct pf_boot *b, uint64_t count,
                      bool in_place, int iters, bool check, double *per_op,
                      int64_t *wrong, int64_t deadline, char *err)
{
    double secs = 0, unused;
    long bad = 0;
    pf_err rc;

    if ((rc = e->ops->fill(e, count, in_place, err)) != PF_OK)
        return rc;
    if ((rc = pf_boot_barrier(b, deadline, err)) != PF_OK)
        return rc;
    if ((rc = e->ops->run(e, count, in_place, iters, &secs, deadline,
                          err)) != PF_OK)
        return rc;
    *per_op = secs / iters;
    *wrong = 0;
    if (!check)
        return PF_OK;
    if ((rc = e->ops->fill(e, count, in_place, err)) != PF_OK ||
        (rc = e->ops->run(e, count, in_place, 1, &unused, deadline,
                          err)) != PF_OK ||
        (rc = e->ops->check(e, count, in_place, &bad, err)) != PF_OK)
        return rc;
    *wrong = bad;
    return PF_OK;
}

static pf_err warm_up(struct pf_engine *e, uint64_t count, int warmup,
                      int64_t deadline, char *err)
{
    double unused;
    pf_err rc = e->ops->fill(e, count, false, err);

    if (rc == PF_OK && warmup > 0)
        rc = e->ops->run(e, count, false, warmup, &unused, deadline, err);
    return rc;
}

/* Per-rank times of the largest size, for the straggler re-test. */
static pf_err keep_rank_seconds(struct pf_coll *c,
                                const struct rank_result *all, int world,
                                char *err)
{
    double *secs = calloc((size_t)world, sizeof(*secs));

    if (!secs)
        return pf_fail(err, PF_ERR_NOMEM, "sweep: no memory for %d ranks' "
                       "timings", world);
    for (int r = 0; r < world; r++)
        secs[r] = all[r].oop_s;
    free(c->rank_seconds);
    c->rank_seconds = secs;
    c->nrank_seconds = world;
    return PF_OK;
}

pf_err pf_sweep(struct pf_run *run, struct pf_engine *e, struct pf_boot *b,
                int64_t deadline, char *err)
{
    struct pf_coll *c = &run->coll;
    const struct pf_config *cfg = &run->cfg;
    const uint64_t *sizes = c->sweep.sizes;
    struct rank_result *all;
    const struct pf_floor_rule *stop = &c->judgement.stop;
    int nsizes = c->sweep.nsizes, iters = cfg->iters > 0 ? cfg->iters : 1;
    pf_err rc;

    if (nsizes < 1 || nsizes > PF_MAX_ROWS)
        return pf_fail(err, PF_ERR_USAGE, "sweep: no sizes planned "
                       "(pf_sweep_plan)");
    all = calloc((size_t)b->world, sizeof(*all));
    if (!all)
        return pf_fail(err, PF_ERR_NOMEM, "sweep: out of memory");

    rc = warm_up(e, sizes[nsizes - 1] / sizeof(float), cfg->warmup, deadline,
                 err);
    if (rc == PF_OK)
        rc = warm_up(e, sizes[0] / sizeof(float), cfg->warmup, deadline, err);

    c->nrows = 0;
    c->plan.sweep_cut[0] = '\0';
    pf_progress_begin(&run->progress, "all_reduce sweep", pf_now_ms());
    for (int i = 0; i < nsizes && rc == PF_OK; i++) {
        uint64_t count = sizes[i] / sizeof(float);
        struct rank_result mine = { 0 };
        struct pf_plan_size told = { 0 };
        double oop = 0, ip = 0, slowest = 0;
        long oop_wrong = 0, ip_wrong = 0;

        rc = measure(e, b, count, false, iters, cfg->check, &mine.oop_s,
                     &mine.oop_wrong, deadline, err);
        if (rc == PF_OK)
            rc = measure(e, b, count, true, iters, cfg->check, &mine.ip_s,
                         &mine.ip_wrong, deadline, err);
        mine.sweep_left_s = c->plan.sweep_end
                                ? (double)pf_ms_left(c->plan.sweep_end) / 1000.0
                                : 1e9;
        if (rc == PF_OK)
            rc = pf_boot_allgather(b, &mine, sizeof(mine), all, deadline, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "sweep at %llu bytes",
                          (unsigned long long)sizes[i]);
            break;
        }
        for (int r = 0; r < b->world; r++) {
            oop += all[r].oop_s / b->world;
            ip += all[r].ip_s / b->world;
            oop_wrong += (long)all[r].oop_wrong;
            ip_wrong += (long)all[r].ip_wrong;
            if (all[r].oop_s > slowest)
                slowest = all[r].oop_s;
            if (all[r].ip_s > slowest)
                slowest = all[r].ip_s;
        }
        pf_sweep_fill_row(&c->rows[c->nrows++], sizes[i], e->nranks, oop, ip,
                          oop_wrong, ip_wrong);
        pf_info("all_reduce %llu bytes: busbw %.3f / %.3f GB/s (out of / in "
                "place), %ld wrong", (unsigned long long)sizes[i],
                c->rows[c->nrows - 1].oop_busbw,
                c->rows[c->nrows - 1].ip_busbw, oop_wrong + ip_wrong);
        /* Every rank decides on the same data (rank 0's clock among
         * it), so all stop at the same size. */
        told = (struct pf_plan_size){
            .bytes = sizes[i], .op_s = slowest,
            .ops = 2 * iters + (cfg->check ? 2 : 0),
            .wrong = oop_wrong + ip_wrong,
            .busbw = c->rows[c->nrows - 1].oop_busbw >
                             c->rows[c->nrows - 1].ip_busbw
                         ? c->rows[c->nrows - 1].oop_busbw
                         : c->rows[c->nrows - 1].ip_busbw,
            .floor_gbps = stop->gbps, .floor_from = stop->from_bytes,
            .left_s = all[0].sweep_left_s };
        if (i < nsizes - 1 &&
            pf_plan_sweep_stops(&told, sizes[i + 1], c->plan.sweep_cut,
                                sizeof(c->plan.sweep_cut))) {
            pf_info("sweep: stopped after %llu bytes: %s",
                    (unsigned long long)sizes[i], c->plan.sweep_cut);
            nsizes = i + 1;
        }
        if (i == nsizes - 1)
            rc = keep_rank_seconds(c, all, b->world, err);
        if (pf_progress_due(&run->progress, pf_now_ms()))
            pf_progress_say(&run->progress, pf_now_ms(), "%llu of %llu bytes "
                            "(%d of %d sizes), busbw %.2f GB/s; %.0f s left",
                            (unsigned long long)sizes[i],
                            (unsigned long long)sizes[nsizes - 1], i + 1,
                            nsizes, c->rows[c->nrows - 1].oop_busbw,
                            (double)pf_ms_left(deadline) / 1000.0);
    }
    pf_progress_end(&run->progress);
    free(all);
    pf_sweep_summarize(c);
    return rc;
}
