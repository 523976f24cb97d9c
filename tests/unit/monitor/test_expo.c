/* The monitor's Prometheus text: every counter of every NIC, one family
 * each (HELP and TYPE before its samples), the device-level counters as
 * port "0", escaped label values, the gate's verdict and age. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/monitor.h"
#include "nic_fixture.h"
#include "probe/probe.h"

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

Test(expo, every_counter_of_the_p5_fixture_once_per_family)
{
    char root[512], err[PF_ERRLEN];
    struct pf_config cfg;
    struct pf_node *node = calloc(1, sizeof(*node));
    struct pf_mon_snap s;
    struct pf_mon_health h = { 0 };
    struct pf_mon_rules r;
    struct pf_mon_gate g = { .validated_at = 1000, .valid_until = 5000 };
    struct pf_mon_buf b = { 0 };

    cr_assert(node);
    snprintf(g.status, sizeof(g.status), "pass");
    pf_test_fixture_copy("p5.48xlarge", root, sizeof(root));
    pf_test_cfg_root(&cfg, root);
    pf_probe_efa(&cfg, node);
    cr_assert_eq(pf_mon_read(root, node, 32, &s, err), PF_OK, "%s", err);
    cr_assert_eq(pf_mon_rules_parse(NULL, 3, 5, &r, err), PF_OK);
    cr_assert_eq(pf_mon_judge(&h, &r, NULL, &s, err), PF_OK);
    cr_assert_eq(pf_mon_expose("ip-10-0-0-1", &s, &h, &r, &g, 1600, &b, err),
                 PF_OK, "%s", err);
    cr_assert_eq(count(b.p, "# TYPE efa_preflight_nic_tx_bytes_total counter"),
                 1);
    cr_assert_eq(count(b.p, "efa_preflight_nic_tx_bytes_total{"), 32);
    cr_assert(strstr(b.p, "efa_preflight_nic_tx_bytes_total{node=\"ip-10-0-0-1\","
                          "device=\"rdmap16s27\",port=\"1\"} 1000000000\n"));
    cr_assert(strstr(b.p, "efa_preflight_nic_submitted_cmds_total{node=\"ip-10-0-0-1\","
                          "device=\"rdmap47s27\",port=\"0\"} 1600\n"), "%s", b.p);
    cr_assert_eq(count(b.p, "efa_preflight_nic_retrans_timeout_events_total{"), 32);
    cr_assert_eq(count(b.p, "efa_preflight_nic_link_up{"), 32);
    cr_assert(strstr(b.p, "efa_preflight_nic_counters_lifespan_seconds{node=\"ip-10-0-0-1\","
                          "device=\"rdmap16s27\",port=\"1\"} 0.01\n"));
    cr_assert(strstr(b.p, "efa_preflight_monitor_efa_devices{node=\"ip-10-0-0-1\"} 32\n"));
    cr_assert(strstr(b.p, "efa_preflight_monitor_efa_devices_expected{node=\"ip-10-0-0-1\"} 32\n"));
    cr_assert(strstr(b.p, "efa_preflight_gate_status{node=\"ip-10-0-0-1\",status=\"pass\"} 1\n"));
    cr_assert(strstr(b.p, "efa_preflight_gate_status{node=\"ip-10-0-0-1\",status=\"fail\"} 0\n"));
    cr_assert(strstr(b.p, "efa_preflight_gate_age_seconds{node=\"ip-10-0-0-1\"} 600\n"));
    cr_assert(strstr(b.p, "efa_preflight_gate_valid_until_timestamp_seconds{node=\"ip-10-0-0-1\"} 5000\n"));
    cr_assert(strstr(b.p, "status=\"True\",reason=\"EFANICsHealthy\"} 1\n"));
    /* no rate on the first read: nothing to compare with */
    cr_assert_eq(count(b.p, "efa_preflight_nic_judged_rate{"), 0);
    pf_mon_buf_free(&b);
    pf_mon_health_free(&h);
    pf_mon_rules_free(&r);
    pf_mon_snap_free(&s);
    pf_test_fixture_drop(root);
    free(node);
}

Test(expo, label_values_are_escaped_and_unknown_gate_fields_left_out)
{
    struct pf_mon_nic nic = { .name = "we\"ird\\dev", .port_active = true };
    struct pf_mon_counter c = { .name = "rx_drops", .port = 1, .v = 7 };
    struct pf_mon_snap s = { .expected = -1, .efa_count = 1, .n = 1,
                             .nics = &nic };
    struct pf_mon_health h = { 0 };
    struct pf_mon_rules r = { 0 };
    struct pf_mon_gate g = { 0 };
    struct pf_mon_buf b = { 0 };
    char err[PF_ERRLEN];

    nic.n = 1;
    nic.c = &c;
    cr_assert_eq(pf_mon_expose("n\n1", &s, &h, &r, &g, 0, &b, err), PF_OK);
    cr_assert(strstr(b.p, "efa_preflight_nic_rx_drops_total{node=\"n\\n1\","
                          "device=\"we\\\"ird\\\\dev\",port=\"1\"} 7\n"), "%s",
              b.p);
    cr_assert_null(strstr(b.p, "efa_preflight_gate_age_seconds"));
    cr_assert_null(strstr(b.p, "efa_preflight_monitor_efa_devices_expected"));
    pf_mon_buf_free(&b);
}

Test(expo, metric_names_take_only_lowercase_digits_and_underscores)
{
    cr_assert(pf_mon_metric_name_ok("rdma_read_wr_err"));
    cr_assert(!pf_mon_metric_name_ok(""));
    cr_assert(!pf_mon_metric_name_ok("rx-drops"));
    cr_assert(!pf_mon_metric_name_ok("RX"));
    cr_assert(!pf_mon_metric_name_ok("a b"));
}
