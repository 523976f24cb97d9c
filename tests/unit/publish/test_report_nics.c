/* The per-NIC part of the JSON report (collective.nics, node.efa
 * hw_counters) and of the table, from the harness's windows over a
 * fixture copy whose counters moved between the reads. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/nics.h"
#include "collective/sweep.h"
#include "nic_fixture.h"
#include "probe/probe.h"
#include "publish/publish.h"
#include "verdict/verdict.h"

static struct pf_run *run_on(const char *fx, char *root, size_t len,
                             bool traffic)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_nic_watch w;

    pf_test_fixture_copy(fx, root, len);
    pf_test_cfg_root(&run->cfg, root);
    run->cfg.command = PF_CMD_RUN;
    cr_assert_eq(pf_probe(run, (char[PF_ERRLEN]){ 0 }), PF_OK);
    pf_nics_begin(run, &w);
    for (int i = 0; traffic && i < run->node.efa_count; i++)
        pf_test_counter_add(root, run->node.efa[i].name, "tx_bytes",
                            (uint64_t)(i + 1) * 1000000u);
    if (traffic)
        pf_test_counter_add(root, "rdmap17s27", "rx_drops", 6);
    pf_nics_end(run, &w, "sweep", -1);
    run->coll.ran = true;
    snprintf(run->coll.engine, sizeof(run->coll.engine), "host");
    snprintf(run->coll.fabric.provider, sizeof(run->coll.fabric.provider),
             "efa");
    run->coll.nnodes = 1;
    run->coll.nranks = 2;
    run->coll.nrows = 1;
    pf_sweep_fill_row(&run->coll.rows[0], 1 << 20, 2, 1e-3, 1e-3, 0, 0);
    pf_sweep_summarize(&run->coll);
    pf_nics_spread(run);
    pf_test_judged(run);
    pf_verdict_node(run);
    pf_verdict_fabric(run);
    pf_verdict_finish(run);
    return run;
}

/* run's JSON report, parsed. */
static cJSON *report_of(const struct pf_run *run)
{
    char *text = pf_report_json(run);
    cJSON *r = cJSON_Parse(text);

    cr_assert_not_null(r, "%s", text);
    free(text);
    return r;
}

/* The run and its fixture copy. */
static void drop(struct pf_run *run, const char *root)
{
    pf_test_fixture_drop(root);
    free(run);
}

static cJSON *at(cJSON *o, const char *path)
{
    char buf[256], *save = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(k))
                             : cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert_not_null(o, "no %s in the report", path);
    return o;
}

Test(nic_report, json_carries_per_nic_deltas_shares_and_errors)
{
    char root[512];
    struct pf_run *run = run_on("trn1.32xlarge", root, sizeof(root), true);
    cJSON *r = report_of(run);

    cr_assert(cJSON_IsTrue(at(r, "collective.nics.counters_read")));
    cr_assert(cJSON_IsFalse(at(r, "collective.nics.spread")));
    cr_assert_eq(cJSON_GetArraySize(at(r, "collective.nics.devices")), 8);
    cr_assert_str_eq(at(r, "collective.nics.devices.1.name")->valuestring,
                     "rdmap17s27");
    cr_assert_eq(at(r, "collective.nics.devices.1.sweep_bytes")->valuedouble,
                 2e6);
    /* 2 of 1+2+...+8 = 36 MB */
    cr_assert_float_eq(at(r, "collective.nics.devices.1.sweep_share")->valuedouble,
                       2.0 / 36, 1e-9);
    cr_assert_eq(at(r, "collective.nics.devices.1.errors.rx_drops")->valuedouble,
                 6);
    cr_assert_eq(cJSON_GetArraySize(at(r, "collective.nics.devices.0.errors")), 0);
    cr_assert_str_eq(at(r, "collective.nics.windows.0.stage")->valuestring,
                     "sweep");
    cr_assert(cJSON_IsNull(at(r, "collective.nics.windows.0.peer")));
    cr_assert_eq(at(r, "collective.nics.windows.0.devices.7.counters.tx_bytes")
                     ->valuedouble, 8e6);
    cr_assert_eq(at(r, "node.efa.devices.0.hw_counters.tx_bytes")->valuedouble,
                 1e9);
    cr_assert_float_eq(at(r, "node.uptime_s")->valuedouble, 273600.25, 1e-6);
    cr_assert_eq(cJSON_GetArraySize(at(r, "collective.nics.rails")), 0);
    cJSON_Delete(r);
    drop(run, root);
}

Test(nic_report, absent_counters_are_null_in_the_json)
{
    char root[512];
    struct pf_run *run = run_on("p5-olddriver", root, sizeof(root), true);
    cJSON *r = report_of(run);

    cr_assert(cJSON_IsNull(at(r, "node.efa.devices.0.hw_counters.retrans_pkts")));
    cr_assert(cJSON_IsNull(at(r, "collective.nics.windows.0.devices.0.counters."
                              "retrans_timeout_events")));
    cr_assert(strstr(at(r, "collective.nics.note")->valuestring,
                     "absent on this driver: retrans_bytes"));
    cr_assert_eq(run->verdict.exit_code, 1, "rx_drops moved: EFANICErrors");
    cJSON_Delete(r);
    drop(run, root);

    run = run_on("p5-nocounters", root, sizeof(root), false);
    r = report_of(run);
    cr_assert(cJSON_IsNull(at(r, "node.efa.devices.0.hw_counters")));
    cr_assert(cJSON_IsFalse(at(r, "collective.nics.counters_read")));
    cr_assert_eq(cJSON_GetArraySize(at(r, "collective.nics.devices")), 0);
    cJSON_Delete(r);
    drop(run, root);
}

Test(nic_report, table_has_a_line_per_nic_with_share_and_moved_errors)
{
    char root[512], *buf = NULL;
    size_t len = 0;
    struct pf_run *run = run_on("trn1.32xlarge", root, sizeof(root), true);
    FILE *out = open_memstream(&buf, &len);

    pf_publish_table(run, out);
    fclose(out);
    cr_assert(strstr(buf, "# NICs: 8 EFA, hardware counters over the sweep: "
                     "36.0 MB moved\n"), "%s", buf);
    cr_assert(strstr(buf, " rdmap17s27            2.0 MB    5.6%  rx_drops +6\n"),
              "%s", buf);
    cr_assert(strstr(buf, " rdmap23s27            8.0 MB   22.2%  -\n"), "%s",
              buf);
    free(buf);
    drop(run, root);
}
