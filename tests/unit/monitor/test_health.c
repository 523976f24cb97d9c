/* The monitor's judgement over counter fixtures that move between reads
 * (p5: 32 NICs, p5en: 16, an old driver without the Nitro v4 counters):
 * K bad reads in a row raise a fault (a counter rising, a port down, a
 * device gone alike), fewer raise nothing (a spike, one bad read), M good
 * ones clear. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/monitor.h"
#include "nic_fixture.h"
#include "probe/probe.h"
#include "unit_files.h"

#define K 3
#define M 5

struct world {
    char root[512];
    struct pf_config cfg;
    struct pf_node node;
    struct pf_mon_rules rules;
    struct pf_mon_health h;
    struct pf_mon_snap prev, cur;
    bool have_prev;
    double t;
    int expected;
};

static struct world *world(const char *fixture, int expected)
{
    struct world *w = calloc(1, sizeof(*w));
    char err[PF_ERRLEN];

    cr_assert(w);
    pf_test_fixture_copy(fixture, w->root, sizeof(w->root));
    pf_test_cfg_root(&w->cfg, w->root);
    cr_assert_eq(pf_mon_rules_parse(NULL, K, M, &w->rules, err), PF_OK, "%s",
                 err);
    w->expected = expected;
    w->t = 100;
    return w;
}

/* One interval of 1 s: read, judge. Returns the changes it made. */
static int tick(struct world *w)
{
    char err[PF_ERRLEN];

    memset(&w->node, 0, sizeof(w->node));
    pf_probe_efa(&w->cfg, &w->node);
    cr_assert_eq(pf_mon_read(w->root, &w->node, w->expected, &w->cur, err),
                 PF_OK, "%s", err);
    w->cur.t = w->t;
    w->t += 1;
    cr_assert_eq(pf_mon_judge(&w->h, &w->rules,
                              w->have_prev ? &w->prev : NULL, &w->cur, err),
                 PF_OK, "%s", err);
    pf_mon_snap_free(&w->prev);
    w->prev = w->cur;
    memset(&w->cur, 0, sizeof(w->cur));
    w->have_prev = true;
    return w->h.nchanges;
}

static void drop(struct world *w)
{
    pf_mon_snap_free(&w->prev);
    pf_mon_health_free(&w->h);
    pf_mon_rules_free(&w->rules);
    pf_test_fixture_drop(w->root);
    free(w);
}

static enum pf_reason condition(struct world *w, char *msg, size_t len)
{
    return pf_mon_condition(&w->h, msg, len);
}

/* n reads in which nothing changes. */
static void quiet(struct world *w, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert_eq(tick(w), 0, "read %d of %d changed something", i + 1, n);
}

/* n reads, before each of which counter of nic rose by `by`. */
static void rising(struct world *w, const char *nic, const char *counter,
                   uint64_t by, int n)
{
    for (int i = 0; i < n; i++) {
        pf_test_counter_add(w->root, nic, counter, by);
        tick(w);
    }
}

/* Device dev gone from sysfs (hidden beside it), or back (!gone). */
static void hide(const struct world *w, const char *dev, bool gone)
{
    char shown[1024], hidden[1024];

    snprintf(shown, sizeof(shown), "%s/sys/class/infiniband/%s", w->root, dev);
    snprintf(hidden, sizeof(hidden), "%s/sys/class/infiniband/.%s", w->root,
             dev);
    cr_assert_eq(gone ? rename(shown, hidden) : rename(hidden, shown), 0,
                 "%s", dev);
}

/* A fault (what) standing since the last read: K-1 reads change nothing
 * and the NICs stay healthy; the K-th read makes `changes` changes. */
static void raised_on_kth(struct world *w, int changes, const char *what)
{
    char msg[PF_ERRLEN];

    for (int i = 1; i < K; i++) {
        cr_assert_eq(tick(w), 0, "%s on read %d of %d: no change yet", what,
                     i, K);
        cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    }
    cr_assert_eq(tick(w), changes, "%s on read %d", what, K);
}

/* The state file of rdmap16s27's port says `state`. */
static void port_state(const struct world *w, const char *state)
{
    char path[1024];

    snprintf(path, sizeof(path),
             "%s/sys/class/infiniband/rdmap16s27/ports/1/state", w->root);
    pf_test_write_file(path, state);
}

Test(health, p5_all_quiet_is_healthy_every_nic_read)
{
    struct world *w = world("p5.48xlarge", 32);
    char msg[PF_ERRLEN];

    quiet(w, 4);
    cr_assert_eq(w->prev.n, 32);
    cr_assert_eq(w->h.n, 32);
    /* the device-level admin counters are read next to the port's */
    cr_assert(pf_mon_counter_find(&w->prev.nics[31], "no_completion_cmds", 0));
    cr_assert(pf_mon_counter_find(&w->prev.nics[31], "retrans_timeout_events",
                                  1));
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    cr_assert_str_eq(pf_class_condition_status(
                         pf_reason_class_of(PF_R_EFANICsHealthy)), "True");
    drop(w);
}

Test(health, retrans_timeouts_rising_k_intervals_name_the_nic)
{
    struct world *w = world("p5.48xlarge", 32);
    char msg[PF_ERRLEN];

    tick(w);
    for (int i = 1; i < K; i++) {
        pf_test_counter_add(w->root, "rdmap20s27", "retrans_timeout_events", 4);
        cr_assert_eq(tick(w), 0, "raised after %d bad intervals, K is %d", i,
                     K);
        cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    }
    pf_test_counter_add(w->root, "rdmap20s27", "retrans_timeout_events", 4);
    cr_assert_eq(tick(w), 1);
    cr_assert(w->h.changes[0].raised);
    cr_assert_eq(w->h.changes[0].reason, PF_R_EFANICErrorRate);
    cr_assert_str_eq(w->h.changes[0].nic, "rdmap20s27");
    cr_assert(strstr(w->h.changes[0].msg, "rdmap20s27: retrans_timeout_events "
                                           "rising at 4.0/s"),
              "%s", w->h.changes[0].msg);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICErrorRate);
    cr_assert(strstr(msg, "rdmap20s27"), "%s", msg);
    cr_assert_str_eq(pf_class_condition_status(
                         pf_reason_class_of(PF_R_EFANICErrorRate)), "False");
    /* still rising: the fault stands, no second Event */
    pf_test_counter_add(w->root, "rdmap20s27", "retrans_timeout_events", 4);
    cr_assert_eq(tick(w), 0);
    drop(w);
}

Test(health, a_single_spike_changes_nothing)
{
    struct world *w = world("p5.48xlarge", 32);
    char msg[PF_ERRLEN];

    tick(w);
    pf_test_counter_add(w->root, "rdmap30s27", "retrans_timeout_events", 500);
    pf_test_counter_add(w->root, "rdmap30s27", "rx_drops", 100000);
    cr_assert_eq(tick(w), 0);
    quiet(w, 2 * K);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

Test(health, rx_drops_below_100_per_s_are_not_bad)
{
    struct world *w = world("p5en.48xlarge", 16);
    char msg[PF_ERRLEN];

    tick(w);
    for (int i = 0; i < 2 * K; i++) {
        pf_test_counter_add(w->root, "rdmap16s27", "rx_drops", 90);
        cr_assert_eq(tick(w), 0);
    }
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    rising(w, "rdmap16s27", "rx_drops", 250, K);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICErrorRate);
    cr_assert(strstr(msg, "rx_drops rising at 250.0/s"), "%s", msg);
    drop(w);
}

Test(health, recovery_clears_after_m_good_intervals)
{
    struct world *w = world("p5en.48xlarge", 16);
    char msg[PF_ERRLEN];

    tick(w);
    rising(w, "rdmap17s27", "unresponsive_remote_events", 1, K);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICErrorRate);
    for (int i = 1; i < M; i++) {
        cr_assert_eq(tick(w), 0, "cleared after %d good intervals, M is %d",
                     i, M);
        cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICErrorRate);
    }
    cr_assert_eq(tick(w), 1);
    cr_assert(!w->h.changes[0].raised);
    cr_assert_eq(w->h.changes[0].reason, PF_R_EFANICRecovered);
    cr_assert_str_eq(w->h.changes[0].nic, "rdmap17s27");
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

Test(health, a_bad_interval_while_clearing_starts_the_count_again)
{
    struct world *w = world("p5en.48xlarge", 16);
    char msg[PF_ERRLEN];

    tick(w);
    rising(w, "rdmap18s27", "rdma_read_wr_err", 2, K);
    for (int i = 0; i < M - 1; i++)
        tick(w);
    rising(w, "rdmap18s27", "rdma_read_wr_err", 2, 1);
    quiet(w, M - 1);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICErrorRate);
    cr_assert_eq(tick(w), 1);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

Test(health, a_removed_device_is_named_after_k_reads_and_a_count_fault_too)
{
    struct world *w = world("p5.48xlarge", 32);
    char cmd[1024], msg[PF_ERRLEN];

    tick(w);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/sys/class/infiniband/rdmap40s27'",
             w->root);
    cr_assert_eq(system(cmd), 0);
    raised_on_kth(w, 2, "gone"); /* the NIC, and the node's count */
    cr_assert(w->h.changes[0].raised);
    cr_assert_eq(w->h.changes[0].reason, PF_R_EFANICDeviceGone);
    cr_assert_str_eq(w->h.changes[0].nic, "rdmap40s27");
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICDeviceGone);
    cr_assert(strstr(msg, "rdmap40s27"), "%s", msg);
    cr_assert_str_eq(w->h.changes[1].nic, "");
    cr_assert(strstr(w->h.changes[1].msg, "31 EFA devices, the instance "
                                          "type has 32"), "%s",
              w->h.changes[1].msg);
    drop(w);
}

/* The issue-37 case: a NIC missing from sysfs for one read (a driver
 * reset racing the read) comes back: nothing changed, the NIC was never
 * faulted, the read is noted as pending and no more. */
Test(health, a_device_missing_for_one_read_changes_nothing)
{
    struct world *w = world("p5.48xlarge", 32);
    char msg[PF_ERRLEN];

    quiet(w, 2);
    hide(w, "rdmap40s27", true);
    cr_assert_eq(tick(w), 0);
    bool noted = false;
    for (int i = 0; i < w->h.n; i++)
        if (!strcmp(w->h.nics[i].name, "rdmap40s27")) {
            cr_assert_not(w->h.nics[i].faulted);
            noted = strstr(w->h.nics[i].pending, "1 of 3") != NULL;
        }
    cr_assert(noted, "the bad read is noted as pending");
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    hide(w, "rdmap40s27", false);
    quiet(w, 2 * K);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

Test(health, devices_coming_up_late_after_boot_are_not_a_fault)
{
    /* p5en whose 16th device shows up only after K-1 reads (EFA coming up
     * late after boot): nothing raised. */
    struct world *w = world("p5en.48xlarge", 16);
    char msg[PF_ERRLEN];

    hide(w, "rdmap31s27", true);
    for (int i = 0; i < K - 1; i++) {
        cr_assert_eq(tick(w), 0);
        cr_assert_eq(w->prev.efa_count, 15);
    }
    hide(w, "rdmap31s27", false);
    quiet(w, 2 * K);
    cr_assert_eq(w->prev.efa_count, 16);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

Test(health, a_port_down_on_k_reads_is_a_fault_and_clears_after_m)
{
    struct world *w = world("p5.48xlarge", 32);
    char msg[PF_ERRLEN];

    tick(w);
    port_state(w, "1: DOWN\n");
    raised_on_kth(w, 1, "down");
    cr_assert_eq(w->h.changes[0].reason, PF_R_EFANICLinkDown);
    cr_assert(strstr(w->h.changes[0].msg, "1: DOWN"), "%s",
              w->h.changes[0].msg);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICLinkDown);
    port_state(w, "4: ACTIVE\n");
    quiet(w, M - 1);
    cr_assert_eq(tick(w), 1);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

/* A port down on K-1 reads, up on one, down again on K-1: the count starts
 * again, no fault ever. */
Test(health, a_port_flapping_short_of_k_reads_is_never_a_fault)
{
    struct world *w = world("p5.48xlarge", 32);
    char msg[PF_ERRLEN];

    tick(w);
    for (int round = 0; round < 3; round++) {
        port_state(w, "1: DOWN\n");
        for (int i = 1; i < K; i++)
            cr_assert_eq(tick(w), 0);
        port_state(w, "4: ACTIVE\n");
        cr_assert_eq(tick(w), 0);
    }
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICsHealthy);
    drop(w);
}

Test(health, remote_errors_on_most_nics_blame_nobody)
{
    struct world *w = world("p5en.48xlarge", 16);
    char dev[32], msg[PF_ERRLEN];

    tick(w);
    for (int i = 0; i < K; i++) {
        for (int d = 0; d < 12; d++) {
            snprintf(dev, sizeof(dev), "rdmap%ds27", 16 + d);
            pf_test_counter_add(w->root, dev, "retrans_timeout_events", 3);
        }
        tick(w);
    }
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFAFabricErrorsRising);
    cr_assert_str_eq(pf_class_condition_status(
                         pf_reason_class_of(PF_R_EFAFabricErrorsRising)),
                     "Unknown");
    cr_assert(!pf_class_may_taint(pf_reason_class_of(
        PF_R_EFAFabricErrorsRising)));
    drop(w);
}

Test(health, an_old_driver_without_counters_is_judged_by_state_only)
{
    struct world *w = world("p5-nocounters", 32);
    char msg[PF_ERRLEN];

    quiet(w, K + 1);
    cr_assert_eq(condition(w, msg, sizeof(msg)),
                 PF_R_EFANICCountersUnavailable);
    cr_assert_str_eq(pf_class_condition_status(pf_reason_class_of(
                         PF_R_EFANICCountersUnavailable)), "True");
    drop(w);
}

Test(health, an_old_driver_lacking_the_nitro_v4_counters_still_judges_drops)
{
    struct world *w = world("p5-olddriver", 32);
    char msg[PF_ERRLEN];

    tick(w);
    cr_assert_null(pf_mon_counter_find(&w->prev.nics[0],
                                       "retrans_timeout_events", 1));
    rising(w, "rdmap16s27", "rdma_write_wr_err", 1, K);
    cr_assert_eq(condition(w, msg, sizeof(msg)), PF_R_EFANICErrorRate);
    drop(w);
}

Test(health, thresholds_override_and_extend_the_defaults)
{
    struct pf_mon_rules r;
    char err[PF_ERRLEN];
    bool drops = false, cmds = false, retrans = false;

    cr_assert_eq(pf_mon_rules_parse("rx_drops=500,cmds_err=0,"
                                    "retrans_timeout_events=-1", K, M, &r,
                                    err),
                 PF_OK, "%s", err);
    for (int i = 0; i < r.n; i++) {
        drops |= !strcmp(r.r[i].counter, "rx_drops") && r.r[i].per_s == 500;
        cmds |= !strcmp(r.r[i].counter, "cmds_err") && r.r[i].per_s == 0;
        retrans |= !strcmp(r.r[i].counter, "retrans_timeout_events") &&
                   r.r[i].per_s < 0;
    }
    cr_assert(drops && cmds && retrans);
    pf_mon_rules_free(&r);
}

Test(health, bad_thresholds_name_what_is_wrong)
{
    static const struct {
        const char *rules, *says;
    } cases[] = {
        { "rx_drops", "'rx_drops' is not counter=rate" },
        { "rx_drops=lots", "rx_drops: 'lots' is not a rate" },
        { "Rx-Drops=1", "'Rx-Drops' is not a counter file name" },
    };
    struct pf_mon_rules r;
    char err[PF_ERRLEN];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(pf_mon_rules_parse(cases[i].rules, K, M, &r, err),
                     PF_ERR_USAGE, "case %s", cases[i].rules);
        cr_assert(strstr(err, cases[i].says), "case %s: %s", cases[i].rules,
                  err);
    }
}
