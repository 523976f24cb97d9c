/* publish/metrics: the exposition text (every family's HELP/TYPE, one-hot
 * status, labels escaped, units converted, samples only where the run has
 * them), the Pushgateway URL and the push's failure messages. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "config/catalog.h"
#include "config/config.h"
#include "publish/metrics.h"
#include "publish/pushgateway.h"
#include "util/clock.h"
#include "util/version.h"
#include "verdict/verdict.h"

#include "run_fixture.h"

static struct pf_run *node_run(void)
{
    struct pf_run *run = pf_test_run_new("p5.48xlarge");

    run->cfg.command = PF_CMD_NODE;
    run->node.efa_count = 2;
    run->node.efa_module_loaded = true;
    snprintf(run->node.efa[0].name, sizeof(run->node.efa[0].name), "rdmap16s27");
    run->node.efa[0].port_active = true;
    snprintf(run->node.efa[1].name, sizeof(run->node.efa[1].name), "rdmap17s27");
    run->node.efa[1].port_active = false;
    run->coll.slow_rank = -1;
    pf_verdict_node(run);
    pf_verdict_finish(run);
    return run;
}

/* Two sizes of a 2-node host-engine run on p5, floor 100 GB/s. */
static void add_collective(struct pf_run *run)
{
    struct pf_coll *c = &run->coll;

    run->cfg.command = PF_CMD_RUN;
    run->cfg.min_busbw_gbps = 100;
    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "host");
    c->nranks = 2;
    c->nnodes = 2;
    c->nrows = 2;
    c->rows[0] = (struct pf_row){ .bytes = 1024, .oop_busbw = 1.5,
                                  .ip_busbw = 1.25 };
    c->rows[1] = (struct pf_row){ .bytes = 64u << 20, .oop_busbw = 120.5,
                                  .ip_busbw = 121.75 };
    c->avg_busbw = 61.25;
    c->peak_busbw = 121.75;
    c->wall_s = 3.5;
    pf_test_judged(run);
}

static const char *line_of(const char *text, const char *start)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, start, strlen(start)))
            return p;
    return NULL;
}

/* The value of the sample line that starts with start, or NaN. */
static double value_of(const char *text, const char *start)
{
    const char *l = line_of(text, start);
    const char *sp;

    if (!l)
        return NAN;
    sp = strchr(l + strlen(start), ' ');
    return sp ? strtod(sp + 1, NULL) : NAN;
}

/* A sample line's start and the value it must carry. */
struct sample { const char *line; double want; };

static void samples_are(const char *text, const struct sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(value_of(text, s[i].line), s[i].want, "case %s in:\n%s",
                     s[i].line, text);
}

Test(metrics, every_family_has_help_and_type_even_without_samples)
{
    struct pf_run *run = node_run();
    char *text = pf_metrics_text(run, 1700000000.5);
    char want[256];
    size_t n = 0;

    cr_assert_not_null(text);
    for (const char *name; (name = pf_metrics_family(n)); n++) {
        snprintf(want, sizeof(want), "# HELP %s ", name);
        cr_assert_not_null(line_of(text, want), "no HELP for %s", name);
        snprintf(want, sizeof(want), "# TYPE %s gauge\n", name);
        cr_assert_not_null(strstr(text, want), "no TYPE for %s", name);
        cr_assert(!strncmp(name, "efa_preflight_", 14), "%s", name);
    }
    cr_assert_geq(n, 15);
    /* A node run has no collective: the families are there, samples not. */
    cr_assert_null(line_of(text, "efa_preflight_busbw_peak_bytes_per_second "));
    cr_assert_null(line_of(text, "efa_preflight_collective_ranks "));
    cr_assert_eq(value_of(text, "efa_preflight_last_run_timestamp_seconds"),
                 1700000000.5);
    cr_assert_eq(text[strlen(text) - 1], '\n');
    free(text);
    pf_test_run_free(run);
}

Test(metrics, status_is_one_hot_and_verdict_labels_carry_reason_and_class)
{
    struct pf_run *run = node_run();
    char *text = pf_metrics_text(run, 1);
    int ones = 0;
    static const struct sample want[] = {
        { "efa_preflight_status{status=\"fail\"}", 1 },
        { "efa_preflight_status{status=\"pass\"}", 0 },
        { "efa_preflight_exit_code", 1 },
        { "efa_preflight_efa_devices_expected", 32 },
        { "efa_preflight_efa_port_up{device=\"rdmap16s27\"}", 1 },
        { "efa_preflight_efa_port_up{device=\"rdmap17s27\"}", 0 },
    };

    /* Two EFA devices of p5's 32: a node failure. */
    cr_assert_eq(run->verdict.cls, PF_CLASS_NODE);
    for (const char *s = text; (s = strstr(s, "\nefa_preflight_status{")); s++)
        ones += strstr(s, "} 1\n") == strchr(s, '}');
    cr_assert_eq(ones, 1);
    cr_assert_not_null(strstr(text, "efa_preflight_verdict_info{reason=\""
                                    "EFADeviceCountMismatch\",class=\"node\","
                                    "command=\"node\",instance_type=\""
                                    "p5.48xlarge\",version=\"" PF_VERSION
                                    "\"} 1\n"), "%s", text);
    /* build_info: the version alone, always 1, its family declared */
    cr_assert_not_null(strstr(text, "# TYPE efa_preflight_build_info gauge\n"
                                    "efa_preflight_build_info{version=\"" PF_VERSION "\"} 1\n"),
                       "%s", text);
    samples_are(text, want, sizeof(want) / sizeof(want[0]));
    free(text);
    pf_test_run_free(run);
}

Test(metrics, busbw_in_bytes_per_second_per_size_with_the_floor)
{
    struct pf_run *run = node_run();
    char *text;
    static const struct sample sweep[] = {
        { "efa_preflight_busbw_bytes_per_second{bytes=\"67108864\","
          "placement=\"out_of_place\"}", 120.5e9 },
        { "efa_preflight_busbw_bytes_per_second{bytes=\"1024\","
          "placement=\"in_place\"}", 1.25e9 },
        { "efa_preflight_busbw_peak_bytes_per_second", 121.75e9 },
        { "efa_preflight_busbw_average_bytes_per_second", 61.25e9 },
        { "efa_preflight_busbw_floor_bytes_per_second", 100e9 },
        { "efa_preflight_busbw_judged_bytes_per_second", 121.75e9 },
        { "efa_preflight_busbw_floor_message_size_bytes", 67108864 },
    }, from_1k[] = {
        { "efa_preflight_busbw_judged_bytes_per_second", 1.5e9 },
        { "efa_preflight_busbw_floor_message_size_bytes", 1024 },
        { "efa_preflight_collective_duration_seconds", 3.5 },
        { "efa_preflight_collective_nodes", 2 },
    };

    add_collective(run);
    text = pf_metrics_text(run, 1);
    samples_are(text, sweep, sizeof(sweep) / sizeof(sweep[0]));
    free(text);
    /* A floor from 1 KiB on: the best row at or above it is judged. */
    run->cfg.min_busbw_from_bytes = 1024;
    run->coll.rows[1].oop_busbw = run->coll.rows[1].ip_busbw = 0.5;
    pf_test_judged(run);
    text = pf_metrics_text(run, 1);
    samples_are(text, from_1k, sizeof(from_1k) / sizeof(from_1k[0]));
    free(text);
    pf_test_run_free(run);
}

Test(metrics, per_nic_counter_deltas_over_every_window)
{
    struct pf_run *run = node_run();
    struct pf_nics *s = &run->coll.nics;
    uint32_t all = (1u << PF_HWC_TX_BYTES) | (1u << PF_HWC_RX_BYTES) |
                   (1u << PF_HWC_RX_DROPS) | (1u << PF_HWC_RETRANS_TIMEOUT_EVENTS);
    char *text;
    static const struct sample nics[] = {
        { "efa_preflight_nic_sweep_bytes{device=\"rdmap16s27\"}", 1000 },
        { "efa_preflight_nic_errors{device=\"rdmap16s27\"}", 0 },
        { "efa_preflight_nic_errors{device=\"rdmap17s27\"}", 7 },
        { "efa_preflight_nic_error_events{device=\"rdmap17s27\","
          "counter=\"retrans_timeout_events\"}", 3 },
        { "efa_preflight_nic_error_events{device=\"rdmap17s27\","
          "counter=\"rx_drops\"}", 4 },
    };

    add_collective(run);
    text = pf_metrics_text(run, 1);
    cr_assert_null(line_of(text, "efa_preflight_nic_errors{"),
                   "counters not read: no per-NIC sample");
    free(text);
    s->read = true;
    s->n = 2;
    s->nwin = 2;                      /* the sweep, one pairwise phase */
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 2; i++)
            s->win[w].nic[i].present = all;
    s->win[0].nic[0].d[PF_HWC_TX_BYTES] = 600;
    s->win[0].nic[0].d[PF_HWC_RX_BYTES] = 400;
    s->win[1].nic[0].d[PF_HWC_TX_BYTES] = 7777;   /* not the sweep's */
    s->win[0].nic[1].d[PF_HWC_RETRANS_TIMEOUT_EVENTS] = 2;
    s->win[1].nic[1].d[PF_HWC_RETRANS_TIMEOUT_EVENTS] = 1;
    s->win[1].nic[1].d[PF_HWC_RX_DROPS] = 4;
    /* A counter missing from one window counts nowhere. */
    s->win[1].nic[0].present &= ~(1u << PF_HWC_RX_DROPS);
    s->win[0].nic[0].d[PF_HWC_RX_DROPS] = 9;
    text = pf_metrics_text(run, 1);
    samples_are(text, nics, sizeof(nics) / sizeof(nics[0]));
    cr_assert_null(line_of(text, "efa_preflight_nic_error_events{device=\"rdmap16s27\""),
                   "a counter that did not rise (or was not read throughout) has no sample");
    free(text);
    pf_test_run_free(run);
}

Test(metrics, label_values_are_escaped)
{
    struct pf_run *run = node_run();
    char out[64], *text;

    cr_assert(pf_metrics_escape("a\\b\"c\nd", out, sizeof(out)));
    cr_assert_str_eq(out, "a\\\\b\\\"c\\nd");
    cr_assert_not(pf_metrics_escape("\"\"\"", out, 6), "6 bytes hold 5 chars");
    cr_assert(pf_metrics_escape("\"\"", out, 5));
    snprintf(run->node.instance_type, sizeof(run->node.instance_type),
             "p\"5\\x\ny");
    text = pf_metrics_text(run, 1);
    cr_assert_not_null(strstr(text, "instance_type=\"p\\\"5\\\\x\\ny\""),
                       "%s", text);
    free(text);
    pf_test_run_free(run);
}

Test(metrics, pushgateway_url_groups_by_job_and_instance)
{
    static const struct { const char *base, *instance, *want; } cases[] = {
        { "http://pgw:9091/", "ip-10-0-0-7.ec2",
          "http://pgw:9091/metrics/job/efa_preflight/instance/ip-10-0-0-7.ec2" },
        /* '/' and other characters: Pushgateway's base64url form. */
        { "http://pgw:9091", "a/b",
          "http://pgw:9091/metrics/job/efa_preflight/instance@base64/YS9i" },
        { "http://pgw:9091", "",
          "http://pgw:9091/metrics/job/efa_preflight/instance@base64/=" },
    };
    char url[512], err[PF_ERRLEN];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(pf_metrics_push_url(cases[i].base, cases[i].instance, url,
                                         sizeof(url), err), PF_OK,
                     "case '%s'", cases[i].instance);
        cr_assert_str_eq(url, cases[i].want, "case '%s'", cases[i].instance);
    }
    cr_assert_eq(pf_metrics_push_url("http://pgw:9091", "node", url, 20, err),
                 PF_ERR_USAGE);
}

Test(metrics, failed_push_names_the_url_without_its_password)
{
    char err[PF_ERRLEN];
    pf_err rc;

    /* Port 1 on loopback: nothing listens. */
    rc = pf_metrics_push("http://alice:s3cret@127.0.0.1:1", "node", "x 1\n",
                         pf_deadline_in(5000), err);
    cr_assert_eq(rc, PF_ERR_IO, "%s", err);
    cr_assert_not_null(strstr(err, "http://127.0.0.1:1/metrics/job/"), "%s", err);
    cr_assert_null(strstr(err, "s3cret"), "%s", err);
    cr_assert_null(strstr(err, "alice"), "%s", err);
    rc = pf_metrics_push("http://127.0.0.1:1", "node", "x 1\n",
                         pf_now_ms() - 1, err);
    cr_assert_eq(rc, PF_ERR_TIMEOUT, "%s", err);
}

Test(metrics, config_refuses_a_textfile_node_exporter_would_not_read)
{
    struct pf_config cfg;
    char *bad[] = { "local", "--metrics-textfile", "/var/lib/x/efa.txt", NULL };
    char *url[] = { "local", "--pushgateway", "ftp://u:pw@h", NULL };
    char *good[] = { "local", "--metrics-textfile", "/d/efa_preflight.prom",
                     "--pushgateway", "http://pgw:9091", NULL };
    char err[PF_ERRLEN];
    bool help;

    cr_assert_eq(pf_config_load(&cfg, PF_CMD_LOCAL, 3, bad, NULL, &help, err),
                 PF_ERR_USAGE);
    cr_assert_not_null(strstr(err, "*.prom"), "%s", err);
    cr_assert_eq(pf_config_load(&cfg, PF_CMD_LOCAL, 3, url, NULL, &help, err),
                 PF_ERR_USAGE);
    cr_assert_null(strstr(err, "pw"), "the message echoes the URL: %s", err);
    cr_assert_eq(pf_config_load(&cfg, PF_CMD_LOCAL, 5, good, NULL, &help, err),
                 PF_OK, "%s", err);
    cr_assert_str_eq(cfg.pushgateway, "http://pgw:9091");
}

/* One label, node, on every sample: --node-name, else the hostname; the
 * same value the Pushgateway groups by. */
Test(metrics, every_sample_carries_the_node_label)
{
    struct pf_run *run = node_run();
    char *text;
    int samples = 0;
    static const struct sample labelled[] = {
        { "efa_preflight_exit_code{node=\"host-a\"}", 1 },
        { "efa_preflight_status{node=\"host-a\",status=\"fail\"}", 1 },
        { "efa_preflight_busbw_bytes_per_second{node=\"host-a\","
          "bytes=\"1024\",placement=\"in_place\"}", 1.25e9 },
    };

    add_collective(run);
    snprintf(run->node.hostname, sizeof(run->node.hostname), "host-a");
    text = pf_metrics_text(run, 1);
    cr_assert_str_eq(pf_metrics_node(run), "host-a");
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (*l == '#' || *l == '\n')
            continue;
        samples++;
        const char *brace = strchr(l, '{'), *sp = strchr(l, ' ');
        cr_assert(brace && brace < sp && !strncmp(brace, "{node=\"host-a\"", 14),
                  "a sample without node=\"host-a\" first: %.80s", l);
    }
    cr_assert_geq(samples, 20);
    samples_are(text, labelled, sizeof(labelled) / sizeof(labelled[0]));
    free(text);
    snprintf(run->cfg.node_name, sizeof(run->cfg.node_name), "ip-10-0-0-7\"x");
    text = pf_metrics_text(run, 1);
    cr_assert_not_null(strstr(text, "\nefa_preflight_efa_devices{node=\"ip-10-0-0-7\\\"x\"} 2\n"),
                       "--node-name wins, escaped: %s", text);
    free(text);
    pf_test_run_free(run);
}
