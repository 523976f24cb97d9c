/* Per-NIC diagnosis on the fixture trees: counters rewritten between the
 * harness's before and after reads (nic_fixture.h), then the verdict. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/collective.h"
#include "collective/nics.h"
#include "collective/sweep.h"
#include "config/config.h"
#include "nic_fixture.h"
#include "probe/probe.h"
#include "verdict/verdict.h"

#include "run_fixture.h"

struct nic_case {
    char root[512];
    struct pf_run *run;
    struct pf_nic_watch w;
};

/* Probe a private copy of fixture fx and start the sweep's window. */
static void start(struct nic_case *k, const char *fx)
{
    k->run = calloc(1, sizeof(*k->run));
    cr_assert(k->run);
    pf_test_fixture_copy(fx, k->root, sizeof(k->root));
    pf_test_cfg_root(&k->run->cfg, k->root);
    pf_probe_efa(&k->run->cfg, &k->run->node);
    memset(&k->run->coll.nics, 0, sizeof(k->run->coll.nics));
    pf_nics_begin(k->run, &k->w);
}

/* Every NIC of the node moved bytes (tx and rx each), except skip. */
static void traffic(struct nic_case *k, uint64_t bytes, int skip)
{
    for (int i = 0; i < k->run->node.efa_count; i++) {
        if (i == skip)
            continue;
        pf_test_counter_add(k->root, k->run->node.efa[i].name, "tx_bytes",
                            bytes);
        pf_test_counter_add(k->root, k->run->node.efa[i].name, "rx_bytes",
                            bytes);
    }
}

/* The node judged (as pf_test_judged leaves it), then the fabric, then the
 * whole run. */
static void judge_run(struct pf_run *run)
{
    pf_test_judged(run);
    pf_verdict_fabric(run);
    pf_verdict_finish(run);
}

/* End the window, as a 2-node NCCL run over aws-ofi-nccl that finished,
 * and judge it. */
static void judge(struct nic_case *k, const char *engine)
{
    struct pf_coll *c = &k->run->coll;

    pf_nics_end(k->run, &k->w, "sweep", -1);
    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "%s", engine);
    c->engine_kind = strcmp(engine, "nccl") ? PF_ENGINE_HOST : PF_ENGINE_NCCL;
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "efa");
    snprintf(c->fabric.transport, sizeof(c->fabric.transport),
             "NET/Libfabric/GDRDMA");
    c->fabric.net_plugin_loaded = true;
    c->nnodes = 2;
    c->nranks = 16;
    c->nrows = 1;
    pf_sweep_fill_row(&c->rows[0], 1 << 20, c->nranks, 1e-3, 1e-3, 0, 0);
    pf_sweep_summarize(c);
    pf_nics_spread(k->run);
    judge_run(k->run);
}

static void done(struct nic_case *k)
{
    pf_test_fixture_drop(k->root);
    free(k->run);
}

static const struct pf_check *find(const struct pf_run *run, const char *name)
{
    const struct pf_check *c = pf_test_check(run, name);

    cr_assert_not_null(c, "no check %s", name);
    return c;
}

/* nic_traffic is not judged, and says why. */
static void traffic_not_judged(const struct pf_run *run, const char *why)
{
    const struct pf_check *t = find(run, "nic_traffic");

    cr_assert_eq(t->status, PF_SKIP, "%s", t->message);
    cr_assert(strstr(t->message, why), "%s", t->message);
}

Test(nic_checks, one_idle_nic_of_32_is_named)
{
    struct nic_case k;
    const struct pf_check *t;

    start(&k, "p5.48xlarge");
    cr_assert_eq(k.run->node.efa_count, 32);
    traffic(&k, 200u << 20, 11);       /* rdmap27s27 moves nothing */
    judge(&k, "nccl");
    cr_assert(k.run->coll.nics.spread, "%s", k.run->coll.nics.spread_note);
    t = pf_test_check_says(k.run, "nic_traffic", PF_R_EFANICIdle,
                           "1 of 32 NICs idle during the sweep: "
                           "rdmap27s27 0 B (0.0%)");
    cr_assert_eq(t->status, PF_FAIL, "%s", t->message);
    cr_assert_eq(k.run->verdict.headline, PF_R_EFANICIdle);
    cr_assert_eq(k.run->verdict.exit_code, 1);
    cr_assert_eq(find(k.run, "nic_errors")->status, PF_PASS);
    done(&k);
}

Test(nic_checks, a_nic_far_below_its_siblings_is_idle_one_above_is_not)
{
    struct nic_case k;
    const struct pf_check *t;

    start(&k, "p5en.48xlarge");
    traffic(&k, 100u << 20, 3);
    /* rdmap19s27 moves 5% of the median: idle; rdmap20s27 50%: fine */
    pf_test_counter_add(k.root, "rdmap19s27", "tx_bytes", 10u << 20);
    pf_test_counter_add(k.root, "rdmap20s27", "tx_bytes", 0);
    pf_test_counter_add(k.root, "rdmap20s27", "rx_bytes", 0);
    judge(&k, "nccl");
    t = pf_test_check_says(k.run, "nic_traffic", PF_R_EFANICIdle,
                           "1 of 16 NICs idle");
    cr_assert(strstr(t->message, "rdmap19s27 10.5 MB"), "%s", t->message);
    cr_assert_null(strstr(t->message, "rdmap20s27"), "%s", t->message);
    done(&k);
}

Test(nic_checks, all_nics_busy_pass)
{
    struct nic_case k;
    const struct pf_check *t;

    start(&k, "trn1.32xlarge");
    cr_assert_eq(k.run->node.efa_count, 8);
    traffic(&k, 50u << 20, -1);
    judge(&k, "nccl");
    t = find(k.run, "nic_traffic");
    cr_assert_eq(t->status, PF_PASS, "%s", t->message);
    cr_assert(strstr(t->message, "all 8 NICs carried traffic"), "%s",
              t->message);
    cr_assert_eq(k.run->verdict.exit_code, 0);
    done(&k);
}

Test(nic_checks, idleness_is_not_judged_where_nothing_spreads)
{
    struct nic_case k;

    /* one node: NCCL's traffic never reaches the NICs */
    start(&k, "p5.48xlarge");
    traffic(&k, 200u << 20, 0);
    k.run->coll.nnodes = 1;
    pf_nics_end(k.run, &k.w, "sweep", -1);
    k.run->coll.ran = true;
    k.run->coll.nrows = 1;
    snprintf(k.run->coll.engine, sizeof(k.run->coll.engine), "nccl");
    k.run->coll.engine_kind = PF_ENGINE_NCCL;
    pf_nics_spread(k.run);
    pf_test_judged(k.run);
    pf_verdict_fabric(k.run);
    traffic_not_judged(k.run, "one node");
    done(&k);

    /* 2 nodes, but too few bytes per NIC to judge shares */
    start(&k, "p5.48xlarge");
    traffic(&k, 1u << 20, 0);
    judge(&k, "nccl");
    traffic_not_judged(k.run, "below nic_idle_min_bytes (4.2 MB)");
    done(&k);

    /* the host engine over one endpoint does not drive the other NICs */
    start(&k, "trn1.32xlarge");
    traffic(&k, 50u << 20, 2);
    judge(&k, "host");
    traffic_not_judged(k.run, "striped over 0 of the node's 8");
    done(&k);
}

Test(nic_checks, nic_with_retransmit_timeouts_is_named_with_the_counter)
{
    struct nic_case k;
    const struct pf_check *e;

    start(&k, "p5.48xlarge");
    traffic(&k, 200u << 20, -1);
    pf_test_counter_add(k.root, "rdmap40s27", "retrans_timeout_events", 3);
    judge(&k, "nccl");
    e = pf_test_check_says(k.run, "nic_errors", PF_R_EFANICErrors,
                           "1 of 32 NICs counted errors during the run "
                           "(more than nic_max_errors 0): rdmap40s27 "
                           "retrans_timeout_events +3 (first in the sweep)");
    cr_assert_eq(e->status, PF_FAIL, "%s", e->message);
    cr_assert_eq(k.run->verdict.headline, PF_R_EFANICErrors);
    cr_assert_eq(k.run->verdict.exit_code, 1);
    done(&k);

    /* within nic_max_errors: a pass */
    start(&k, "p5.48xlarge");
    k.run->cfg.nic_max_errors = 5;
    traffic(&k, 200u << 20, -1);
    pf_test_counter_add(k.root, "rdmap40s27", "retrans_timeout_events", 3);
    judge(&k, "nccl");
    cr_assert_eq(find(k.run, "nic_errors")->status, PF_PASS);
    done(&k);
}

Test(nic_checks, errors_in_a_pairwise_phase_name_the_partner)
{
    struct nic_case k;

    start(&k, "p5en.48xlarge");
    traffic(&k, 100u << 20, -1);
    pf_nics_end(k.run, &k.w, "sweep", -1);
    pf_nics_begin(k.run, &k.w);
    pf_test_counter_add(k.root, "rdmap17s27", "unresponsive_remote_events", 1);
    pf_test_counter_add(k.root, "rdmap17s27", "rdma_write_wr_err", 2);
    pf_nics_end(k.run, &k.w, "pairwise", 3);
    k.w.on = false;                    /* judge() must not add a window */
    judge(&k, "nccl");
    cr_assert_eq(k.run->coll.nics.nwin, 2);
    pf_test_check_says(k.run, "nic_errors", PF_R_EFANICErrors,
                       "rdmap17s27 rdma_write_wr_err +2, "
                       "unresponsive_remote_events +1 (first in the pairwise "
                       "with rank 3)");
    done(&k);
}

Test(nic_checks, old_driver_missing_counters_is_reported_and_nothing_fails)
{
    struct nic_case k;
    const struct pf_check *e, *t;

    start(&k, "p5-olddriver");
    traffic(&k, 200u << 20, -1);
    judge(&k, "nccl");
    e = find(k.run, "nic_errors");
    cr_assert_eq(e->status, PF_PASS, "%s", e->message);
    cr_assert(strstr(e->message, "absent on this driver: retrans_bytes, "
                     "retrans_pkts, retrans_timeout_events, "
                     "unresponsive_remote_events, impaired_remote_conn_events"),
              "%s", e->message);
    t = find(k.run, "nic_traffic");
    cr_assert_eq(t->status, PF_PASS, "%s", t->message);
    cr_assert_eq(k.run->verdict.exit_code, 0);
    done(&k);

    start(&k, "p5-nocounters");
    judge(&k, "nccl");
    cr_assert_eq(find(k.run, "nic_errors")->status, PF_SKIP);
    t = find(k.run, "nic_traffic");
    cr_assert_eq(t->status, PF_SKIP);
    cr_assert(strstr(t->message, "no ports/*/hw_counters"), "%s", t->message);
    cr_assert_eq(k.run->verdict.exit_code, 0);
    done(&k);
}

Test(nic_checks, a_failed_collective_judges_no_nic)
{
    struct nic_case k;

    start(&k, "p5.48xlarge");
    pf_test_counter_add(k.root, "rdmap16s27", "unresponsive_remote_events", 9);
    judge(&k, "nccl");
    k.run->verdict.n = 0;
    k.run->coll.fault.err = PF_ERR_LOST;
    k.run->coll.fault.reason = PF_R_PeerLost;
    judge_run(k.run);
    cr_assert_eq(k.run->verdict.headline, PF_R_PeerLost);
    cr_assert_eq(k.run->verdict.exit_code, 3);
    for (int i = 0; i < k.run->verdict.n; i++)
        cr_assert_neq(k.run->verdict.checks[i].reason, PF_R_EFANICErrors);
    done(&k);
}

/* `node`: errors since boot are a warning with the counters' age bound. */
Test(nic_checks, node_warns_of_errors_since_boot)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    char root[512];
    const struct pf_check *b;

    pf_test_fixture_copy("p5-booterrors", root, sizeof(root));
    pf_test_cfg_root(&run->cfg, root);
    snprintf(run->cfg.instance_type, sizeof(run->cfg.instance_type),
             "p5.48xlarge");
    cr_assert_eq(pf_probe(run, (char[PF_ERRLEN]){ 0 }), PF_OK);
    pf_verdict_node(run);
    pf_verdict_finish(run);
    b = find(run, "efa_nic_errors");
    cr_assert_eq(b->status, PF_WARN, "%s", b->message);
    cr_assert_eq(b->reason, PF_R_EFANICErrorsSinceBoot);
    cr_assert(strstr(b->message, "1 of 32 EFA device(s) counted errors since "
                     "they came up, at most the host's uptime of 3.2 d ago: "
                     "rdmap19s27 rx_drops 2, retrans_timeout_events 7"),
              "%s", b->message);
    cr_assert_str_eq(b->condition, "EFADevicesReady");

    run->verdict.n = 0;
    run->cfg.nic_boot_max_errors = 9;
    pf_verdict_node(run);
    cr_assert_eq(find(run, "efa_nic_errors")->status, PF_PASS);
    pf_test_fixture_drop(root);
    free(run);
}

/* Host engine rails (nic_speed), filled as the harness fills them. */
static struct pf_run *rails_run(int self, const double *gbps, int n)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;

    pf_config_defaults(&run->cfg);
    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "host");
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "tcp;ofi_rxm");
    c->fabric.provider_is_fallback = true;
    c->nnodes = c->nranks = 4;
    c->nrows = 1;
    c->strag.self = self;
    pf_sweep_fill_row(&c->rows[0], 1 << 20, 4, 1e-3, 1e-3, 0, 0);
    pf_sweep_summarize(c);
    run->coll.roster.world = 4;
    run->coll.roster.list = calloc(4, sizeof(*run->coll.roster.list));
    for (int r = 0; r < 4; r++)
        snprintf(run->coll.roster.list[r].host, sizeof(run->coll.roster.list[r].host),
                 "10.254.70.%d", 10 + r);
    c->nics.nrails = n;
    for (int r = 0; r < n; r++) {
        snprintf(c->nics.rails[r].nic, sizeof(c->nics.rails[r].nic),
                 "10.254.%d.%d", 70 + r, 10 + self);
        c->nics.rails[r].gbps = gbps[r];
        c->nics.rails[r].suspect = -1;
        c->nics.rails[r].slow = gbps[r] < 0.5 * 0.2;
    }
    return run;
}

static void free_rails_run(struct pf_run *run)
{
    free(run->coll.roster.list);
    free(run);
}

Test(nic_checks, alike_rails_pass)
{
    double g[2] = { 0.21, 0.19 };
    struct pf_run *run = rails_run(0, g, 2);
    const struct pf_check *s;

    judge_run(run);
    s = find(run, "nic_speed");
    cr_assert_eq(s->status, PF_PASS, "%s", s->message);
    cr_assert_str_eq(s->message, "2 NICs alike: 0.190..0.210 GB/s per rail "
                     "in the ring (slow below 50% of the median)");
    cr_assert_eq(run->verdict.exit_code, 0);
    free_rails_run(run);
}

Test(nic_checks, slow_rail_localised_here_fails_and_elsewhere_warns)
{
    double g[2] = { 0.20, 0.02 };
    struct pf_run *run = rails_run(2, g, 2);
    const struct pf_check *s;

    run->coll.nics.rails[1].suspect = 2;
    run->coll.nics.rails_localised = true;
    snprintf(run->coll.nics.rail_note, sizeof(run->coll.nics.rail_note),
             "rail 1: pairwise: rank 2's links are both slow");
    judge_run(run);
    s = find(run, "nic_speed");
    cr_assert_eq(s->reason, PF_R_EFANICSlow, "%s", s->message);
    cr_assert_str_eq(s->message, "NIC 10.254.71.12 (rail 1) of this node "
                     "(rank 2) is slow: rails 10.254.70.12 0.200, "
                     "10.254.71.12 0.020 GB/s in the ring; rail 1: pairwise: "
                     "rank 2's links are both slow");
    cr_assert_eq(run->verdict.exit_code, 1);
    free_rails_run(run);

    run = rails_run(0, g, 2);
    run->coll.nics.rails[1].suspect = 2;
    judge_run(run);
    s = find(run, "nic_speed");
    cr_assert_eq(s->status, PF_WARN);
    cr_assert_eq(s->reason, PF_R_SlowPeer);
    cr_assert(strstr(s->message, "rank 2's NIC on rail 1 is slow, not this "
                     "node's (rank 0)"), "%s", s->message);
    cr_assert(strstr(s->remedy, "report fails with EFANICSlow;"), "%s",
              s->remedy);
    cr_assert_eq(run->verdict.exit_code, 4);
    free_rails_run(run);
}

Test(nic_checks, slow_rail_not_localised_fails_without_claiming_whose)
{
    double g[3] = { 0.20, 0.21, 0.03 };
    struct pf_run *run = rails_run(1, g, 3);
    const struct pf_check *s;

    snprintf(run->coll.nics.rail_note, sizeof(run->coll.nics.rail_note),
             "not localised per rail: 2 ranks share one link");
    judge_run(run);
    s = find(run, "nic_speed");
    cr_assert_eq(s->reason, PF_R_EFANICSlow, "%s", s->message);
    cr_assert(strstr(s->message, "rail 2 (NIC 10.254.72.11 here) is slow in "
                     "the ring"), "%s", s->message);
    cr_assert(strstr(s->message, "whose NIC is not known"), "%s", s->message);
    free_rails_run(run);
}

Test(nic_checks, one_rail_has_no_speed_check)
{
    double g[1] = { 0.2 };
    struct pf_run *run = rails_run(0, g, 1);

    judge_run(run);
    for (int i = 0; i < run->verdict.n; i++)
        cr_assert_str_neq(run->verdict.checks[i].name, "nic_speed");
    free_rails_run(run);
}
