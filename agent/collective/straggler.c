/* Straggler localisation (straggler.h): the decisions, then the re-test
 * over the bootstrap and the engine's pair op. */
#include "straggler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nics.h"
#include "../config/catalog.h"
#include "../util/clock.h"
#include "../util/log.h"

/* Bytes each way per exchange: large enough to be bandwidth-bound, small
 * enough that a slow link still finishes well inside the deadline. */
#define PAIR_MAX_BYTES (4u << 20)
#define PAIR_ITERS 3
#define PAIR_MAX_PHASES 3

enum plan_mode { PLAN_NONE = 0, PLAN_TIMINGS, PLAN_PAIRWISE };

struct plan {                         /* rank 0's decision, broadcast */
    int32_t mode;
    int32_t data;                     /* localise wrong data, not slowness */
    int32_t below;                    /* the ring missed its floor */
    int32_t rails;                    /* a rail was slow: localise per rail */
    int32_t iters;
    uint64_t bytes;
    char why[160];                    /* why not pairwise */
};

struct rail_time {                    /* one rank's rail in one phase */
    double seconds, bytes;
};

double pf_coll_floor(const struct pf_run *run, struct pf_floor_rule *rule)
{
    const struct pf_coll *c = &run->coll;

    pf_floor_for(&run->cfg, run->instance, c->engine,
                 c->fabric.provider_is_fallback ? c->fabric.provider : NULL,
                 c->nnodes, c->nics.nrails, rule);
    return rule->gbps;
}

double pf_coll_judged_busbw(const struct pf_coll *c,
                            const struct pf_floor_rule *rule,
                            uint64_t *at_bytes)
{
    int nrows = c->nrows < PF_MAX_ROWS ? c->nrows : PF_MAX_ROWS;
    double best = -1;

    *at_bytes = 0;
    if (nrows > 0 && !rule->from_bytes) {
        /* No size named: the best of the largest size, as always. */
        *at_bytes = c->rows[nrows - 1].bytes;
        return c->peak_busbw;
    }
    for (int i = 0; i < nrows; i++) {
        const struct pf_row *r = &c->rows[i];
        double bw = r->oop_busbw > r->ip_busbw ? r->oop_busbw : r->ip_busbw;
        if (r->bytes >= rule->from_bytes && bw > best) {
            best = bw;
            *at_bytes = r->bytes;
        }
    }
    return best;
}

/* ------------------------------------------------------------ decisions */

int pf_straggler_nphases(int n)
{
    if (n < 2)
        return 0;
    if (n == 2)
        return 1;
    return n % 2 ? 3 : 2;
}

int pf_straggler_link_phase(int n, int i)
{
    /* Odd n: the closing link (n-1, 0) shares rank 0 with link 0 and rank
     * n-1 with link n-2, so it gets a phase of its own. */
    if (n % 2 && n > 2 && i == n - 1)
        return 2;
    return i % 2;
}

int pf_straggler_peer(int rank, int n, int phase)
{
    int left;

    if (n < 2 || rank < 0 || rank >= n)
        return -1;
    if (n == 2)
        return phase == 0 ? 1 - rank : -1;
    if (pf_straggler_link_phase(n, rank) == phase)
        return (rank + 1) % n;
    left = (rank + n - 1) % n;
    if (pf_straggler_link_phase(n, left) == phase)
        return left;
    return -1;
}

static double good(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

int pf_straggler_from_links(int n, const double *link_gbps, char *note,
                            size_t len)
{
    double *score, lo_link, hi_link;
    int best = 0, lo_i = 0;

    if (n < 2) {
        snprintf(note, len, "%d rank(s): no link to test", n);
        return -1;
    }
    if (n == 2) {
        snprintf(note, len, "2 ranks share one link (%.3f GB/s): a pairwise "
                 "test cannot tell which end is slow", good(link_gbps[0]));
        return -1;
    }
    score = calloc((size_t)n, sizeof(*score));
    if (!score) {
        snprintf(note, len, "pairwise: no memory to score %d ranks", n);
        return -1;
    }
    /* A rank's score is its better link: only the straggler has no good
     * link, while a healthy neighbour of it still has one. */
    for (int r = 0; r < n; r++) {
        double l = good(link_gbps[(r + n - 1) % n]), m = good(link_gbps[r]);
        score[r] = l > m ? l : m;
        if (score[r] < score[best])
            best = r;
    }
    double second = -1;
    for (int r = 0; r < n; r++)
        if (r != best && (second < 0 || score[r] < second))
            second = score[r];
    if (score[best] < PF_STRAG_LINK_RATIO * second) {
        int left = (best + n - 1) % n, right = (best + 1) % n;
        snprintf(note, len, "pairwise: rank %d's links are both slow (%d-%d "
                 "%.3f GB/s, %d-%d %.3f GB/s) while every other rank has a "
                 "link of at least %.3f GB/s", best, left, best,
                 good(link_gbps[left]), best, right, good(link_gbps[best]),
                 second);
        free(score);
        return best;
    }
    free(score);
    lo_link = hi_link = good(link_gbps[0]);
    for (int i = 1; i < n; i++) {
        double g = good(link_gbps[i]);
        if (g < lo_link) {
            lo_link = g;
            lo_i = i;
        }
        if (g > hi_link)
            hi_link = g;
    }
    if (lo_link < PF_STRAG_LINK_RATIO * hi_link)
        snprintf(note, len, "pairwise: the slow links do not share one rank "
                 "(slowest %d-%d %.3f GB/s, best %.3f GB/s): a slow link or "
                 "several slow ranks, not one straggler", lo_i,
                 (lo_i + 1) % n, lo_link, hi_link);
    else
        snprintf(note, len, "pairwise: every link alike (%.3f..%.3f GB/s): "
                 "no single rank is slow, the fabric as a whole is", lo_link,
                 hi_link);
    return -1;
}

/* "2, 5" into out. */
static void rank_list(const bool *culprit, int n, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int r = 0; r < n && used + 16 < len; r++)
        if (culprit[r])
            used += (size_t)snprintf(out + used, len - used, "%s%d",
                                     used ? ", " : "", r);
}

int pf_straggler_blame(int n, const double *link_gbps, const long *link_wrong,
                       bool *culprit, char *note, size_t len)
{
    bool data = false, *bad;
    double best = 0;
    int count = 0, stray = -1;
    char who[256];

    for (int r = 0; r < n; r++)
        culprit[r] = false;
    if (n < 2) {
        snprintf(note, len, "%d rank(s): no link to test", n);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        data |= link_wrong && link_wrong[i] > 0;
        if (good(link_gbps[i]) > best)
            best = good(link_gbps[i]);
    }
    if (n == 2) {
        snprintf(note, len, "2 ranks share one link (%.3f GB/s%s): a pairwise "
                 "test cannot tell which end is at fault", good(link_gbps[0]),
                 data ? ", wrong data" : "");
        return 0;
    }
    if (!data) {
        /* The classic one straggler keeps its words. */
        int one = pf_straggler_from_links(n, link_gbps, note, len);
        if (one >= 0) {
            culprit[one] = true;
            return 1;
        }
    }
    bad = calloc((size_t)n, sizeof(*bad));
    if (!bad) {
        snprintf(note, len, "pairwise: out of memory");
        return 0;
    }
    /* A bad link carried wrong data or, when none did, ran below
     * PF_STRAG_LINK_RATIO of the best link. */
    for (int i = 0; i < n; i++)
        bad[i] = data ? link_wrong[i] > 0
                      : good(link_gbps[i]) < PF_STRAG_LINK_RATIO * best;
    for (int r = 0; r < n; r++) {
        culprit[r] = bad[r] && bad[(r + n - 1) % n];
        count += culprit[r];
    }
    for (int i = 0; i < n; i++)
        if (bad[i] && !culprit[i] && !culprit[(i + 1) % n])
            stray = i;
    free(bad);
    /* Blame only what the links prove: every bad link ends at a culprit,
     * and the culprits are a minority (else the fabric as a whole is). */
    if (count == 0 || stray >= 0 || 2 * count > n) {
        for (int r = 0; r < n; r++)
            culprit[r] = false;
        if (data)
            snprintf(note, len, "pairwise: the links that carried wrong data "
                     "do not single out a minority of ranks: no node is "
                     "blamed");
        else if (len && note[0] == '\0')
            snprintf(note, len, "pairwise: no rank singled out");
        return 0;
    }
    rank_list(culprit, n, who, sizeof(who));
    snprintf(note, len, "pairwise: rank%s %s %s both links %s while every "
             "other rank has a good one", count > 1 ? "s" : "", who,
             count > 1 ? "have" : "has", data ? "carry wrong data" : "slow");
    return count;
}

int pf_straggler_from_times(int n, const double *secs, char *note,
                            size_t len)
{
    int worst = 0;
    double next = -1;

    if (n < 2) {
        snprintf(note, len, "%d rank(s): no timings to compare", n);
        return -1;
    }
    for (int r = 1; r < n; r++)
        if (good(secs[r]) > good(secs[worst]))
            worst = r;
    for (int r = 0; r < n; r++)
        if (r != worst && good(secs[r]) > next)
            next = good(secs[r]);
    if (good(secs[worst]) > PF_STRAG_TIME_RATIO * next) {
        snprintf(note, len, "per-rank timings: rank %d took %.4f s per "
                 "all_reduce, the next slowest %.4f s", worst,
                 good(secs[worst]), next);
        return worst;
    }
    double fastest = good(secs[0]);
    for (int r = 1; r < n; r++)
        if (good(secs[r]) < fastest)
            fastest = good(secs[r]);
    snprintf(note, len, "per-rank timings %.4f..%.4f s per all_reduce: no "
             "rank stands out (in a ring every rank waits for the slowest)",
             fastest, good(secs[worst]));
    return -1;
}

/* -------------------------------------------------------------- re-test */

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += good(v[i]);
    return n > 0 ? s / n : 0;
}

/* Rank 0: nothing to do, timings only (and why), or the pairwise test. */
static void decide(const struct pf_run *run, const struct pf_engine *e,
                   int world, bool rails_slow, int64_t deadline,
                   struct plan *p)
{
    const struct pf_coll *c = &run->coll;
    struct pf_floor_rule rule;
    double floor = pf_coll_floor(run, &rule);
    uint64_t largest = c->nrows > 0 ? c->rows[c->nrows - 1].bytes : 0;
    uint64_t at_bytes;
    double judged = pf_coll_judged_busbw(c, &rule, &at_bytes);
    double per_op, need_s, left_s;

    memset(p, 0, sizeof(*p));
    /* Wrong data is localised whatever the bandwidth; otherwise nothing to
     * localise when nothing was judged or the floor was met. */
    p->data = c->wrong_total > 0;
    p->below = floor > 0 && c->nrows > 0 && judged >= 0 && judged < floor;
    p->rails = rails_slow && e->ops->rails;
    if (!p->data && !p->below && !p->rails)
        return;
    if (world < 2)
        return;
    /* A ring that met its floor with right data gets no straggler search,
     * only the per-rail one: PLAN_NONE with the reason when that cannot
     * run. */
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
    /* A ring all_reduce of B bytes moves 2(n-1)/n x B over every link;
     * an exchange moves B (at most that size) each way: scale the
     * measured time, then warm-up + iters per phase, plus a second. */
    per_op = mean(c->rank_seconds, c->rank_seconds ? c->nrank_seconds : 0);
    need_s = pf_straggler_nphases(world) * (PAIR_ITERS + 1) * per_op *
             world / (2.0 * (world - 1)) + 1.0;
    left_s = (double)pf_ms_left(deadline) / 1000.0;
    if (left_s < need_s) {
        snprintf(p->why, sizeof(p->why), "%.1f s left before the deadline, "
                 "the pairwise re-test needs about %.1f s", left_s, need_s);
        return;
    }
    p->mode = PLAN_PAIRWISE;
    p->iters = PAIR_ITERS;
    p->bytes = largest < PAIR_MAX_BYTES ? largest : PAIR_MAX_BYTES;
    p->bytes = p->bytes / sizeof(float) * sizeof(float);
    if (p->bytes == 0)
        p->bytes = sizeof(float);
}

/* What one rank measured in one phase, gathered from every rank. */
struct pair_result {
    double seconds;
    int64_t wrong;
};

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

static pf_err pairwise(struct pf_run *run, struct pf_engine *e,
                       struct pf_boot *b, const struct plan *p,
                       int64_t deadline, char *err)
{
    struct pf_straggler *s = &run->coll.strag;
    struct pair_result mine[PAIR_MAX_PHASES], *all;
    double *gbps;
    long *wrong;
    bool *culprit;
    struct pf_rail_use before[PF_MAX_EFA], after[PF_MAX_EFA];
    struct rail_time *rmine = NULL;
    int n = b->world, nph = pf_straggler_nphases(n);
    int nrails = p->rails ? pf_rails_read(e, before) : 0;
    pf_err rc = PF_OK;

    memset(mine, 0, sizeof(mine));
    if (nrails > 0 && !(rmine = calloc((size_t)PAIR_MAX_PHASES *
                                       (size_t)nrails, sizeof(*rmine))))
        return pf_fail(err, PF_ERR_NOMEM, "straggler re-test: out of memory");
    pf_progress_begin(&run->progress, "pairwise re-test", pf_now_ms());
    for (int ph = 0; ph < nph && rc == PF_OK; ph++) {
        int peer = pf_straggler_peer(b->rank, n, ph);
        long w = 0;
        if (pf_progress_due(&run->progress, pf_now_ms()))
            pf_progress_say(&run->progress, pf_now_ms(), "phase %d of %d "
                            "(%d ring links); %.0f s left", ph + 1, nph, n,
                            (double)pf_ms_left(deadline) / 1000.0);
        /* Pairs of a phase start together and run alone. */
        rc = pf_boot_barrier(b, deadline, err);
        if (rc == PF_OK && e->ops->pair_setup)
            rc = e->ops->pair_setup(e, peer, ph, deadline, err);
        if (rc == PF_OK && peer >= 0) {
            struct pf_nic_watch watch;

            if (nrails > 0)
                pf_rails_read(e, before);
            pf_nics_begin(run, &watch);
            rc = e->ops->pair(e, peer, ph, p->bytes / sizeof(float), p->iters,
                              &mine[ph].seconds, &w, deadline, err);
            pf_nics_end(run, &watch, "pairwise", peer);
            if (nrails > 0 && pf_rails_read(e, after) == nrails)
                for (int r = 0; r < nrails; r++) {
                    struct rail_time *t = &rmine[ph * nrails + r];
                    t->seconds = after[r].seconds - before[r].seconds;
                    t->bytes = (double)(after[r].bytes - before[r].bytes);
                }
        }
        mine[ph].wrong = w;
    }
    pf_progress_end(&run->progress);
    all = calloc((size_t)n, sizeof(mine));
    gbps = calloc((size_t)n, sizeof(*gbps));
    wrong = calloc((size_t)n, sizeof(*wrong));
    culprit = calloc((size_t)n, sizeof(*culprit));
    free(s->links);
    s->nlinks = 0;
    s->links = calloc((size_t)n, sizeof(*s->links));
    if (!all || !gbps || !wrong || !culprit || !s->links) {
        rc = pf_fail(err, PF_ERR_NOMEM, "straggler re-test: no memory for "
                     "%d ranks", n);
        goto out;
    }
    if (rc == PF_OK)
        rc = pf_boot_allgather(b, mine, sizeof(mine), all, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "pairwise re-test of ring neighbours");
        goto out;
    }
    if (nrails > 0 &&
        (rc = gather_rails(run, b, nrails, rmine, deadline, err)) != PF_OK)
        goto out;
    if (!p->data && !p->below)
        goto out;                     /* the ring itself was fine */
    s->nlinks = n;
    for (int i = 0; i < n; i++) {
        int a = i, bb = (i + 1) % n, ph = pf_straggler_link_phase(n, i);
        const struct pair_result *ra = &all[a * PAIR_MAX_PHASES + ph];
        const struct pair_result *rb = &all[bb * PAIR_MAX_PHASES + ph];
        struct pf_link *l = &s->links[i];

        l->a = a;
        l->b = bb;
        l->seconds = ra->seconds > rb->seconds ? ra->seconds : rb->seconds;
        l->gbps = l->seconds > 0
                      ? (double)p->bytes * p->iters / l->seconds / 1e9 : 0;
        l->wrong = (long)(ra->wrong + rb->wrong);
        gbps[i] = l->gbps;
        wrong[i] = l->wrong;
        pf_info("straggler: link %d-%d %.3f GB/s, %ld wrong (%llu bytes x %d "
                "each way)", a, bb, l->gbps, l->wrong,
                (unsigned long long)p->bytes, p->iters);
    }
    snprintf(s->kind, sizeof(s->kind), "%s", p->data ? "data" : "slow");
    s->nculprits = pf_straggler_blame(n, gbps, p->data ? wrong : NULL,
                                      culprit, s->note, sizeof(s->note));
    free(s->culprits);
    s->culprits = calloc((size_t)(s->nculprits ? s->nculprits : 1),
                         sizeof(*s->culprits));
    if (!s->culprits) {
        s->nculprits = 0;
        rc = pf_fail(err, PF_ERR_NOMEM, "straggler re-test: out of memory");
        goto out;
    }
    for (int r = 0, k = 0; r < n; r++)
        if (culprit[r])
            s->culprits[k++] = r;
    run->coll.slow_rank = !p->data && s->nculprits > 0 ? s->culprits[0] : -1;
out:
    free(all);
    free(gbps);
    free(wrong);
    free(culprit);
    free(rmine);
    return rc;
}

pf_err pf_straggler_retest(struct pf_run *run, struct pf_engine *e,
                           struct pf_boot *b, int64_t deadline, char *err)
{
    struct pf_straggler *s = &run->coll.strag;
    struct plan p;
    struct pf_floor_rule rule;
    char times[320];
    int n = b->world;
    int32_t slow = pf_rails_any_slow(run), *slows;
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
    if (p.rails && p.mode != PLAN_PAIRWISE)
        snprintf(run->coll.nics.rail_note, sizeof(run->coll.nics.rail_note),
                 "not localised per rail: %s", p.why);
    if (p.mode == PLAN_NONE)
        return PF_OK;
    s->floor_gbps = pf_coll_floor(run, &rule);
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
    if (p.bytes == 0 || p.iters <= 0 || p.iters > 64)
        return pf_fail(err, PF_ERR_PROTOCOL, "straggler re-test: rank 0 "
                       "sent a bad plan (%llu bytes x %d)",
                       (unsigned long long)p.bytes, p.iters);
    if (!p.data && !p.below) {
        s->floor_gbps = 0;
        s->kind[0] = '\0';
        pf_info("straggler: a rail was slow in the ring: pairwise re-test of "
                "%d ring links per rail", b->world);
        return pairwise(run, e, b, &p, deadline, err);
    }
    snprintf(s->method, sizeof(s->method), "pairwise");
    s->pair_bytes = p.bytes;
    s->pair_iters = p.iters;
    if (p.data) {
        pf_info("straggler: %ld wrong elements: pairwise re-test of %d ring "
                "links with the data checked", run->coll.wrong_total,
                b->world);
    } else {
        uint64_t at_bytes;
        double judged = pf_coll_judged_busbw(&run->coll, &rule, &at_bytes);
        pf_info("straggler: busbw %.3f GB/s below the floor %.3f GB/s: "
                "pairwise re-test of %d ring links", judged, s->floor_gbps,
                b->world);
    }
    rc = pairwise(run, e, b, &p, deadline, err);
    if (rc == PF_OK)
        pf_info("straggler: %s", s->note);
    return rc;
}
