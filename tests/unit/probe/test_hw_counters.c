/* EFA hardware counters: read from the fixture trees, deltas, and the
 * harness's windows around a stage (collective/nics.h), with counters
 * rewritten between the before and after reads. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/nics.h"
#include "nic_fixture.h"
#include "probe/hw_counters.h"
#include "probe/probe.h"

/* A private copy of fixture (its root in root, dropped by the test),
 * probed. */
static struct pf_run *probed(const char *fixture, char *root, size_t len)
{
    struct pf_run *run = calloc(1, sizeof(*run));

    cr_assert(run);
    pf_test_fixture_copy(fixture, root, len);
    pf_test_cfg_root(&run->cfg, root);
    pf_probe_efa(&run->cfg, &run->node);
    return run;
}

Test(hw_counters, every_counter_of_every_p5_nic_is_read)
{
    char root[512];
    struct pf_run *run;

    run = probed("p5.48xlarge", root, sizeof(root));
    cr_assert_eq(run->node.efa_count, 32);
    for (int i = 0; i < 32; i++) {
        const struct pf_hwc_snap *s = &run->node.efa[i].hwc;
        cr_assert_eq(s->nports, 1, "%s", run->node.efa[i].name);
        cr_assert_eq(s->present, (1u << PF_HWC_COUNT) - 1, "%s: %x",
                     run->node.efa[i].name, s->present);
        cr_assert_eq(s->v[PF_HWC_TX_BYTES], (uint64_t)(i + 1) * 1000000000u);
        cr_assert_eq(s->v[PF_HWC_LIFESPAN], 10);
        cr_assert_eq(pf_hwc_errors(s->v, s->present), 0);
    }
    cr_assert_str_eq(pf_hwc_name(PF_HWC_RETRANS_TIMEOUT_EVENTS),
                     "retrans_timeout_events");
    cr_assert_eq(pf_hwc_settle_ms(&run->node.efa[0].hwc, 1), 10);
    pf_test_fixture_drop(root);
    free(run);
}

Test(hw_counters, old_driver_lacks_the_nitro_v4_counters_as_a_fact)
{
    char root[512], absent[256];
    struct pf_run *run;
    struct pf_hwc_snap all[PF_MAX_EFA];

    run = probed("p5-olddriver", root, sizeof(root));
    cr_assert_eq(run->node.efa_count, 32);
    for (int i = 0; i < 32; i++)
        all[i] = run->node.efa[i].hwc;
    cr_assert_eq(pf_hwc_absent_text(all, 32, absent, sizeof(absent)), 5);
    cr_assert_str_eq(absent, "retrans_bytes, retrans_pkts, "
                     "retrans_timeout_events, unresponsive_remote_events, "
                     "impaired_remote_conn_events");
    cr_assert(all[0].present & (1u << PF_HWC_RX_DROPS));
    cr_assert_not(all[0].present & (1u << PF_HWC_RETRANS_TIMEOUT_EVENTS));
    pf_test_fixture_drop(root);
    free(run);
}

Test(hw_counters, no_hw_counters_folder_reads_as_nothing_present)
{
    char root[512];
    struct pf_run *run;

    run = probed("p5-nocounters", root, sizeof(root));
    cr_assert_eq(run->node.efa_count, 32);
    cr_assert_eq(run->node.efa[5].hwc.nports, 0);
    cr_assert_eq(run->node.efa[5].hwc.present, 0);
    pf_test_fixture_drop(root);
    free(run);
}

Test(hw_counters, delta_of_a_reset_counter_is_zero_and_flagged)
{
    struct pf_hwc_snap a, b;
    struct pf_nic_delta d;
    bool known;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.present = (1u << PF_HWC_TX_BYTES) | (1u << PF_HWC_RX_BYTES) |
                (1u << PF_HWC_RX_DROPS);
    b.present = a.present | (1u << PF_HWC_RETRANS_PKTS);
    a.v[PF_HWC_TX_BYTES] = 100;
    b.v[PF_HWC_TX_BYTES] = 350;
    a.v[PF_HWC_RX_BYTES] = 500;
    b.v[PF_HWC_RX_BYTES] = 20;        /* device reset */
    b.v[PF_HWC_RX_DROPS] = 4;
    b.v[PF_HWC_RETRANS_PKTS] = 9;     /* only in after: absent */
    pf_hwc_delta(&a, &b, &d);
    cr_assert_eq(d.d[PF_HWC_TX_BYTES], 250);
    cr_assert_eq(d.d[PF_HWC_RX_BYTES], 0);
    cr_assert(d.went_back);
    cr_assert_not(d.present & (1u << PF_HWC_RETRANS_PKTS));
    cr_assert_eq(pf_hwc_bytes(d.d, d.present, &known), 250);
    cr_assert(known);
    cr_assert_eq(pf_hwc_errors(d.d, d.present), 4);
}

Test(hw_counters, bytes_fall_back_to_verbs_counters_without_tx_rx)
{
    uint64_t v[PF_HWC_COUNT] = { 0 };
    uint32_t present = (1u << PF_HWC_SEND_BYTES) | (1u << PF_HWC_RECV_BYTES) |
                       (1u << PF_HWC_RDMA_READ_BYTES);
    bool known;
    char text[128];

    v[PF_HWC_SEND_BYTES] = 10;
    v[PF_HWC_RECV_BYTES] = 20;
    v[PF_HWC_RDMA_READ_BYTES] = 30;
    cr_assert_eq(pf_hwc_bytes(v, present, &known), 60);
    cr_assert(known);
    cr_assert_eq(pf_hwc_bytes(v, 1u << PF_HWC_RX_DROPS, &known), 0);
    cr_assert_not(known);
    v[PF_HWC_RETRANS_TIMEOUT_EVENTS] = 3;
    v[PF_HWC_RX_DROPS] = 1;
    present |= (1u << PF_HWC_RETRANS_TIMEOUT_EVENTS) | (1u << PF_HWC_RX_DROPS);
    pf_hwc_errors_text(v, present, "+", text, sizeof(text));
    cr_assert_str_eq(text, "rx_drops +1, retrans_timeout_events +3");
}

/* The harness's window: counters moved between begin and end land in
 * the window of their device; the after read may come from another tree
 * (cfg.debug_counters_after), as the integration tests do it. */
Test(hw_counters, a_window_holds_what_moved_between_the_reads)
{
    char root[512], after[512];
    struct pf_run *run;
    struct pf_nic_watch w;
    const struct pf_nic_window *win;

    pf_test_fixture_copy("p5en.48xlarge", after, sizeof(after));
    run = probed("p5en.48xlarge", root, sizeof(root));
    cr_assert_eq(run->node.efa_count, 16);
    pf_nics_begin(run, &w);
    cr_assert(w.on);
    for (int i = 0; i < 16; i++)
        pf_test_counter_add(root, run->node.efa[i].name, "tx_bytes",
                            (uint64_t)(i + 1) << 20);
    pf_test_counter_add(root, "rdmap20s27", "retrans_timeout_events", 5);
    pf_nics_end(run, &w, "sweep", -1);
    cr_assert(run->coll.nics.read);
    cr_assert_eq(run->coll.nics.n, 16);
    cr_assert_eq(run->coll.nics.nwin, 1);
    win = &run->coll.nics.win[0];
    cr_assert_str_eq(win->stage, "sweep");
    cr_assert_eq(win->peer, -1);
    cr_assert_eq(win->nic[0].d[PF_HWC_TX_BYTES], 1u << 20);
    cr_assert_eq(win->nic[15].d[PF_HWC_TX_BYTES], 16u << 20);
    cr_assert_eq(win->nic[4].d[PF_HWC_RETRANS_TIMEOUT_EVENTS], 5);
    cr_assert_str_eq(run->coll.nics.note, "");

    /* The after tree: nothing moved there but rx_drops on one NIC. */
    snprintf(run->cfg.debug_counters_after, sizeof(run->cfg.debug_counters_after),
             "%s", after);
    pf_test_counter_add(after, "rdmap16s27", "rx_drops", 2);
    pf_nics_begin(run, &w);
    pf_nics_end(run, &w, "pairwise", 3);
    win = &run->coll.nics.win[1];
    cr_assert_eq(win->peer, 3);
    cr_assert_eq(win->nic[0].d[PF_HWC_RX_DROPS], 2);
    /* root moved on since: after < before on those counters */
    cr_assert(win->nic[0].went_back);
    pf_test_fixture_drop(root);
    pf_test_fixture_drop(after);
    free(run);
}

Test(hw_counters, no_counters_leave_a_note_and_no_window)
{
    char root[512];
    struct pf_run *run;
    struct pf_nic_watch w;

    run = probed("p5-nocounters", root, sizeof(root));
    pf_nics_begin(run, &w);
    pf_nics_end(run, &w, "sweep", -1);
    cr_assert_not(run->coll.nics.read);
    cr_assert_eq(run->coll.nics.nwin, 0);
    cr_assert(strstr(run->coll.nics.note, "no ports/*/hw_counters on 32 "
                     "device(s)"), "%s", run->coll.nics.note);
    pf_test_fixture_drop(root);
    free(run);
}
