/* pf_verdict_fabric: reasons, floors and exit codes from a filled
 * run->coll, no fabric needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/collective.h"
#include "config/catalog.h"
#include "collective/sweep.h"
#include "verdict/verdict.h"

#include "run_fixture.h"

static struct pf_instance gpu_type = {
    .name = "p5.48xlarge", .accel_kind = "gpu", .nfloors = 2,
    .floors = { { .nodes = 1, .busbw_gbps = 400, .verified = true },
                { .nodes = 2, .busbw_gbps = 300, .verified = true } },
};
static struct pf_instance cpu_type = {
    .name = "c5n.18xlarge", .accel_kind = "none", .nfloors = 1,
    .floors = { { .nodes = 2, .busbw_gbps = 5, .verified = true } },
};

/* A finished sweep of one row whose best busbw is busbw. */
static struct pf_run *ran(const char *engine, const char *provider,
                          double busbw, int nnodes)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;

    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "%s", engine);
    c->engine_kind = strcmp(engine, "nccl") ? PF_ENGINE_HOST : PF_ENGINE_NCCL;
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "%s", provider);
    c->fabric.provider_is_fallback = strncmp(provider, "efa", 3) != 0;
    c->nranks = 2 * nnodes;
    c->nnodes = nnodes;
    c->nrows = 1;
    /* busbw = 1e9 B / t x 2(n-1)/n with n = nranks */
    pf_sweep_fill_row(&c->rows[0], 1000000000ull, c->nranks,
                      pf_busbw_factor(c->nranks) / busbw,
                      pf_busbw_factor(c->nranks) / busbw, 0, 0);
    pf_sweep_summarize(c);
    return run;
}

/* The node judged (as pf_test_judged leaves it), then the fabric, then the
 * whole run. */
static void judge(struct pf_run *run)
{
    pf_test_judged(run);
    pf_verdict_fabric(run);
    pf_verdict_finish(run);
}

Test(fabric_checks, peer_timeout_is_infrastructure_exit_3)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    run->coll.fault.err = PF_ERR_TIMEOUT;
    run->coll.fault.reason = PF_R_PeerTimeout;
    snprintf(run->coll.fault.msg, sizeof(run->coll.fault.msg), "rank 3 never came");
    judge(run);
    const struct pf_check *c = pf_test_check(run, "collective");
    cr_assert_not_null(c);
    cr_assert_eq(c->status, PF_FAIL);
    cr_assert_eq(c->reason, PF_R_PeerTimeout);
    cr_assert_str_eq(c->condition, "EFAFabricReady");
    cr_assert_str_eq(c->message, "rank 3 never came");
    cr_assert(strstr(c->remedy, "security group"));
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_INFRA);
    free(run);
}

/* A survivor of a lost peer was not judged: exit 3 (the job still does
 * not start), never status=fail or a taint on its healthy node. */
Test(fabric_checks, peer_lost_is_infrastructure_exit_3)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    run->coll.fault.err = PF_ERR_LOST;
    run->coll.fault.reason = PF_R_PeerLost;
    judge(run);
    cr_assert_eq(pf_test_check(run, "collective")->reason, PF_R_PeerLost);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_INFRA);
    cr_assert_eq(run->verdict.cls, PF_CLASS_INFRA);
    cr_assert_str_eq(pf_class_status_label(run->verdict.cls), "error");
    cr_assert_not(pf_class_may_taint(run->verdict.cls));
    free(run);
}

/* Wrong elements with nobody singled out: the run fails as a group (the
 * job does not start), no node is labelled fail or tainted. */
Test(fabric_checks, wrong_elements_not_localised_blame_nobody)
{
    struct pf_run *run = ran("host", "efa", 50, 2);
    run->coll.rows[0].ip_wrong = 7;
    pf_sweep_summarize(&run->coll);
    judge(run);
    const struct pf_check *c = pf_test_check(run, "data");
    cr_assert_not_null(c);
    cr_assert_eq(c->reason, PF_R_DataCorruptionNotLocalised);
    cr_assert(strstr(c->message, "7 wrong elements"), "%s", c->message);
    cr_assert(strstr(c->message, "no node singled out, none blamed"), "%s", c->message);
    /* speed is judged apart from the data (no floor here: a pass) */
    cr_assert_not_null(pf_test_check(run, "busbw"));
    cr_assert_eq(pf_test_check(run, "busbw")->status, PF_PASS);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
    cr_assert_eq(run->verdict.cls, PF_CLASS_GROUP);
    cr_assert_not(pf_class_may_taint(run->verdict.cls));
    free(run);
}

/* Localised: the corrupting rank's node fails and names itself (rank, pod,
 * node); every other node names it and is not blamed (class peer). */
Test(fabric_checks, localised_corruption_names_rank_pod_and_node)
{
    static struct pf_peer peers[3] = {
        { .rank = 0, .host = "10.0.0.10", .pod = "train-0", .node = "node-a" },
        { .rank = 1, .host = "10.0.0.11", .pod = "train-1", .node = "node-b" },
        { .rank = 2, .host = "10.0.0.12", .pod = "train-2", .node = "node-c" },
    };
    static int culprit = 2;

    for (int self = 0; self < 3; self++) {
        struct pf_run *run = ran("host", "efa", 50, 3);
        run->coll.rows[0].ip_wrong = 7;
        pf_sweep_summarize(&run->coll);
        run->coll.roster.world = 3;
        run->coll.roster.list = peers;
        run->coll.roster.bootstrap = PF_BOOT_K8S;
        snprintf(run->coll.strag.kind, sizeof(run->coll.strag.kind), "data");
        snprintf(run->coll.strag.method, sizeof(run->coll.strag.method), "pairwise");
        run->coll.strag.self = self;
        run->coll.strag.culprits = &culprit;
        run->coll.strag.nculprits = 1;
        judge(run);
        if (self == 2) {
            pf_test_check_says(run, "data", PF_R_DataCorruption,
                               "this node (rank 2, pod train-2, node-c, "
                               "10.0.0.12) corrupts data");
            cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
            cr_assert(pf_class_may_taint(run->verdict.cls));
        } else {
            pf_test_check_says(run, "data", PF_R_PeerDataCorruption,
                               "rank 2 (pod train-2, node-c, 10.0.0.12) "
                               "corrupts data, not this node");
            cr_assert_eq(run->verdict.exit_code, PF_EXIT_PEER);
            cr_assert_not(pf_class_may_taint(run->verdict.cls));
        }
        free(run);
    }
}

Test(fabric_checks, fallback_provider_warns_and_has_no_catalog_floor)
{
    struct pf_run *run = ran("host", "tcp;ofi_rxm", 0.5, 2);
    run->instance = &cpu_type;                    /* floor 5 GB/s at 2 */
    judge(run);
    cr_assert_eq(pf_test_check(run, "fabric_provider")->reason, PF_R_ProviderFallback);
    cr_assert_eq(pf_test_check(run, "fabric_provider")->status, PF_WARN);
    cr_assert_eq(pf_test_check(run, "busbw")->status, PF_PASS);
    cr_assert(strstr(pf_test_check(run, "busbw")->message,
                     "no floor: provider tcp;ofi_rxm is not EFA"),
              "%s", pf_test_check(run, "busbw")->message);
    cr_assert_eq(run->verdict.overall, PF_WARN);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PASS);
    free(run);
}

Test(fabric_checks, catalog_floor_by_node_count)
{
    struct pf_run *run = ran("nccl", "efa", 250, 2);
    run->instance = &gpu_type;                    /* 300 at 2 nodes */
    judge(run);
    const struct pf_check *c = pf_test_check(run, "busbw");
    cr_assert_eq(c->reason, PF_R_BandwidthBelowThreshold);
    cr_assert(strstr(c->message, "busbw 250.00 GB/s at 1000000000 B is "
                                 "below"), "%s", c->message);
    cr_assert(strstr(c->message, "floor 300.00 GB/s from the largest size "
                                 "(catalog floor for p5.48xlarge at 2 "
                                 "node(s))"), "%s", c->message);
    /* Nobody singled out: the job is stopped, no node is blamed. */
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
    cr_assert_eq(run->verdict.cls, PF_CLASS_GROUP);
    cr_assert_str_eq(pf_class_status_label(run->verdict.cls), "error");
    cr_assert_not(pf_class_may_taint(run->verdict.cls));
    free(run);

    run = ran("nccl", "efa", 350, 2);
    run->instance = &gpu_type;
    judge(run);
    cr_assert_eq(pf_test_check(run, "busbw")->status, PF_PASS);
    cr_assert(strstr(pf_test_check(run, "busbw")->message, "floor 300.00 GB/s"));
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PASS);
    free(run);
}

Test(fabric_checks, gpu_floor_does_not_judge_the_host_engine)
{
    struct pf_run *run = ran("host", "efa", 10, 2);
    run->instance = &gpu_type;
    judge(run);
    cr_assert_eq(pf_test_check(run, "busbw")->status, PF_PASS);
    cr_assert(strstr(pf_test_check(run, "busbw")->message, "measure the nccl engine"),
              "%s", pf_test_check(run, "busbw")->message);
    free(run);
}

Test(fabric_checks, min_busbw_overrides_everything)
{
    struct pf_run *run = ran("host", "tcp;ofi_rxm", 0.5, 1);
    run->cfg.min_busbw_gbps = 2;
    judge(run);
    /* one node: every rank is here, so is the fault (class fabric) */
    pf_test_check_says(run, "busbw", PF_R_NodeBandwidthBelowThreshold,
                       "below the floor 2.00 GB/s from the largest size "
                       "(--min-busbw-gbps)");
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
    cr_assert(pf_class_may_taint(run->verdict.cls));
    free(run);

    run = ran("host", "tcp;ofi_rxm", 0.5, 2);     /* two nodes: nobody */
    run->cfg.min_busbw_gbps = 2;
    judge(run);
    cr_assert_eq(pf_test_check(run, "busbw")->reason, PF_R_BandwidthBelowThreshold,
                 "%s", pf_test_check(run, "busbw")->message);
    cr_assert_not(pf_class_may_taint(run->verdict.cls));
    free(run);
}

Test(fabric_checks, one_rank_has_no_bus_to_judge)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;

    /* One rank copying 1 GB in 1 ms: busbw 0 as in nccl-tests, and no
     * floor can pass or fail it. */
    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "host");
    c->engine_kind = PF_ENGINE_HOST;
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "efa");
    c->nranks = c->nnodes = 1;
    c->nrows = 1;
    pf_sweep_fill_row(&c->rows[0], 1000000000ull, 1, 0.001, 0.001, 0, 0);
    pf_sweep_summarize(c);
    cr_assert_float_eq(c->rows[0].oop_algbw, 1000.0, 1e-9);
    cr_assert_float_eq(c->peak_busbw, 0.0, 1e-12);
    run->cfg.min_busbw_gbps = 2;
    judge(run);
    const struct pf_check *b = pf_test_check(run, "busbw");
    cr_assert_eq(b->status, PF_SKIP);
    cr_assert_eq(b->reason, PF_R_NotApplicable);
    cr_assert(strstr(b->message, "one rank: the all_reduce moved nothing "
                                 "between ranks"), "%s", b->message);
    cr_assert_null(pf_test_check(run, "data"));      /* no wrong element, no row */
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PASS);
    free(run);
}

/* A sweep of several sizes: busbw grows with the message size. */
static struct pf_run *swept(double busbw_at_64m, double busbw_at_1g, int rows)
{
    struct pf_run *run = ran("nccl", "efa", busbw_at_64m, 2);
    struct pf_coll *c = &run->coll;
    uint64_t sizes[] = { 64ull << 20, 256ull << 20, 1ull << 30 };
    double bw[] = { busbw_at_64m, (busbw_at_64m + busbw_at_1g) / 2, busbw_at_1g };

    c->nrows = rows;
    for (int i = 0; i < rows; i++) {
        double t = (double)sizes[i] / 1e9 * pf_busbw_factor(c->nranks) / bw[i];
        pf_sweep_fill_row(&c->rows[i], sizes[i], c->nranks, t, t, 0, 0);
    }
    pf_sweep_summarize(c);
    run->instance = &gpu_type;
    gpu_type.floors[1].from_bytes = 1ull << 30;
    return run;
}

/* The p5 case of the issue: healthy at GiB sizes, below the large-message
 * floor at 64 MiB. Judged at 1 GiB only. */
Test(fabric_checks, floor_is_judged_only_from_its_message_size)
{
    struct pf_run *run = swept(271, 335, 3);
    judge(run);
    const struct pf_check *c = pf_test_check(run, "busbw");
    cr_assert_eq(c->status, PF_PASS, "%s", c->message);
    cr_assert(strstr(c->message, "busbw 335.00 GB/s at 1 GiB"), "%s", c->message);
    cr_assert(strstr(c->message, "floor 300.00 GB/s from 1 GiB"), "%s", c->message);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PASS);
    free(run);

    run = swept(271, 280, 3);                 /* really slow at 1 GiB */
    judge(run);
    pf_test_check_says(run, "busbw", PF_R_BandwidthBelowThreshold,
                       "busbw 280.00 GB/s at 1 GiB");
    free(run);
    gpu_type.floors[1].from_bytes = 0;
}

/* -e 64M with a floor that holds from 1 GiB: neither pass nor fail. */
Test(fabric_checks, sweep_below_the_floor_size_is_not_judged)
{
    struct pf_run *run = swept(100, 100, 1);  /* 64 MiB only, far below */
    judge(run);
    const struct pf_check *c = pf_test_check_says(
        run, "busbw", PF_R_BandwidthNotJudged,
        "bandwidth not judged: largest size 64 MiB below the floor's size 1 GiB");
    cr_assert_eq(c->status, PF_WARN);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PASS);
    cr_assert_eq(run->verdict.cls, PF_CLASS_WARN);
    free(run);
    gpu_type.floors[1].from_bytes = 0;
}

/* The default sweep reaches the floor's size; -e is the user's word. */
Test(fabric_checks, default_sweep_reaches_the_floor_size)
{
    struct pf_config cfg = { .min_bytes = 8 };
    struct pf_floor_rule rule = { .gbps = 300, .from_bytes = 1ull << 30 };
    struct pf_floor_rule none = { 0 };

    cr_assert_eq(pf_sweep_max_bytes(&cfg, &rule), 1ull << 30);
    cr_assert_eq(pf_sweep_max_bytes(&cfg, &none), 64ull << 20);
    rule.from_bytes = 1 << 20;
    cr_assert_eq(pf_sweep_max_bytes(&cfg, &rule), 64ull << 20);
    cfg.max_bytes = 64ull << 20;
    rule.from_bytes = 1ull << 30;
    cr_assert_eq(pf_sweep_max_bytes(&cfg, &rule), 64ull << 20);
    cfg.max_bytes = 0;
    cfg.min_bytes = 2ull << 30;
    cr_assert_eq(pf_sweep_max_bytes(&cfg, &none), 2ull << 30);
}

/* Faults found together: among 8 nodes rank 2 is slow (its links below
 * the 2-node floor) and rank 5 corrupts data. Each culprit fails for its
 * own fault, the six others warn naming both (class peer, exit 4): the
 * slow node is judged although another corrupted data. */
static struct pf_run *mixed(int self, double ring_busbw)
{
    static struct pf_peer peers[8];
    static int culprits[2] = { 2, 5 };
    static unsigned kinds[2] = { PF_LINK_SLOW, PF_LINK_DATA };
    struct pf_run *run = ran("host", "efa", ring_busbw, 8);

    for (int r = 0; r < 8; r++) {
        peers[r].rank = r;
        snprintf(peers[r].host, sizeof(peers[r].host), "10.0.0.%d", 10 + r);
    }
    run->coll.nranks = 8;
    run->coll.rows[0].oop_wrong = 40;
    pf_sweep_summarize(&run->coll);
    run->cfg.min_busbw_gbps = 10;
    run->coll.roster.world = 8;
    run->coll.roster.list = peers;
    run->coll.roster.bootstrap = PF_BOOT_STATIC;
    snprintf(run->coll.strag.method, sizeof(run->coll.strag.method),
             "pairwise");
    snprintf(run->coll.strag.kind, sizeof(run->coll.strag.kind),
             "slow+data");
    snprintf(run->coll.strag.note, sizeof(run->coll.strag.note),
             "pairwise: rank 2's links are both slow; rank 5's links both "
             "carry wrong data");
    run->coll.strag.self = self;
    run->coll.strag.culprits = culprits;
    run->coll.strag.culprit_bad = kinds;
    run->coll.strag.nculprits = 2;
    judge(run);
    return run;
}

Test(fabric_checks, slow_and_corrupt_nodes_are_both_named)
{
    /* the ring below its floor (5 < 10) or above it (50): the same */
    for (int above = 0; above < 2; above++)
        for (int self = 0; self < 8; self++) {
            struct pf_run *run = mixed(self, above ? 50 : 5);
            const struct pf_check *d = pf_test_check(run, "data"), *b = pf_test_check(run, "busbw");
            cr_assert_not_null(d);
            cr_assert_not_null(b, "rank %d: busbw judged despite wrong data", self);
            if (self == 2) {
                cr_assert_eq(b->reason, PF_R_StragglerNode, "%s", b->message);
                cr_assert_eq(d->reason, PF_R_PeerDataCorruption);
                cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
                cr_assert(pf_class_may_taint(run->verdict.cls));
            } else if (self == 5) {
                cr_assert_eq(d->reason, PF_R_DataCorruption, "%s", d->message);
                cr_assert_eq(b->reason, PF_R_SlowPeer);
                cr_assert_eq(run->verdict.exit_code, PF_EXIT_FAIL);
            } else {
                cr_assert_eq(b->reason, PF_R_SlowPeer, "rank %d: %s", self,
                             b->message);
                cr_assert(strstr(b->message, "rank 2 (10.0.0.12) is the "
                                 "straggler, not this node"), "%s", b->message);
                cr_assert(strstr(b->remedy, "fails with StragglerNode;"),
                          "%s", b->remedy);
                cr_assert_eq(d->reason, PF_R_PeerDataCorruption);
                cr_assert(strstr(d->message, "rank 5 (10.0.0.15) corrupts "
                                 "data, not this node"), "%s", d->message);
                cr_assert_eq(run->verdict.exit_code, PF_EXIT_PEER,
                             "rank %d exit %d", self, run->verdict.exit_code);
                cr_assert_eq(run->verdict.cls, PF_CLASS_PEER);
            }
            free(run);
        }
}

/* A ring below its floor with only a corrupting node singled out: the
 * miss is put down to it, not the group; without anyone singled out the
 * run fails as a group. */
Test(fabric_checks, ring_miss_with_a_culprit_is_not_a_group_failure)
{
    struct pf_run *run = mixed(0, 5);
    run->coll.strag.culprit_bad[0] = 0;   /* rank 2 not slow after all */
    run->verdict.n = 0;
    judge(run);
    pf_test_check_says(run, "busbw", PF_R_SlowPeer,
                       "singled out by the pairwise test, not this node "
                       "(rank 0)");
    cr_assert(strstr(pf_test_check(run, "busbw")->remedy, "fails with StragglerNode;"),
              "%s", pf_test_check(run, "busbw")->remedy);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PEER);
    run->coll.strag.culprit_bad[0] = PF_LINK_SLOW;
    free(run);
}

/* The ring is judged at its own node count: a ring under the 2-node floor
 * but over the 8-node one passes when every node's links passed. */
Test(fabric_checks, ring_judged_at_its_node_count)
{
    static struct pf_instance curve = {
        .name = "p5.48xlarge", .accel_kind = "gpu", .nfloors = 2,
        .floors = { { .nodes = 2, .busbw_gbps = 300, .verified = true },
                    { .nodes = 8, .busbw_gbps = 200, .verified = true } },
    };
    struct pf_run *run = ran("nccl", "efa", 250, 8);

    run->instance = &curve;
    snprintf(run->coll.strag.method, sizeof(run->coll.strag.method),
             "pairwise");
    snprintf(run->coll.strag.note, sizeof(run->coll.strag.note),
             "pairwise: every link good");
    judge(run);
    cr_assert_eq(pf_test_check(run, "busbw")->status, PF_PASS, "%s",
                 pf_test_check(run, "busbw")->message);
    cr_assert(strstr(pf_test_check(run, "busbw")->message, "floor 200.00 GB/s"), "%s",
              pf_test_check(run, "busbw")->message);
    cr_assert_eq(run->verdict.exit_code, PF_EXIT_PASS);
    free(run);
    /* at 2 nodes the same ring misses: nobody singled out, group */
    run = ran("nccl", "efa", 250, 2);
    run->instance = &curve;
    judge(run);
    cr_assert_eq(pf_test_check(run, "busbw")->reason, PF_R_BandwidthBelowThreshold,
                 "%s", pf_test_check(run, "busbw")->message);
    cr_assert_eq(run->verdict.cls, PF_CLASS_GROUP);
    free(run);
}
