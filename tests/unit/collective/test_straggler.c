/* Straggler localisation: the pure decisions (pairing phases, link
 * bandwidths -> slow rank, timings -> suspect), then the re-test itself
 * over forked ranks (host engine on tcp loopback, an engine without a pair
 * op, 2 ranks, a rank dying during the re-test). */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_fixture.h"
#include "collective/collective.h"
#include "collective/blame.h"
#include "collective/straggler.h"
#include "fork_boot.h"
#include "judge/links.h"
#include "util/clock.h"
#include "verdict/verdict.h"

/* ------------------------------------------------------------ phases */

Test(straggler, phases_cover_every_link_once_with_disjoint_pairs)
{
    cr_assert_eq(pf_straggler_nphases(1), 0);
    cr_assert_eq(pf_straggler_nphases(2), 1);
    cr_assert_eq(pf_straggler_nphases(3), 3);
    cr_assert_eq(pf_straggler_nphases(4), 2);
    cr_assert_eq(pf_straggler_nphases(7), 3);
    cr_assert_eq(pf_straggler_nphases(8), 2);
    for (int n = 3; n <= 8; n++) {
        int seen[8] = { 0 };
        for (int ph = 0; ph < pf_straggler_nphases(n); ph++) {
            for (int r = 0; r < n; r++) {
                int p = pf_straggler_peer(r, n, ph);
                if (p < 0)
                    continue;
                /* symmetric, and a ring neighbour */
                cr_assert_eq(pf_straggler_peer(p, n, ph), r, "n=%d ph=%d r=%d",
                             n, ph, r);
                cr_assert(p == (r + 1) % n || r == (p + 1) % n);
                if (p == (r + 1) % n) {
                    cr_assert_eq(pf_straggler_link_phase(n, r), ph);
                    seen[r]++;
                }
            }
        }
        for (int i = 0; i < n; i++)
            cr_assert_eq(seen[i], 1, "n=%d link %d tested %d times", n, i,
                         seen[i]);
    }
    /* 4 ranks: (0,1),(2,3) then (1,2),(3,0) */
    cr_assert_eq(pf_straggler_peer(0, 4, 0), 1);
    cr_assert_eq(pf_straggler_peer(2, 4, 0), 3);
    cr_assert_eq(pf_straggler_peer(1, 4, 1), 2);
    cr_assert_eq(pf_straggler_peer(3, 4, 1), 0);
    /* 3 ranks: rank 2 sits phase 0 out, rank 1 phase 2 */
    cr_assert_eq(pf_straggler_peer(2, 3, 0), -1);
    cr_assert_eq(pf_straggler_peer(1, 3, 2), -1);
    cr_assert_eq(pf_straggler_peer(0, 1, 0), -1);
}

/* ------------------------------------------------------------- links */

static void links_with_slow_rank(int n, int slow, double *l)
{
    for (int i = 0; i < n; i++)
        l[i] = 1.0;
    l[slow] = 0.1;                    /* slow - slow+1 */
    l[(slow + n - 1) % n] = 0.12;     /* slow-1 - slow */
}

Test(straggler, every_rank_of_3_to_8_is_found)
{
    double l[8];
    char note[320];

    for (int n = 3; n <= 8; n++)
        for (int s = 0; s < n; s++) {
            links_with_slow_rank(n, s, l);
            cr_assert_eq(pf_straggler_from_links(n, l, note, sizeof(note)), s,
                         "n=%d slow %d: %s", n, s, note);
        }
    links_with_slow_rank(4, 2, l);
    pf_straggler_from_links(4, l, note, sizeof(note));
    cr_assert_str_eq(note, "pairwise: rank 2's links are both slow (1-2 "
                     "0.120 GB/s, 2-3 0.100 GB/s) while every other rank "
                     "has a link of at least 1.000 GB/s");
}

Test(straggler, two_ranks_cannot_tell)
{
    double l[2] = { 0.1, 0.1 };
    char note[320];

    cr_assert_eq(pf_straggler_from_links(2, l, note, sizeof(note)), -1);
    cr_assert_str_eq(note, "2 ranks share one link (0.100 GB/s): a pairwise "
                     "test cannot tell which end is slow");
    cr_assert_eq(pf_straggler_from_links(1, l, note, sizeof(note)), -1);
}

Test(straggler, links_alike_fast_or_slow_name_no_rank)
{
    double fast[6] = { 1.0, 0.9, 1.1, 1.0, 0.95, 1.05 };
    double slow[6] = { 0.01, 0.01, 0.01, 0.01, 0.01, 0.01 };
    char note[320];

    cr_assert_eq(pf_straggler_from_links(6, fast, note, sizeof(note)), -1);
    cr_assert_str_eq(note, "pairwise: every link alike (0.900..1.100 GB/s): "
                     "no single rank is slow, the fabric as a whole is");
    cr_assert_eq(pf_straggler_from_links(6, slow, note, sizeof(note)), -1);
    cr_assert(strstr(note, "every link alike (0.010..0.010 GB/s)"), "%s",
              note);
}

Test(straggler, ties_and_scattered_slow_links_name_no_rank)
{
    /* adjacent slow ranks 1 and 2 of 4: links 0-1, 1-2, 2-3 slow */
    double adj[4] = { 0.1, 0.1, 0.1, 1.0 };
    /* slow ranks 1 and 4 of 6, far apart */
    double apart[6] = { 0.1, 0.1, 1.0, 0.1, 0.1, 1.0 };
    /* one slow link 1-2 of 5: a cable, not a rank */
    double cable[5] = { 1.0, 0.1, 1.0, 1.0, 1.0 };
    /* exactly half of the others: not below the ratio */
    double half[4] = { 1.0, 0.5, 0.5, 1.0 };
    char note[320];

    cr_assert_eq(pf_straggler_from_links(4, adj, note, sizeof(note)), -1);
    cr_assert(strstr(note, "do not share one rank"), "%s", note);
    cr_assert_eq(pf_straggler_from_links(6, apart, note, sizeof(note)), -1);
    cr_assert(strstr(note, "do not share one rank"), "%s", note);
    cr_assert_eq(pf_straggler_from_links(5, cable, note, sizeof(note)), -1);
    cr_assert(strstr(note, "slowest 1-2 0.100 GB/s, best 1.000 GB/s"), "%s",
              note);
    cr_assert_eq(pf_straggler_from_links(4, half, note, sizeof(note)), -1);
}

Test(straggler, noise_on_a_healthy_link_does_not_hide_the_straggler)
{
    /* rank 2 slow; link 0-1 is at 40% of the best, on a busy machine */
    double l[4] = { 0.4, 0.08, 0.07, 1.0 };
    /* a dead link (0) or a bad measurement (NaN) counts as slowest */
    double dead[3] = { 1.0, 0.0, NAN };
    char note[320];

    cr_assert_eq(pf_straggler_from_links(4, l, note, sizeof(note)), 2, "%s",
                 note);
    cr_assert_eq(pf_straggler_from_links(3, dead, note, sizeof(note)), 2,
                 "%s", note);
}

/* ----------------------------------------------------------- timings */

Test(straggler, timings_name_an_outlier_only)
{
    double out[4] = { 0.10, 0.11, 0.35, 0.12 };
    double ring[4] = { 0.30, 0.31, 0.31, 0.30 };
    char note[320];

    cr_assert_eq(pf_straggler_from_times(4, out, note, sizeof(note)), 2);
    cr_assert_str_eq(note, "per-rank timings: rank 2 took 0.3500 s per "
                     "all_reduce, the next slowest 0.1200 s");
    cr_assert_eq(pf_straggler_from_times(4, ring, note, sizeof(note)), -1);
    cr_assert_str_eq(note, "per-rank timings 0.3000..0.3100 s per all_reduce: "
                     "no rank stands out (in a ring every rank waits for the "
                     "slowest)");
    cr_assert_eq(pf_straggler_from_times(1, ring, note, sizeof(note)), -1);
}

/* ------------------------------------------- the re-test, forked ranks */

struct retest {
    int slow_rank, slow_ms;
    int die_rank;                     /* killed by SIGALRM in the re-test */
    bool no_pair;                     /* engine without the pair op */
    double floor;                     /* --min-busbw-gbps */
    double ring;                      /* the fake sweep's busbw */
    int nnodes;                       /* 0: one node per rank */
    pf_err rc[8];
    int slow_found[8];
    int nlinks[8];
    double gbps[8][8];
    char method[8][16];
    char note[8][320];
    int64_t ms[8];
};

static const struct pf_engine_ops no_pair_ops = { .name = "nopair" };

/* A finished sweep of one 1 MiB row at busbw, 10 ms per all_reduce. */
static void fake_sweep(struct pf_run *run, int world, double busbw)
{
    struct pf_coll *c = &run->coll;

    c->ran = true;
    c->slow_rank = -1;
    c->nrows = 1;
    c->nranks = c->nnodes = world;
    snprintf(c->engine, sizeof(c->engine), "host");
    c->engine_kind = PF_ENGINE_HOST;
    c->rows[0].bytes = 1 << 20;
    c->peak_busbw = busbw;
    c->rank_seconds = calloc((size_t)world, sizeof(double));
    cr_assert(c->rank_seconds);
    c->nrank_seconds = world;
    for (int r = 0; r < world; r++)
        c->rank_seconds[r] = 0.010;
}

/* Free a judged run: its culprit list is the test's own storage. */
static void drop(struct pf_run *run)
{
    run->coll.roster.list = NULL;          /* the test's own array */
    run->coll.strag.culprits = NULL;
    run->coll.strag.nculprits = 0;
    pf_coll_free(&run->coll);
    free(run);
}

static int retest_rank(struct pf_boot *b, void *arg)
{
    struct retest *t = arg;
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_engine e = { .ops = &pf_engine_host };
    char err[PF_ERRLEN] = "";
    int64_t deadline = pf_deadline_in(20000), t0;
    pf_err rc = PF_OK;
    int r = b->rank;

    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider),
             "tcp");
    snprintf(run->cfg.bind_addr, sizeof(run->cfg.bind_addr), "127.0.0.1");
    run->cfg.debug_corrupt_rank = -1;
    run->cfg.debug_slow_rank = t->slow_rank;
    run->cfg.debug_slow_ms = t->slow_ms;
    run->cfg.min_busbw_gbps = t->floor;
    if (t->no_pair)
        e.ops = &no_pair_ops;
    else
        rc = pf_test_engine_open(&e, run, b, 1 << 18, deadline, err);
    fake_sweep(run, b->world, t->ring);
    if (t->nnodes)
        run->coll.nnodes = t->nnodes;
    pf_test_judged(run);
    if (r == t->die_rank)
        alarm(1);                     /* dies mid-exchange (slowed) */
    t0 = pf_now_ms();
    if (rc == PF_OK)
        rc = pf_straggler_retest(run, &e, b, deadline, err);
    t->ms[r] = pf_now_ms() - t0;
    rc = pf_test_rank_done(b, rc, deadline, err);
    if (!t->no_pair && e.impl)
        e.ops->close(&e);
    t->rc[r] = rc;
    t->slow_found[r] = run->coll.slow_rank;
    t->nlinks[r] = run->coll.strag.nlinks;
    for (int i = 0; i < run->coll.strag.nlinks && i < 8; i++)
        t->gbps[r][i] = run->coll.strag.links[i].gbps;
    snprintf(t->method[r], sizeof(t->method[r]), "%s",
             run->coll.strag.method);
    snprintf(t->note[r], sizeof(t->note[r]), "%s", run->coll.strag.note);
    pf_coll_free(&run->coll);
    free(run);
    return 0;
}

static struct retest *new_retest(void)
{
    struct retest *t = pf_test_shared(sizeof(*t));
    memset(t, 0, sizeof(*t));
    t->slow_rank = t->die_rank = -1;
    t->floor = 1.0;                   /* the fake sweep's 0.5 misses it */
    t->ring = 0.5;
    for (int r = 0; r < 8; r++)
        t->rc[r] = PF_ERR_SYS;
    return t;
}

/* A re-test after a sweep at busbw ring against floor, rank slow (-1:
 * none) sleeping 100 ms before each exchange. */
static struct retest *retest_of(int slow, double floor, double ring)
{
    struct retest *t = new_retest();

    t->slow_rank = slow;
    t->slow_ms = slow >= 0 ? 100 : 0;
    t->floor = floor;
    t->ring = ring;
    return t;
}

/* n ranks of t forked (secs at the most): each ends PF_OK, its re-test
 * method `method` (NULL: any) and its slow rank `found` (-1: none). */
static void retest_ran(struct retest *t, int n, int secs, const char *method,
                       int found)
{
    int codes[8];

    cr_assert_eq(pf_test_fork_ranks(n, retest_rank, t, secs, codes), 0);
    for (int r = 0; r < n; r++) {
        cr_assert_eq(t->rc[r], PF_OK, "rank %d rc %d", r, t->rc[r]);
        if (method)
            cr_assert_str_eq(t->method[r], method, "rank %d", r);
        cr_assert_eq(t->slow_found[r], found, "rank %d: %s", r, t->note[r]);
    }
}

Test(straggler, host_engine_pairwise_finds_the_slowed_rank, .timeout = 90)
{
    /* the ring (0.01) misses the floor; healthy links reach it */
    struct retest *t = retest_of(2, 0.015, 0.01);

    retest_ran(t, 4, 60, "pairwise", 2);
    for (int r = 0; r < 4; r++) {
        /* 4 ring links; then suspects 2 (both links slow) and 1 (one)
         * re-tested with rank 0, the one proven good, a round each */
        cr_assert_eq(t->nlinks[r], 6);
        /* 1 MiB x 3 with 3 x 100 ms of sleep: below 0.0105 GB/s */
        cr_assert_lt(t->gbps[r][1], 0.0105, "link 1-2 %.4f", t->gbps[r][1]);
        cr_assert_lt(t->gbps[r][2], 0.0105, "link 2-3 %.4f", t->gbps[r][2]);
        cr_assert_gt(t->gbps[r][0], 0.021, "link 0-1 %.4f", t->gbps[r][0]);
        cr_assert_gt(t->gbps[r][3], 0.021, "link 3-0 %.4f", t->gbps[r][3]);
    }
    /* above the floor on one node: nothing is re-tested */
    t = retest_of(-1, 0.4, 0.5);
    t->nnodes = 1;
    retest_ran(t, 3, 60, "", -1);
    for (int r = 0; r < 3; r++)
        cr_assert_eq(t->nlinks[r], 0);
}

Test(straggler, every_node_judged_by_its_links_on_3_nodes, .timeout = 90)
{
    /* the ring meets its floor, rank 1's links do not: the pairwise test
     * runs anyway and names it */
    struct retest *t = retest_of(1, 0.015, 0.5);

    retest_ran(t, 4, 60, "pairwise", 1);
    /* 4 ring links, then ranks 0, 1, 2 re-tested with 3 (the one proven
     * good), one per round */
    for (int r = 0; r < 4; r++)
        cr_assert_geq(t->nlinks[r], 5, "rank %d: %d links", r, t->nlinks[r]);
    /* healthy: every link good, nobody named */
    t = retest_of(-1, 0.015, 0.5);
    retest_ran(t, 3, 60, "pairwise", -1);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(t->nlinks[r], 3);
        cr_assert(strstr(t->note[r], "pairwise: every link good (3 links at "
                         "or above 0.015 GB/s"), "%s", t->note[r]);
    }
}

Test(straggler, three_ranks_of_one_node_name_the_slow_one, .timeout = 90)
{
    /* 3 local ranks, rank 2 slow, the ring below its floor: no rank has
     * two good links to confirm against, but link 0-1 is inside this node
     * and good, so it clears ranks 0 and 1 */
    struct retest *t = retest_of(2, 0.015, 0.01);

    t->nnodes = 1;
    retest_ran(t, 3, 60, "pairwise", 2);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(t->nlinks[r], 3, "no confirmation round");
        cr_assert(strstr(t->note[r], "pairwise inside this node: rank 2's "
                         "links are both slow (1-2 "), "%s", t->note[r]);
    }
    /* the same on 3 nodes: a link leaves the node, nobody proven good,
     * nobody blamed */
    t = retest_of(2, 0.015, 0.01);
    retest_ran(t, 3, 60, NULL, -1);
}

Test(straggler, no_pair_op_or_two_ranks_fall_back_to_timings, .timeout = 60)
{
    struct retest *t = new_retest();

    t->no_pair = true;
    retest_ran(t, 3, 30, "timings", -1);
    for (int r = 0; r < 3; r++)
        cr_assert_str_eq(t->note[r], "the nopair engine has no pairwise test; "
                         "timings compared instead: per-rank timings "
                         "0.0100..0.0100 s per all_reduce: no rank stands out "
                         "(in a ring every rank waits for the slowest)");
    t = new_retest();
    /* 2 ranks: timings compared, nobody named */
    retest_ran(t, 2, 30, "timings", -1);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(t->nlinks[r], 0);
        cr_assert(strstr(t->note[r], "2 ranks share one link: a pairwise "
                         "test cannot tell which end is slow"), "%s",
                  t->note[r]);
    }
}

Test(straggler, rank_dying_in_the_retest_is_peer_lost, .timeout = 60)
{
    struct retest *t = new_retest();
    int codes[3];

    /* 3 ranks; rank 1 sleeps 3 s per exchange and is killed after 1 s,
     * in phase 0 with rank 0, which must see it lost well before its
     * 20 s deadline. */
    t->slow_rank = 1;
    t->slow_ms = 3000;
    t->die_rank = 1;
    pf_test_fork_ranks(3, retest_rank, t, 40, codes);
    cr_assert_eq(codes[1], 128 + SIGALRM);
    cr_assert_eq(t->rc[0], PF_ERR_LOST, "rc %d", t->rc[0]);
    cr_assert_lt(t->ms[0], 5000, "rank 0 needed %lld ms", (long long)t->ms[0]);
}

/* ----------------------------------------------------------- verdict */

static struct pf_peer four_peers[4] = {
    { .rank = 0, .host = "10.0.0.10", .node = "node-a" },
    { .rank = 1, .host = "10.0.0.11", .node = "node-b" },
    { .rank = 2, .host = "10.0.0.12", .node = "node-c" },
    { .rank = 3, .host = "10.0.0.13" },
};

/* Rank self of 4 after a pairwise re-test that blamed slow (-1 none). */
static struct pf_run *judged_on(int self, int slow, struct pf_peer *peers,
                                enum pf_bootstrap bootstrap)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;

    fake_sweep(run, 4, 0.02);
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "tcp;ofi_rxm");
    c->fabric.provider_is_fallback = true;
    run->cfg.min_busbw_gbps = 0.1;
    run->coll.roster.world = 4;
    run->peers.rank = self;
    run->coll.roster.list = peers;
    run->coll.roster.bootstrap = bootstrap;
    c->slow_rank = slow;
    snprintf(c->strag.method, sizeof(c->strag.method), "pairwise");
    snprintf(c->strag.kind, sizeof(c->strag.kind), "slow");
    if (slow >= 0) {
        static int culprit;           /* the run is freed without pf_coll_free */
        culprit = slow;
        c->strag.culprits = &culprit;
        c->strag.nculprits = 1;
    }
    c->strag.self = self;
    snprintf(c->strag.note, sizeof(c->strag.note), "%s",
             slow >= 0 ? "pairwise: rank 2's links are both slow"
                       : "pairwise: every link alike");
    pf_test_judged(run);
    pf_verdict_fabric(run);
    pf_verdict_finish(run);
    return run;
}

static struct pf_run *judged(int self, int slow)
{
    return judged_on(self, slow, four_peers, PF_BOOT_STATIC);
}

static const struct pf_check *busbw(const struct pf_run *run)
{
    for (int i = 0; i < run->verdict.n; i++)
        if (!strcmp(run->verdict.checks[i].name, "busbw"))
            return &run->verdict.checks[i];
    return NULL;
}

Test(straggler, only_the_straggler_fails)
{
    struct pf_run *run = judged(2, 2);
    const struct pf_check *c = busbw(run);

    cr_assert_not_null(c);
    cr_assert_eq(c->status, PF_FAIL);
    cr_assert_eq(c->reason, PF_R_StragglerNode);
    cr_assert_str_eq(c->condition, "EFAFabricReady");
    cr_assert_str_eq(c->message, "this node (rank 2, node-c, 10.0.0.12) is the "
                     "straggler: busbw 0.02 GB/s at 1 MiB is below the floor "
                     "0.10 GB/s from the largest size (--min-busbw-gbps); "
                     "pairwise: rank 2's links are both slow");
    cr_assert_eq(run->verdict.overall, PF_FAIL);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
    drop(run);

    for (int self = 0; self < 4; self += 1 + (self == 1)) {
        run = judged(self, 2);
        c = busbw(run);
        cr_assert_eq(c->status, PF_WARN, "rank %d", self);
        cr_assert_eq(c->reason, PF_R_SlowPeer);
        cr_assert(strstr(c->message, "rank 2 (node-c, 10.0.0.12) is the straggler, not "
                         "this node"), "%s", c->message);
        /* Not this node's fault, but the gang must not start: exit 4,
         * status label warn, no taint. */
        cr_assert_eq(run->verdict.overall, PF_WARN);
        cr_assert_eq(run->verdict.cls, PF_CLASS_PEER);
        cr_assert_eq(run->verdict.exit_code, PF_EXIT_PEER);
        cr_assert_not(pf_class_may_taint(run->verdict.cls));
        drop(run);
    }
    /* the straggler without a node name is named by its address */
    run = judged(3, 3);
    cr_assert(strstr(busbw(run)->message, "(rank 3, 10.0.0.13)"), "%s",
              busbw(run)->message);
    drop(run);
}

Test(straggler, no_straggler_keeps_bandwidth_below_threshold_everywhere)
{
    for (int self = 0; self < 4; self++) {
        struct pf_run *run = judged(self, -1);
        const struct pf_check *c = busbw(run);
        cr_assert_eq(c->status, PF_FAIL);
        cr_assert_eq(c->reason, PF_R_BandwidthBelowThreshold);
        cr_assert(strstr(c->message, "below the floor 0.10 GB/s from the "
                         "largest size (--min-busbw-gbps): 4 ranks on 4 "
                         "node(s), host engine over tcp;ofi_rxm; no node "
                         "singled out, none blamed: pairwise: every link "
                         "alike"), "%s", c->message);
        /* Every node stops the job; none is failed or tainted. */
        cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
        cr_assert_eq(run->verdict.cls, PF_CLASS_GROUP);
        cr_assert_not(pf_class_may_taint(run->verdict.cls));
        drop(run);
    }
}

Test(straggler, ranks_on_the_stragglers_node_fail_with_it)
{
    /* efa-preflight local: every rank on this host */
    struct pf_peer local[4] = {
        { .rank = 0, .host = "127.0.0.1", .node = "vm" },
        { .rank = 1, .host = "127.0.0.1", .node = "vm" },
        { .rank = 2, .host = "127.0.0.1", .node = "vm" },
        { .rank = 3, .host = "127.0.0.1", .node = "vm" },
    };
    /* k8s, two pods per Node: rank 3 shares node-b with straggler 2 */
    struct pf_peer pods[4] = {
        { .rank = 0, .host = "10.1.0.5", .node = "node-a" },
        { .rank = 1, .host = "10.1.0.6", .node = "node-a" },
        { .rank = 2, .host = "10.1.1.7", .node = "node-b" },
        { .rank = 3, .host = "10.1.1.8", .node = "node-b" },
    };
    struct pf_run *run = judged_on(0, 2, local, PF_BOOT_LOCAL);

    cr_assert_eq(busbw(run)->status, PF_FAIL);
    cr_assert_eq(busbw(run)->reason, PF_R_StragglerNode);
    cr_assert(strstr(busbw(run)->message, "this node (vm, 127.0.0.1) runs "
                     "the straggler, rank 2 (this is rank 0)"), "%s",
              busbw(run)->message);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
    drop(run);

    for (int self = 0; self < 4; self++) {
        run = judged_on(self, 2, pods, PF_BOOT_K8S);
        cr_assert_eq(busbw(run)->status, self >= 2 ? PF_FAIL : PF_WARN,
                     "rank %d: %s", self, busbw(run)->message);
        cr_assert_eq(busbw(run)->reason,
                     self >= 2 ? PF_R_StragglerNode : PF_R_SlowPeer);
        drop(run);
    }
    /* the same addresses outside k8s are different hosts: only rank 2 */
    run = judged_on(3, 2, pods, PF_BOOT_STATIC);
    cr_assert_eq(busbw(run)->reason, PF_R_SlowPeer);
    drop(run);
}

/* The blame rule: each node judged by its own links, suspects confirmed
 * against a node proven good. sim() builds the links of a ring of n nodes
 * from what each node is (PF_LINK_SLOW: its links run at a tenth,
 * PF_LINK_DATA: what it sends arrives wrong), judges them against a floor
 * of 0.5, plans and "runs" the confirmation rounds the same way, then
 * blames. */
#define SIM_MAX 32

static double sim_gbps(const unsigned *node, int a, int b)
{
    return (node[a] | node[b]) & PF_LINK_SLOW ? 0.1 : 1.0;
}

static long sim_wrong(const unsigned *node, int a, int b)
{
    return 512L * (!!(node[a] & PF_LINK_DATA) + !!(node[b] & PF_LINK_DATA));
}

static int sim(int n, const unsigned *node, unsigned *culprit, char *note,
               size_t len, int *rounds)
{
    double g[SIM_MAX];
    long w[SIM_MAX];
    unsigned bad[SIM_MAX];
    int partner[SIM_MAX * PF_PAIR_CONFIRM_ROUNDS], nconf = 0;
    struct pf_confirm conf[SIM_MAX * PF_PAIR_CONFIRM_ROUNDS];

    for (int i = 0; i < n; i++) {
        g[i] = sim_gbps(node, i, (i + 1) % n);
        w[i] = sim_wrong(node, i, (i + 1) % n);
        bad[i] = pf_link_judge(g[i], w[i], 0.5);
    }
    *rounds = pf_pairs_confirm_plan(n, bad, PF_PAIR_CONFIRM_ROUNDS, partner);
    for (int k = 0; k < *rounds; k++)
        for (int r = 0; r < n; r++) {
            int p = partner[k * n + r];
            if (p < 0 || !(bad[r] || bad[(r + n - 1) % n]))
                continue;
            /* the partner is proven good: both its links good */
            cr_assert(!bad[p] && !bad[(p + n - 1) % n], "n=%d: %d paired "
                      "with %d, not proven good", n, r, p);
            cr_assert_eq(partner[k * n + p], r);
            conf[nconf].suspect = r;
            conf[nconf].good = p;
            conf[nconf].gbps = sim_gbps(node, r, p);
            conf[nconf].wrong = sim_wrong(node, r, p);
            conf[nconf].bad = pf_link_judge(conf[nconf].gbps,
                                            conf[nconf].wrong, 0.5);
            nconf++;
        }
    return pf_pairs_blame(n, g, w, bad, conf, nconf, 0.5, culprit, note, len);
}

/* Exactly the bad nodes are named, each for what it does. */
static void expect_named(int n, const unsigned *node)
{
    unsigned culprit[SIM_MAX];
    char note[320];
    int rounds, want = 0;

    for (int r = 0; r < n; r++)
        want += node[r] != 0;
    cr_assert_eq(sim(n, node, culprit, note, sizeof(note), &rounds), want,
                 "n=%d: %s", n, note);
    for (int r = 0; r < n; r++)
        cr_assert_eq(culprit[r], node[r], "n=%d rank %d blamed %u, is %u: %s",
                     n, r, culprit[r], node[r], note);
}

Test(straggler, mixed_slow_and_corrupt_are_both_named)
{
    unsigned node[8] = { 0 };

    /* apart: the slow one is judged although another corrupts */
    node[2] = PF_LINK_SLOW;
    node[5] = PF_LINK_DATA;
    expect_named(8, node);
    /* neighbours: their shared link is slow and wrong; each is named for
     * what its re-test with a good node shows */
    memset(node, 0, sizeof(node));
    node[3] = PF_LINK_SLOW;
    node[4] = PF_LINK_DATA;
    expect_named(8, node);
    /* one node both slow and corrupting */
    memset(node, 0, sizeof(node));
    node[6] = PF_LINK_SLOW | PF_LINK_DATA;
    node[1] = PF_LINK_SLOW;
    expect_named(8, node);

    unsigned culprit[8];
    char note[320];
    int rounds;
    memset(node, 0, sizeof(node));
    node[2] = PF_LINK_SLOW;
    node[5] = PF_LINK_DATA;
    sim(8, node, culprit, note, sizeof(note), &rounds);
    cr_assert_str_eq(note, "pairwise: rank 2's links are both slow (1-2 "
                     "0.100 GB/s, 2-3 0.100 GB/s), and with rank 0 (proven "
                     "good) 0.100 GB/s; rank 5's links both carry wrong data "
                     "(4-5 512, 5-6 512 wrong), and with rank 7 (proven "
                     "good) 512 wrong (slow below 0.500 GB/s)");
}

Test(straggler, two_and_three_bad_among_16_are_named_wherever_they_sit)
{
    unsigned node[16];
    const unsigned kinds[3] = { PF_LINK_SLOW, PF_LINK_DATA,
                                PF_LINK_SLOW | PF_LINK_DATA };

    /* every placement of two and of three bad nodes, each kind, and the
     * kinds mixed: neighbours, two apart, across the ring's seam */
    for (int a = 0; a < 16; a++)
        for (int b = a + 1; b < 16; b++)
            for (int k = 0; k < 3; k++) {
                memset(node, 0, sizeof(node));
                node[a] = kinds[k];
                node[b] = kinds[(k + 1) % 3];
                expect_named(16, node);
                for (int c = b + 1; c < 16; c++) {
                    node[c] = kinds[(k + 2) % 3];
                    expect_named(16, node);
                    node[c] = kinds[k];
                    expect_named(16, node);
                    node[c] = 0;
                }
            }
}

Test(straggler, healthy_node_between_two_bad_ones_passes_its_confirmation)
{
    unsigned node[8] = { 0 }, culprit[8], bad[8];
    double g[8];
    long w[8] = { 0 };
    int partner[8 * PF_PAIR_CONFIRM_ROUNDS];
    char note[320];
    int rounds;

    node[2] = node[4] = PF_LINK_SLOW; /* rank 3 between them */
    for (int i = 0; i < 8; i++) {
        g[i] = sim_gbps(node, i, (i + 1) % 8);
        bad[i] = pf_link_judge(g[i], w[i], 0.5);
    }
    /* both links bad: 2, 3, 4 first, with the nodes proven good 0, 6, 7;
     * then 1 and 5 (one bad link) in a second round */
    cr_assert_eq(pf_pairs_confirm_plan(8, bad, PF_PAIR_CONFIRM_ROUNDS,
                                       partner), 2);
    cr_assert_eq(partner[2], 0);
    cr_assert_eq(partner[3], 6);
    cr_assert_eq(partner[4], 7);
    cr_assert_eq(partner[5], -1);
    cr_assert_eq(partner[8 + 1], 0);
    cr_assert_eq(partner[8 + 5], 6);
    cr_assert_eq(partner[8 + 7], -1);
    cr_assert_eq(sim(8, node, culprit, note, sizeof(note), &rounds), 2, "%s",
                 note);
    cr_assert_eq(culprit[3], 0, "%s", note);
    cr_assert(culprit[2] && culprit[4]);

    /* the confirmation decides: rank 3's re-test with rank 6 was good */
    struct pf_confirm conf[3] = {
        { .suspect = 2, .good = 0, .bad = PF_LINK_SLOW, .gbps = 0.1 },
        { .suspect = 3, .good = 6, .bad = 0, .gbps = 1.0 },
        { .suspect = 4, .good = 7, .bad = PF_LINK_SLOW, .gbps = 0.1 },
    };
    cr_assert_eq(pf_pairs_blame(8, g, w, bad, conf, 3, 0.5, culprit, note,
                                sizeof(note)), 2);
    cr_assert_eq(culprit[3], 0);
    /* a re-test bad in a way its ring links were not does not count */
    conf[1].bad = PF_LINK_DATA;
    cr_assert_eq(pf_pairs_blame(8, g, w, bad, conf, 3, 0.5, culprit, note,
                                sizeof(note)), 2);
    cr_assert_eq(culprit[3], 0);
    /* without a confirmation nobody is failed */
    cr_assert_eq(pf_pairs_blame(8, g, w, bad, conf, 0, 0.5, culprit, note,
                                sizeof(note)), 0);
    cr_assert(strstr(note, "every suspect passed its re-test"), "%s", note);
}

Test(straggler, no_node_proven_good_blames_nobody)
{
    unsigned node[4] = { PF_LINK_SLOW, 0, PF_LINK_SLOW, 0 }, culprit[4];
    unsigned bad[6];
    int partner[6 * PF_PAIR_CONFIRM_ROUNDS], rounds;
    char note[320];

    /* every link touches rank 0 or 2: no rank has two good links */
    cr_assert_eq(sim(4, node, culprit, note, sizeof(note), &rounds), 0);
    cr_assert_eq(rounds, 0);
    for (int r = 0; r < 4; r++)
        cr_assert_eq(culprit[r], 0);
    cr_assert_str_eq(note, "pairwise: 4 of 4 links slow, and no rank has two "
                     "good links: no node proven good to confirm against, "
                     "none blamed");
    for (int i = 0; i < 6; i++)
        bad[i] = PF_LINK_DATA;
    cr_assert_eq(pf_pairs_confirm_plan(6, bad, PF_PAIR_CONFIRM_ROUNDS,
                                       partner), 0);
    for (int i = 0; i < 6 * PF_PAIR_CONFIRM_ROUNDS; i++)
        cr_assert_eq(partner[i], -1);
}

Test(straggler, more_than_half_confirmed_blames_nobody)
{
    /* rank 0 alone proven good; the six others each fail their re-test
     * with it: not a minority, the fabric as a whole is suspect */
    double g[7] = { 1, 0.1, 0.1, 0.1, 0.1, 0.1, 1 };
    long w[7] = { 0 };
    unsigned bad[7], culprit[7];
    struct pf_confirm conf[6];
    char note[320];

    for (int i = 0; i < 7; i++)
        bad[i] = pf_link_judge(g[i], w[i], 0.5);
    for (int k = 0; k < 6; k++)
        conf[k] = (struct pf_confirm){ k + 1, 0, PF_LINK_SLOW, 0.1, 0 };
    /* rank 1 and 6 have a good link to rank 0: bad[0] and bad[6] good */
    cr_assert_eq(pf_pairs_blame(7, g, w, bad, conf, 6, 0.5, culprit, note,
                                sizeof(note)), 0, "%s", note);
    cr_assert(strstr(note, "6 of 7 ranks failed"), "%s", note);
    /* three of seven is a minority */
    cr_assert_eq(pf_pairs_blame(7, g, w, bad, conf, 3, 0.5, culprit, note,
                                sizeof(note)), 3, "%s", note);
}

Test(straggler, a_stray_bad_link_blames_nobody)
{
    /* one slow link 2-3, one link 1-2 carrying wrong data: both ends of
     * each are suspects, each passes its re-test with a good node */
    double g[6] = { 1, 1, 0.1, 1, 1, 1 };
    long w[6] = { 0, 9, 0, 0, 0, 0 };
    unsigned bad[6], culprit[6];
    int partner[6 * PF_PAIR_CONFIRM_ROUNDS], nconf = 0;
    struct pf_confirm conf[6 * PF_PAIR_CONFIRM_ROUNDS];
    char note[320];
    int rounds;

    for (int i = 0; i < 6; i++)
        bad[i] = pf_link_judge(g[i], w[i], 0.5);
    rounds = pf_pairs_confirm_plan(6, bad, PF_PAIR_CONFIRM_ROUNDS, partner);
    cr_assert_gt(rounds, 0);
    for (int k = 0; k < rounds; k++)
        for (int r = 0; r < 6; r++)
            if (partner[k * 6 + r] >= 0 && (bad[r] || bad[(r + 5) % 6]))
                conf[nconf++] = (struct pf_confirm){ r, partner[k * 6 + r],
                                                     0, 1.0, 0 };
    cr_assert_eq(nconf, 3);           /* ranks 1, 2, 3 */
    cr_assert_eq(pf_pairs_blame(6, g, w, bad, conf, nconf, 0.5, culprit,
                                note, sizeof(note)), 0);
    for (int r = 0; r < 6; r++)
        cr_assert_eq(culprit[r], 0);
    cr_assert(strstr(note, "every suspect passed"), "%s", note);
}

Test(straggler, wrong_data_is_localised_whatever_the_speed)
{
    unsigned node[6] = { 0, 0, 0, PF_LINK_DATA, 0, 0 }, culprit[6];
    double g[2] = { 1, 1 };
    long two[2] = { 9, 9 };
    unsigned bad2[2] = { PF_LINK_DATA, PF_LINK_DATA };
    char note[320];
    int rounds;

    cr_assert_eq(sim(6, node, culprit, note, sizeof(note), &rounds), 1, "%s",
                 note);
    cr_assert_eq(culprit[3], PF_LINK_DATA);
    cr_assert(strstr(note, "rank 3's links both carry wrong data"), "%s",
              note);
    /* two ranks share one link */
    cr_assert_eq(pf_pairs_blame(2, g, two, bad2, NULL, 0, 0.5, culprit, note,
                                sizeof(note)), 0);
    cr_assert(strstr(note, "cannot tell which end is at fault"), "%s", note);
}

Test(straggler, links_judged_by_floor_or_median)
{
    double g[5] = { 1.0, 0.9, 0.2, 1.1, 0.95 };

    cr_assert_eq(pf_link_judge(0.2, 0, 0.5), PF_LINK_SLOW);
    cr_assert_eq(pf_link_judge(0.6, 3, 0.5), PF_LINK_DATA);
    cr_assert_eq(pf_link_judge(0.2, 3, 0), PF_LINK_DATA); /* speed unjudged */
    cr_assert_eq(pf_link_judge(NAN, 0, 0.5), PF_LINK_SLOW);
    /* half the median link 0.95 */
    cr_assert_float_eq(pf_links_relative_floor(5, g), 0.475, 1e-9);
}

/* Four ranks, rank 2's links at 60 % of the others' (60 vs 100 GB/s):
 * held to the baseline (0.8 x 100 = 80) rank 2 is singled out and, its
 * confirmation link above the catalog floor (50), degraded rather than
 * slow; the catalog floor alone singles out nobody; links at 95 % pass. */
Test(straggler, degraded_node_held_to_the_baseline)
{
    double ring[4] = { 100, 60, 60, 100 }, ok[4] = { 100, 95, 95, 100 };
    long wrong[4] = { 0 };
    unsigned bad[4], culprit[4];
    struct pf_confirm conf[1] = { { 2, 0, 0, 60, 0 } };
    char note[320];

    for (int i = 0; i < 4; i++)
        bad[i] = pf_link_judge(ring[i], 0, 80);
    conf[0].bad = pf_link_judge(60, 0, 80);
    cr_assert_eq(pf_pairs_blame(4, ring, wrong, bad, conf, 1, 80, culprit,
                                note, sizeof(note)), 1, "%s", note);
    cr_assert_eq(culprit[2], PF_LINK_SLOW);
    pf_pairs_split_degraded(4, conf, 1, 50, 80, culprit);
    cr_assert_eq(culprit[2], PF_LINK_DEGRADED);
    cr_assert_eq(culprit[0] | culprit[1] | culprit[3], 0);
    /* below the catalog floor too: slow, a proven fault */
    conf[0].gbps = 40;
    culprit[2] = PF_LINK_SLOW;
    pf_pairs_split_degraded(4, conf, 1, 50, 80, culprit);
    cr_assert_eq(culprit[2], PF_LINK_SLOW);
    /* the catalog floor alone (50): nobody */
    for (int i = 0; i < 4; i++)
        bad[i] = pf_link_judge(ring[i], 0, 50);
    cr_assert_eq(pf_pairs_blame(4, ring, wrong, bad, NULL, 0, 50, culprit,
                                note, sizeof(note)), 0, "%s", note);
    /* 95 %: nobody */
    for (int i = 0; i < 4; i++)
        bad[i] = pf_link_judge(ok[i], 0, 80);
    cr_assert_eq(pf_pairs_blame(4, ok, wrong, bad, NULL, 0, 80, culprit,
                                note, sizeof(note)), 0, "%s", note);
}

/* The 64-node netns run on the GPU machine's host (bench/results/scale.md):
 * a healthy rank's link measured 0.014 GB/s against a 0.015 floor, and its
 * re-test with a node proven good 0.015 (just under): it was failed as a
 * straggler beside the real one at 0.007. Only a re-test clearly under the
 * floor blames; one within the margin is said, not blamed. */
Test(straggler, a_re_test_just_under_the_floor_blames_nobody)
{
    /* 8 ranks; rank 2's links slow (1-2, 2-3), rank 5's 5-6 just under */
    double g[8] = { 1, 0.1, 0.1, 1, 1, 0.49, 1, 1 };
    long w[8] = { 0 };
    unsigned bad[8], culprit[8];
    char note[400];

    for (int i = 0; i < 8; i++)
        bad[i] = pf_link_judge(g[i], w[i], 0.5);
    struct pf_confirm conf[3] = {
        { .suspect = 2, .good = 0, .bad = PF_LINK_SLOW, .gbps = 0.1 },
        { .suspect = 5, .good = 7, .bad = PF_LINK_SLOW, .gbps = 0.47 },
        { .suspect = 6, .good = 0, .bad = 0, .gbps = 0.9 },
    };
    cr_assert_eq(pf_pairs_blame(8, g, w, bad, conf, 3, 0.5, culprit, note,
                                sizeof(note)), 1, "%s", note);
    cr_assert_eq(culprit[2], PF_LINK_SLOW);
    cr_assert_eq(culprit[5], 0, "%s", note);
    cr_assert(strstr(note, "not blamed, within 10 % of the floor 0.500 GB/s "
                           "on the re-test: rank 5"), "%s", note);
    /* alone, the marginal one leaves nobody named, and says why */
    conf[0].bad = 0;
    conf[0].gbps = 0.9;
    cr_assert_eq(pf_pairs_blame(8, g, w, bad, conf, 3, 0.5, culprit, note,
                                sizeof(note)), 0, "%s", note);
    cr_assert(strstr(note, "no clear failure") && strstr(note, "rank 5"),
              "%s", note);
    /* clearly under (0.44 < 0.9 x 0.5): blamed */
    conf[1].gbps = 0.44;
    cr_assert_eq(pf_pairs_blame(8, g, w, bad, conf, 3, 0.5, culprit, note,
                                sizeof(note)), 1, "%s", note);
    cr_assert_eq(culprit[5], PF_LINK_SLOW);
}
