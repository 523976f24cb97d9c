/* Straggler localisation (straggler.h): the re-test over the bootstrap
 * and the engine's pair op; who is blamed is blame.c's rules. */
#include "straggler.h"
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blame.h"
#include "inside.h"
#include "nics.h"
#include "../judge/links.h"
#include "../util/clock.h"
#include "../util/log.h"

#define PAIR_ITERS 3
#define PAIR_MAX_PHASES 3
/* Nodes from which every run has the pairwise phase: at 2 the ring is the
 * pair, and its two ends cannot be told apart. */
#define PAIR_ALWAYS_NODES 3

enum plan_mode { PLAN_NONE = 0, PLAN_TIMINGS, PLAN_PAIRWISE };

struct plan {                         /* rank 0's decision, broadcast */
    int32_t mode;
    int32_t data;                     /* the ring carried wrong data */
    int32_t below;                    /* the ring missed its floor */
    int32_t rails;                    /* a rail was slow: localise per rail */
    int32_t always;                   /* 3+ nodes: every node's links judged */
    int32_t relative;                 /* slow: below a fraction of the median
                                         link (no floor applies) */
    int32_t iters;
    uint64_t bytes;
    double floor;                     /* what a link must reach: the
                                         larger of the two below, 0 = none */
    double catalog_floor;             /* the 2-node floor, 0 = none */
    double base_floor;                /* fraction x the baseline's median */
    double base_median;
    int32_t base_runs;
    int32_t pad;
    char base_src[128];               /* where rank 0's baseline is from */
    char why[160];                    /* why not pairwise */
};

struct rail_time {                    /* one rank's rail in one phase */
    double seconds, bytes;
};

/* -------------------------------------------------------------- re-test */

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += isfinite(v[i]) && v[i] > 0 ? v[i] : 0;   /* a failed measure counts 0 */
    return n > 0 ? s / n : 0;
}

/* What the links were held to, on every rank from the plan. */
static void note_held(const struct pf_run *run, const struct plan *p,
                      struct pf_base_held *h)
{
    struct pf_baseline one = { 0 };
    struct pf_base_entry e = { 0 };

    /* Rank 0 alone holds the baseline: the plan carries its median and
     * where it came from. */
    snprintf(one.source, sizeof(one.source), "%s", p->base_src);
    snprintf(one.note, sizeof(one.note), "%s", p->base_src);
    if (p->base_runs > 0) {
        snprintf(e.type, sizeof(e.type), "x");
        snprintf(e.engine, sizeof(e.engine), "%s", run->coll.engine);
        snprintf(e.kind, sizeof(e.kind), "pair");
        e.nodes = 2;
        e.bytes = p->bytes;
        e.n = p->base_runs < PF_BASE_K ? p->base_runs : PF_BASE_K;
        for (int i = 0; i < e.n; i++)
            e.v[i] = p->base_median;
        one.e = &e;
        one.n = one.cap = 1;
    }
    pf_base_pair_floor(&one, "x", run->coll.engine, p->bytes,
                       p->catalog_floor, run->cfg.baseline_fraction, h);
}

/* Rank 0: nothing to do, timings only (and why), or the pairwise test. */
static void decide(const struct pf_run *run, const struct pf_engine *e,
                   int world, bool rails_slow, int64_t deadline,
                   struct plan *p)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_judgement *j = &c->judgement;
    double floor = j->floor.gbps;
    uint64_t largest = c->nrows > 0 ? c->rows[c->nrows - 1].bytes : 0;
    double judged = j->busbw_gbps;
    double per_op, need_s, left_s;
    int rounds;

    memset(p, 0, sizeof(*p));
    /* Wrong data is localised whatever the bandwidth, a ring below its
     * floor always; every node's links are judged from 3 nodes on. */
    p->data = c->wrong_total > 0;
    p->below = floor > 0 && c->nrows > 0 && judged >= 0 && judged < floor;
    p->rails = rails_slow && e->ops->rails;
    p->always = c->nnodes >= PAIR_ALWAYS_NODES && world >= 3;
    if (!p->data && !p->below && !p->rails && !p->always)
        return;
    if (world < 2)
        return;
    /* A ring that met its floor with right data on fewer than 3 nodes
     * gets no straggler search, only the per-rail one: PLAN_NONE with the
     * reason when that cannot run. */
    p->mode = p->data || p->below ? PLAN_TIMINGS : PLAN_NONE;
    if (!e->ops->pair) {
        snprintf(p->why, sizeof(p->why), "the %s engine has no pairwise "
                 "test", e->ops->name);
        return;
    }
    if (world == 2) {
        snprintf(p->why, sizeof(p->why), "2 ranks share one link: a "
                 "pairwise test cannot tell which end is %s",
                 p->data ? "at fault" : "slow");
        return;
    }
    /* Links across nodes are held to what the judgement says (judge.h);
     * without a floor (or on one node) relative to the median link when
     * the ring was slow, else by their data only. */
    p->bytes = j->pair_bytes;
    p->floor = j->pair_gbps;
    p->catalog_floor = j->pair_catalog_gbps;
    p->relative = p->below && !j->pair_by_floor && !j->pair_held.applied;
    if (j->pair_held.applied)
        p->base_floor = j->pair_gbps;
    p->base_median = j->pair_held.median_gbps;
    p->base_runs = j->pair_held.runs;
    if (j->other_provider)
        snprintf(p->base_src, sizeof(p->base_src), "provider %s is not EFA",
                 c->fabric.provider);
    else
        snprintf(p->base_src, sizeof(p->base_src), "%s",
                 run->baseline.source[0] ? run->baseline.source
                                         : run->baseline.note);
    /* A ring all_reduce of B bytes moves 2(n-1)/n x B over every link;
     * an exchange moves its bytes each way: scale the measured time of the
     * largest size, then warm-up + iters per round, for the neighbour
     * rounds and one confirmation round, plus a second. */
    per_op = mean(c->rank_seconds, c->rank_seconds ? c->nrank_seconds : 0);
    if (largest > 0)
        per_op *= (double)p->bytes / (double)largest;
    rounds = pf_straggler_nphases(world) + 1;
    per_op *= world / (2.0 * (world - 1));
    left_s = (double)pf_ms_left(deadline) / 1000.0;
    /* Fewer iterations rather than no localisation: one exchange per pair
     * already tells a slow or wrong link (time plan, plan.h). */
    p->iters = pf_plan_pair_iters(left_s, rounds, per_op, PAIR_ITERS);
    if (p->iters == 0) {
        need_s = rounds * 2 * per_op + 1.0;
        snprintf(p->why, sizeof(p->why), "%.1f s left before the deadline, "
                 "the pairwise test needs about %.1f s", left_s, need_s);
        return;
    }
    if (p->iters < PAIR_ITERS)
        pf_info("pairwise: %d iteration(s) a pair instead of %d, to fit "
                "the %.1f s left", p->iters, PAIR_ITERS, left_s);
    p->mode = PLAN_PAIRWISE;
}

/* What one rank measured in one round, gathered from every rank. */
struct pair_result {
    double seconds;
    int64_t wrong;
    int32_t nlocal;                   /* GPUs (ranks) this process paired */
    int32_t pad;
};

/* One link from its two ends' results: the slower end's time, bytes each
 * way times the GPUs both ends paired (NCCL pairs GPU i with GPU i, so
 * the node's links add up, as they do in a 2-node all_reduce). */
static void link_from(struct pf_link *l, int a, int b,
                      const struct pair_result *ra,
                      const struct pair_result *rb, const struct plan *p)
{
    int nl = ra->nlocal < rb->nlocal ? ra->nlocal : rb->nlocal;

    l->a = a;
    l->b = b;
    l->seconds = ra->seconds > rb->seconds ? ra->seconds : rb->seconds;
    l->gbps = l->seconds > 0 ? (double)p->bytes * p->iters * (nl > 0 ? nl : 1)
                                   / l->seconds / 1e9
                             : 0;
    l->wrong = (long)(ra->wrong + rb->wrong);
}

/* Per rail r, the links' bandwidth from every rank's per-phase rail
 * times; the rank whose NIC on that rail has both links slow. */
static pf_err localise_rails(struct pf_run *run, int n, int nrails,
                             const struct rail_time *all, char *err)
{
    struct pf_nics *s = &run->coll.nics;
    size_t stride = (size_t)PAIR_MAX_PHASES * (size_t)nrails, used = 0;
    double *gbps = calloc((size_t)n, sizeof(*gbps));

    if (!gbps)
        return pf_fail(err, PF_ERR_NOMEM, "straggler re-test: no memory for "
                       "%d ranks", n);
    s->rails_localised = true;
    s->rail_note[0] = '\0';
    for (int r = 0; r < nrails && r < s->nrails; r++) {
        char note[320];
        for (int i = 0; i < n; i++) {
            int a = i, bb = (i + 1) % n, ph = pf_straggler_link_phase(n, i);
            const struct rail_time *ta = &all[a * stride + ph * nrails + r];
            const struct rail_time *tb = &all[bb * stride + ph * nrails + r];
            double t = ta->seconds > tb->seconds ? ta->seconds : tb->seconds;
            gbps[i] = t > 0 ? ta->bytes / 2 / t / 1e9 : 0;
        }
        s->rails[r].suspect = pf_straggler_from_links(n, gbps, note,
                                                      sizeof(note));
        pf_info("straggler: rail %d (%s here): %s", r, s->rails[r].nic, note);
        if ((s->rails[r].suspect >= 0 || s->rails[r].slow) &&
            used < sizeof(s->rail_note)) {
            int k = snprintf(s->rail_note + used, sizeof(s->rail_note) - used,
                             "%srail %d: %s", used ? "; " : "", r, note);
            if (k > 0)
                used += (size_t)k;
        }
    }
    free(gbps);
    return PF_OK;
}

/* Each rail's time and bytes in each phase, gathered from every rank. */
static pf_err gather_rails(struct pf_run *run, struct pf_boot *b, int nrails,
                           const struct rail_time *mine, int64_t deadline,
                           char *err)
{
    size_t len = (size_t)PAIR_MAX_PHASES * (size_t)nrails * sizeof(*mine);
    struct rail_time *all = calloc((size_t)b->world, len);
    pf_err rc;

    if (!all)
        return pf_fail(err, PF_ERR_NOMEM, "straggler re-test: no memory for "
                       "%d ranks' rails", b->world);
    rc = pf_boot_allgather(b, mine, len, all, deadline, err);
    if (rc == PF_OK)
        rc = localise_rails(run, b->world, nrails, all, err);
    else
        pf_err_prefix(err, "pairwise re-test per rail");
    free(all);
    return rc;
}

/* One round of exchanges. Every rank calls it (the NCCL engine shares its
 * pair ids with all of them); a rank whose peer is -1 sits it out. With
 * rails, each rail's time and bytes of the round go to rail_out. */
static pf_err one_round(struct pf_run *run, struct pf_engine *e,
                        struct pf_boot *b, const struct plan *p, int peer,
                        int round, bool watch, int nrails,
                        struct pair_result *out, struct rail_time *rail_out,
                        int64_t deadline, char *err)
{
    struct pf_rail_use before[PF_MAX_EFA], after[PF_MAX_EFA];
    long w = 0;
    pf_err rc;

    out->nlocal = e->local_ranks > 0 ? e->local_ranks : 1;
    /* Pairs of a round start together and run alone. */
    rc = pf_boot_barrier(b, deadline, err);
    if (rc == PF_OK && e->ops->pair_setup)
        rc = e->ops->pair_setup(e, peer, round, deadline, err);
    if (rc == PF_OK && peer >= 0) {
        struct pf_nic_watch nw;

        if (nrails > 0)
            pf_rails_read(e, before);
        if (watch)
            pf_nics_begin(run, &nw);
        rc = e->ops->pair(e, peer, round, p->bytes / sizeof(float), p->iters,
                          &out->seconds, &w, deadline, err);
        if (watch)
            pf_nics_end(run, &nw, "pairwise", peer);
        if (nrails > 0 && pf_rails_read(e, after) == nrails)
            for (int r = 0; r < nrails; r++) {
                rail_out[r].seconds = after[r].seconds - before[r].seconds;
                rail_out[r].bytes = (double)(after[r].bytes - before[r].bytes);
            }
    }
    out->wrong = w;
    return rc;
}

/* Rank 0 plans the confirmation rounds from the ring links' verdicts
 * (when time is left: each takes about as long as a neighbour round) and
 * every rank gets the same table: plan[0] rounds, then the partners. */
static pf_err confirm_plan(struct pf_boot *b, const unsigned *ring_bad,
                           double round_s, int64_t deadline, int32_t *plan,
                           char *why, size_t why_len, char *err)
{
    int n = b->world;
    size_t len = (1 + (size_t)n * PF_PAIR_CONFIRM_ROUNDS) * sizeof(*plan);
    pf_err rc;

    memset(plan, 0, len);
    if (b->rank == 0) {
        int *partner = calloc((size_t)n * PF_PAIR_CONFIRM_ROUNDS,
                              sizeof(*partner));
        int rounds;
        double left_s = (double)pf_ms_left(deadline) / 1000.0;

        if (!partner)
            return pf_fail(err, PF_ERR_NOMEM, "pairwise test: out of memory");
        rounds = pf_pairs_confirm_plan(n, ring_bad, PF_PAIR_CONFIRM_ROUNDS,
                                       partner);
        if (rounds > 0 && left_s < rounds * round_s + 1.0) {
            snprintf(why, why_len, "%.1f s left, %d confirmation round(s) "
                     "need about %.1f s", left_s, rounds, rounds * round_s);
            rounds = 0;
        }
        plan[0] = rounds;
        for (int i = 0; i < n * PF_PAIR_CONFIRM_ROUNDS; i++)
            plan[1 + i] = partner[i];
        free(partner);
    }
    rc = pf_boot_bcast(b, plan, len, 0, deadline, err);
    if (rc == PF_OK && (plan[0] < 0 || plan[0] > PF_PAIR_CONFIRM_ROUNDS))
        rc = pf_fail(err, PF_ERR_PROTOCOL, "pairwise test: rank 0 sent %d "
                     "confirmation rounds", plan[0]);
    for (int i = 0; rc == PF_OK && i < n * PF_PAIR_CONFIRM_ROUNDS; i++)
        if (plan[1 + i] < -1 || plan[1 + i] >= n || plan[1 + i] == i % n)
            rc = pf_fail(err, PF_ERR_PROTOCOL, "pairwise test: rank 0 sent "
                         "a bad partner table");
    return rc;
}

/* The culprits into s, with their kinds. */
static pf_err keep_culprits(struct pf_run *run, int n, const unsigned *flags,
                            int count, char *err)
{
    struct pf_straggler *s = &run->coll.strag;
    unsigned kinds = 0;

    free(s->culprits);
    free(s->culprit_bad);
    s->nculprits = 0;
    s->culprits = calloc((size_t)(count ? count : 1), sizeof(*s->culprits));
    s->culprit_bad = calloc((size_t)(count ? count : 1),
                            sizeof(*s->culprit_bad));
    if (!s->culprits || !s->culprit_bad)
        return pf_fail(err, PF_ERR_NOMEM, "pairwise test: out of memory");
    run->coll.slow_rank = -1;
    for (int r = 0; r < n && s->nculprits < count; r++) {
        if (!flags[r])
            continue;
        s->culprits[s->nculprits] = r;
        s->culprit_bad[s->nculprits++] = flags[r];
        kinds |= flags[r];
        if ((flags[r] & PF_LINK_SLOW) && run->coll.slow_rank < 0)
            run->coll.slow_rank = r;
    }
    kinds &= PF_LINK_SLOW | PF_LINK_DATA;
    if (kinds)
        snprintf(s->kind, sizeof(s->kind), "%s",
                 kinds == (PF_LINK_SLOW | PF_LINK_DATA) ? "slow+data"
                 : kinds & PF_LINK_DATA ? "data" : "slow");
    return PF_OK;
}

static pf_err pairwise(struct pf_run *run, struct pf_engine *e,
                       struct pf_boot *b, const struct plan *p,
                       int64_t deadline, char *err)
{
    enum { ROUNDS = PAIR_MAX_PHASES + PF_PAIR_CONFIRM_ROUNDS };
    struct pf_straggler *s = &run->coll.strag;
    struct pair_result mine[ROUNDS], *all = NULL;
    struct pf_rail_use probe[PF_MAX_EFA];
    struct rail_time *rmine = NULL;
    struct pf_confirm *conf = NULL;
    double *gbps = NULL, t0 = pf_now_s(), slow_below = 0;
    long *wrong = NULL;
    unsigned *ring_bad = NULL, *culprit = NULL;
    int32_t *plan = NULL;
    int n = b->world, nph = pf_straggler_nphases(n), nconf = 0, count;
    int nrails = p->rails ? pf_rails_read(e, probe) : 0;
    char why[160] = "";
    pf_err rc = PF_OK;

    memset(mine, 0, sizeof(mine));
    if (nrails > 0 && !(rmine = calloc((size_t)PAIR_MAX_PHASES *
                                       (size_t)nrails, sizeof(*rmine))))
        return pf_fail(err, PF_ERR_NOMEM, "straggler re-test: out of memory");
    pf_progress_begin(&run->progress, "pairwise test", pf_now_ms());
    for (int ph = 0; ph < nph && rc == PF_OK; ph++) {
        if (pf_progress_due(&run->progress, pf_now_ms()))
            pf_progress_say(&run->progress, pf_now_ms(), "neighbour round %d "
                            "of %d (%d ring links); %.0f s left", ph + 1, nph,
                            n, (double)pf_ms_left(deadline) / 1000.0);
        rc = one_round(run, e, b, p, pf_straggler_peer(b->rank, n, ph), ph,
                       true, nrails, &mine[ph],
                       rmine ? &rmine[ph * nrails] : NULL, deadline, err);
    }
    all = calloc((size_t)n * ROUNDS, sizeof(*all));
    gbps = calloc((size_t)n, sizeof(*gbps));
    wrong = calloc((size_t)n, sizeof(*wrong));
    ring_bad = calloc((size_t)n, sizeof(*ring_bad));
    culprit = calloc((size_t)n, sizeof(*culprit));
    conf = calloc((size_t)n * PF_PAIR_CONFIRM_ROUNDS, sizeof(*conf));
    plan = calloc(1 + (size_t)n * PF_PAIR_CONFIRM_ROUNDS, sizeof(*plan));
    free(s->links);
    s->nlinks = 0;
    s->links = calloc((size_t)n * (1 + PF_PAIR_CONFIRM_ROUNDS),
                      sizeof(*s->links));
    if (!all || !gbps || !wrong || !ring_bad || !culprit || !conf || !plan ||
        !s->links) {
        rc = pf_fail(err, PF_ERR_NOMEM, "straggler re-test: no memory for "
                     "%d ranks", n);
        goto out;
    }
    if (rc == PF_OK)
        rc = pf_boot_allgather(b, mine, sizeof(mine), all, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "pairwise test of ring neighbours");
        goto out;
    }
    if (nrails > 0 &&
        (rc = gather_rails(run, b, nrails, rmine, deadline, err)) != PF_OK)
        goto out;
    if (!p->data && !p->below && !p->always)
        goto out;                     /* the ring itself was fine */
    for (int i = 0; i < n; i++) {
        int a = i, bb = (i + 1) % n, ph = pf_straggler_link_phase(n, i);
        link_from(&s->links[i], a, bb, &all[a * ROUNDS + ph],
                  &all[bb * ROUNDS + ph], p);
        gbps[i] = s->links[i].gbps;
        wrong[i] = s->links[i].wrong;
    }
    slow_below = p->floor > 0 ? p->floor
                 : !p->relative ? 0
                 : run->coll.nnodes == 1 ? pf_inside_relative_floor(n, gbps)
                 : pf_links_relative_floor(n, gbps);
    for (int i = 0; i < n; i++) {
        struct pf_link *l = &s->links[i];
        l->bad = ring_bad[i] = pf_link_judge(l->gbps, l->wrong, slow_below);
        pf_info("pairwise: link %d-%d %.3f GB/s, %ld wrong%s%s (%llu bytes "
                "x %d each way)", l->a, l->b, l->gbps, l->wrong,
                l->bad & PF_LINK_SLOW ? ", slow" : "",
                l->bad & PF_LINK_DATA ? ", wrong data" : "",
                (unsigned long long)p->bytes, p->iters);
    }
    s->nlinks = n;
    /* Suspects again, each with a node proven good. */
    rc = confirm_plan(b, ring_bad, (pf_now_s() - t0) / (nph ? nph : 1),
                      deadline, plan, why, sizeof(why), err);
    for (int k = 0; rc == PF_OK && k < plan[0]; k++) {
        if (pf_progress_due(&run->progress, pf_now_ms()))
            pf_progress_say(&run->progress, pf_now_ms(), "confirmation round "
                            "%d of %d; %.0f s left", k + 1, plan[0],
                            (double)pf_ms_left(deadline) / 1000.0);
        rc = one_round(run, e, b, p, plan[1 + k * n + b->rank], nph + k,
                       false, 0, &mine[PAIR_MAX_PHASES + k], NULL, deadline,
                       err);
    }
    if (rc == PF_OK && plan[0] > 0)
        rc = pf_boot_allgather(b, mine, sizeof(mine), all, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "pairwise test: confirmation");
        goto out;
    }
    for (int k = 0; k < plan[0]; k++)
        for (int r = 0; r < n; r++) {
            int g = plan[1 + k * n + r], ph = PAIR_MAX_PHASES + k;
            struct pf_link *l = &s->links[s->nlinks];
            if (g < 0 || !(ring_bad[r] || ring_bad[(r + n - 1) % n]))
                continue;             /* r is not the suspect of its pair */
            link_from(l, r, g, &all[r * ROUNDS + ph], &all[g * ROUNDS + ph],
                      p);
            l->bad = pf_link_judge(l->gbps, l->wrong, slow_below);
            l->confirm = true;
            conf[nconf++] = (struct pf_confirm){ r, g, l->bad, l->gbps,
                                                 l->wrong };
            s->nlinks++;
            pf_info("pairwise: suspect %d with rank %d (proven good) %.3f "
                    "GB/s, %ld wrong%s", r, g, l->gbps, l->wrong,
                    l->bad ? ": bad again" : ": good");
        }
    snprintf(s->method, sizeof(s->method), "pairwise");
    s->pair_floor_gbps = slow_below;
    s->relative = p->relative;
    s->pair_rounds = nph + plan[0];
    count = pf_pairs_blame(n, gbps, wrong, ring_bad, conf, nconf, slow_below,
                           culprit, s->note, sizeof(s->note));
    /* One node of 3 ranks: none has two good links to confirm against,
     * but every link is inside the node, so a good one clears both ends
     * (from 4 ranks on the confirmation decides, as across nodes). */
    if (count == 0 && nconf == 0 && n == 3 && run->coll.nnodes == 1)
        count = pf_inside_ring_blame(n, gbps, wrong, ring_bad, culprit,
                                     s->note, sizeof(s->note));
    pf_pairs_split_degraded(n, conf, nconf, p->catalog_floor, p->base_floor,
                            culprit);
    if (count == 0 && why[0]) {
        size_t used = strlen(s->note);
        snprintf(s->note + used, sizeof(s->note) - used, " (not confirmed: "
                 "%s)", why);
    }
    rc = keep_culprits(run, n, culprit, count, err);
out:
    pf_progress_end(&run->progress);
    s->pair_seconds = pf_now_s() - t0;
    free(all);
    free(gbps);
    free(wrong);
    free(ring_bad);
    free(culprit);
    free(conf);
    free(plan);
    free(rmine);
    return rc;
}

pf_err pf_straggler_retest(struct pf_run *run, struct pf_engine *e,
                           struct pf_boot *b, int64_t deadline, char *err)
{
    struct pf_straggler *s = &run->coll.strag;
    struct plan p;
    char times[320];
    int n = b->world;
    int32_t slow = pf_rails_any_slow(&run->coll.nics), *slows;
    bool any_slow = false;
    pf_err rc;

    s->self = b->rank;
    s->nprocs = n;
    /* Whether a rail was slow anywhere: every rank's rail r waits for the
     * slowest rail r of the ring, but each rank says so for itself. */
    slows = calloc((size_t)n, sizeof(*slows));
    if (!slows)
        return pf_fail(err, PF_ERR_NOMEM, "straggler re-test: out of memory");
    rc = pf_boot_allgather(b, &slow, sizeof(slow), slows, deadline, err);
    for (int r = 0; r < n && rc == PF_OK; r++)
        any_slow = any_slow || slows[r];
    free(slows);
    if (rc != PF_OK) {
        pf_err_prefix(err, "straggler re-test: rail timings");
        return rc;
    }
    memset(&p, 0, sizeof(p));         /* every rank sends its copy */
    if (b->rank == 0)
        decide(run, e, b->world, any_slow, deadline, &p);
    rc = pf_boot_bcast(b, &p, sizeof(p), 0, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "straggler re-test plan");
        return rc;
    }
    p.why[sizeof(p.why) - 1] = '\0';
    p.base_src[sizeof(p.base_src) - 1] = '\0';
    if (p.rails && p.mode != PLAN_PAIRWISE)
        snprintf(run->coll.nics.rail_note, sizeof(run->coll.nics.rail_note),
                 "not localised per rail: %s", p.why);
    if (p.mode == PLAN_NONE) {
        if (p.always && p.why[0])
            snprintf(s->note, sizeof(s->note), "no pairwise test: %s",
                     p.why);
        return PF_OK;
    }
    s->floor_gbps = run->coll.judgement.floor.gbps;
    snprintf(s->kind, sizeof(s->kind), "%s", p.data ? "data" : "slow");
    if (p.mode == PLAN_TIMINGS) {
        int suspect = pf_straggler_from_times(
            run->coll.rank_seconds ? run->coll.nrank_seconds : 0,
            run->coll.rank_seconds, times, sizeof(times));
        snprintf(s->method, sizeof(s->method), "timings");
        snprintf(s->note, sizeof(s->note), "%s; timings compared instead: "
                 "%s%s", p.why, times,
                 suspect >= 0 ? " (a suspect, not proof: no node is singled "
                                "out)" : "");
        pf_info("straggler: %s", s->note);
        return PF_OK;
    }
    if (p.bytes == 0 || p.iters <= 0 || p.iters > 64 || !(p.floor >= 0) ||
        !(p.catalog_floor >= 0) || !(p.base_floor >= 0) ||
        !(p.base_median >= 0))
        return pf_fail(err, PF_ERR_PROTOCOL, "straggler re-test: rank 0 "
                       "sent a bad plan (%llu bytes x %d)",
                       (unsigned long long)p.bytes, p.iters);
    s->kind[0] = '\0';
    if (!p.data && !p.below && !p.always) {
        s->floor_gbps = 0;
        pf_info("straggler: a rail was slow in the ring: pairwise re-test of "
                "%d ring links per rail", b->world);
        return pairwise(run, e, b, &p, deadline, err);
    }
    s->pair_bytes = p.bytes;
    s->pair_iters = p.iters;
    note_held(run, &p, &s->held);
    if (p.data) {
        pf_info("straggler: %ld wrong elements: pairwise re-test of %d ring "
                "links with the data checked", run->coll.wrong_total,
                b->world);
    } else if (p.below) {
        pf_info("straggler: busbw %.3f GB/s below the floor %.3f GB/s: "
                "pairwise re-test of %d ring links",
                run->coll.judgement.busbw_gbps, s->floor_gbps, b->world);
    } else {
        pf_info("pairwise: each of %d nodes judged by its own links: %d ring "
                "links tested against %s", run->coll.nnodes, b->world,
                p.base_floor > 0 ? "the fleet baseline"
                : p.floor > 0 ? "the 2-node floor" : "their data only");
    }
    rc = pairwise(run, e, b, &p, deadline, err);
    if (rc == PF_OK)
        pf_info("pairwise: %s (%.2f s, %d rounds)", s->note, s->pair_seconds,
                s->pair_rounds);
    return rc;
}
