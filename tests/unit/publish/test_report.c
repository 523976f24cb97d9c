/* publish: the JSON report (schema, fields, nulls, no secrets), the stdout
 * table (checks, remedies, nccl-tests columns and footer, summary) and the
 * routing rules of pf_publish (report file, quiet non-zero local ranks). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll_fixture.h"
#include "config/catalog.h"
#include "config/config.h"
#include "publish/publish.h"
#include "util/fsutil.h"
#include "util/sanitize.h"
#include "util/version.h"
#include "verdict/verdict.h"

#include "run_fixture.h"
#include "unit_files.h"

/* What the last pf_publish of a test came to (35 KB: off the stack). */
static struct pf_publish_outcome published;

/* A p5 node with one missing device, judged. */
static struct pf_run *p5_run(void)
{
    struct pf_run *run = pf_test_run_new("p5.48xlarge");

    run->cfg.command = PF_CMD_NODE;
    snprintf(run->started_at, sizeof(run->started_at), "2026-11-22T01:02:03Z");
    snprintf(run->node.hostname, sizeof(run->node.hostname), "ip-10-0-0-7");
    snprintf(run->node.instance_source, sizeof(run->node.instance_source), "dmi");
    run->node.efa_count = 31;
    run->node.efa_ports_active = 31;
    for (int i = 0; i < 31; i++) {
        struct pf_efa_dev *d = &run->node.efa[i];
        snprintf(d->name, sizeof(d->name), "rdmap%ds27", 16 + i);
        d->vendor = 0x1d0f;
        d->device = 0xefa2;
        snprintf(d->port_state, sizeof(d->port_state), "4: ACTIVE");
        d->port_active = true;
    }
    run->node.uverbs_present = run->node.uverbs_openable = 31;
    run->node.efa_module_loaded = true;
    run->node.libfabric_loaded = true;
    snprintf(run->node.libfabric_version, sizeof(run->node.libfabric_version), "1.22");
    run->node.fi_efa_domains = 31;
    run->node.memlock_soft = run->node.memlock_hard = UINT64_MAX;
    run->node.hugepages_total = run->node.hugepages_free = 16;
    run->node.hugepage_kb = 2048;
    run->node.gdr_supported = true;
    run->node.gpu_count = 8;
    run->node.cuda_loaded = true;
    pf_test_nccl_image(&run->node, "ofi");
    pf_verdict_node(run);
    pf_verdict_finish(run);
    return run;
}

static void add_rows(struct pf_run *run)
{
    struct pf_coll *c = &run->coll;

    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "host");
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "tcp");
    c->fabric.provider_is_fallback = true;
    c->nranks = 4;
    c->nnodes = 1;
    c->nrows = 2;
    c->rows[0] = (struct pf_row){ .bytes = 1024, .count = 256, .oop_us = 50.0,
                                  .oop_algbw = 0.02, .oop_busbw = 0.03,
                                  .ip_us = 49.0, .ip_algbw = 0.02,
                                  .ip_busbw = 0.03 };
    c->rows[1] = (struct pf_row){ .bytes = 1048576, .count = 262144,
                                  .oop_us = 1000.0, .oop_algbw = 1.05,
                                  .oop_busbw = 1.5, .ip_us = 990.0,
                                  .ip_algbw = 1.06, .ip_busbw = 1.5 };
    c->avg_busbw = 0.765;
    c->slow_rank = -1;
    pf_test_judged(run);
}

static cJSON *report(const struct pf_run *run)
{
    char *text = pf_report_json(run);
    cJSON *doc;

    cr_assert_not_null(text);
    doc = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(doc, "report is not JSON");
    return doc;
}

static cJSON *at(const cJSON *o, const char *path)
{
    char buf[256], *save = NULL;
    const cJSON *cur = o;

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
        cur = cJSON_GetObjectItemCaseSensitive(cur, k);
        cr_assert_not_null(cur, "missing %s (at %s)", path, k);
    }
    return (cJSON *)cur;
}

Test(report, json_has_schema_facts_checks_and_verdict)
{
    struct pf_run *run = p5_run();
    cJSON *doc = report(run), *checks, *first;

    cr_assert_str_eq(at(doc, "schema")->valuestring, PF_REPORT_SCHEMA);
    cr_assert_str_eq(at(doc, "tool.version")->valuestring, PF_VERSION);
    cr_assert_str_eq(at(doc, "started_at")->valuestring, "2026-11-22T01:02:03Z");
    cr_assert_str_eq(at(doc, "command")->valuestring, "node");
    cr_assert_str_eq(at(doc, "fabric_provider.requested")->valuestring, "efa");
    cr_assert(cJSON_IsFalse(at(doc, "fabric_provider.fallback")));
    cr_assert_str_eq(at(doc, "node.instance_type")->valuestring, "p5.48xlarge");
    cr_assert_eq(at(doc, "node.efa.count")->valueint, 31);
    cr_assert_eq(cJSON_GetArraySize(at(doc, "node.efa.devices")), 31);
    cr_assert_str_eq(cJSON_GetArrayItem(at(doc, "node.efa.devices"), 0)
                         ->child->valuestring, "rdmap16s27");
    cr_assert(cJSON_IsNull(at(doc, "node.memlock.soft_bytes")));
    cr_assert(cJSON_IsTrue(at(doc, "node.memlock.soft_unlimited")));
    cr_assert_str_eq(at(doc, "instance.name")->valuestring, "p5.48xlarge");
    cr_assert_eq(at(doc, "instance.efa_count")->valueint, 32);
    cr_assert_eq(at(doc, "node.nccl.version")->valueint, 22809);
    cr_assert_str_eq(at(doc, "node.nccl.net_plugin.path")->valuestring,
                     "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
    cr_assert_eq(at(doc, "node.nccl.net_plugin.api")->valueint, 10);
    cr_assert(cJSON_IsNull(at(doc, "node.nccl.net_plugin.error")));

    checks = at(doc, "checks");
    cr_assert_eq(cJSON_GetArraySize(checks), run->verdict.n);
    first = cJSON_GetArrayItem(checks, 0);
    cr_assert_str_eq(at(first, "name")->valuestring, "instance_type");
    cr_assert_str_eq(at(first, "status")->valuestring, "pass");
    cr_assert(cJSON_IsNull(at(first, "remedy")));

    cr_assert(cJSON_IsNull(at(doc, "collective")));
    cr_assert_str_eq(at(doc, "verdict.status")->valuestring, "fail");
    cr_assert_eq(at(doc, "verdict.exit_code")->valueint, 1);
    cr_assert_str_eq(at(doc, "verdict.reason")->valuestring, "EFADeviceCountMismatch");
    cr_assert_str_eq(at(doc, "verdict.conditions.EFADevicesReady")->valuestring, "fail");
    cr_assert(cJSON_IsNull(at(doc, "verdict.conditions.EFAFabricReady")));
    cJSON_Delete(doc);
    pf_test_run_free(run);
}

Test(report, json_collective_rows_and_fallback)
{
    struct pf_run *run = p5_run();
    cJSON *doc, *row;

    add_rows(run);
    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider), "tcp");
    doc = report(run);
    cr_assert(cJSON_IsTrue(at(doc, "fabric_provider.fallback")));
    cr_assert_str_eq(at(doc, "collective.engine")->valuestring, "host");
    cr_assert(cJSON_IsTrue(at(doc, "collective.provider_is_fallback")));
    cr_assert_eq(cJSON_GetArraySize(at(doc, "collective.rows")), 2);
    row = cJSON_GetArrayItem(at(doc, "collective.rows"), 1);
    cr_assert_eq(at(row, "bytes")->valuedouble, 1048576);
    cr_assert_float_eq(at(row, "out_of_place.busbw_gbps")->valuedouble, 1.5, 1e-9);
    cr_assert_float_eq(at(row, "in_place.time_us")->valuedouble, 990.0, 1e-9);
    cr_assert_float_eq(at(doc, "collective.avg_busbw_gbps")->valuedouble, 0.765, 1e-9);
    cr_assert(cJSON_IsNull(at(doc, "collective.error")));
    cJSON_Delete(doc);
    pf_test_run_free(run);
}

Test(report, json_never_carries_secret_or_token_paths)
{
    struct pf_run *run = p5_run();
    char *text;

    snprintf(run->cfg.secret_file, sizeof(run->cfg.secret_file), "/run/secret-hmac-key");
    snprintf(run->cfg.token_file, sizeof(run->cfg.token_file), "/var/run/token-xyz");
    text = pf_report_json(run);
    cr_assert_null(strstr(text, "secret-hmac-key"));
    cr_assert_null(strstr(text, "token-xyz"));
    free(text);
    pf_test_run_free(run);
}

static char *table_text(const struct pf_run *run)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    cr_assert_not_null(f);
    pf_publish_table(run, f);
    fclose(f);
    return buf;
}

Test(report, table_lists_checks_remedies_and_summary)
{
    struct pf_run *run = p5_run();
    char *t = table_text(run);

    cr_assert(strstr(t, "PASS   instance_type      InstanceTypeKnown"), "%s", t);
    cr_assert(strstr(t, "FAIL   efa_devices        EFADeviceCountMismatch   "
                        "found 31 of 32 EFA devices"), "%s", t);
    cr_assert(strstr(t, "remedy: check that every EFA interface"), "%s", t);
    cr_assert(strstr(t, "PASS   nccl_net_plugin    NetPluginFound           "
                        "ofi -> /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so "
                        "(ncclNetPlugin_v10)"), "%s", t);
    cr_assert(strstr(t, "summary: FAIL EFADeviceCountMismatch - 11 passed, 0 "
                        "warnings, 1 failed, 1 skipped (exit 1)"), "%s", t);
    cr_assert_null(strstr(t, "Avg bus bandwidth"));
    free(t);
    pf_test_run_free(run);
}

Test(report, table_prints_nccl_tests_columns_and_footer)
{
    struct pf_run *run = p5_run();
    char *t;

    add_rows(run);
    t = table_text(run);
    cr_assert(strstr(t, "size         count      type  redop   root      time   "
                        "algbw   busbw #wrong      time   algbw   busbw #wrong"),
              "%s", t);
    cr_assert(strstr(t, "     1048576        262144     float    sum     -1"
                        "   1000.00    1.05    1.50      0    990.00    1.06"
                        "    1.50      0\n"), "%s", t);
    cr_assert(strstr(t, "# Out of bounds values : 0 OK\n"), "%s", t);
    cr_assert(strstr(t, "# Avg bus bandwidth : 0.765\n"), "%s", t);
    cr_assert(strstr(t, "provider tcp (fallback: EFA not used)"), "%s", t);

    run->coll.wrong_total = 3;
    free(t);
    t = table_text(run);
    cr_assert(strstr(t, "# Out of bounds values : 3 FAILED\n"), "%s", t);
    free(t);
    pf_test_run_free(run);
}

Test(report, report_file_is_written_whole)
{
    struct pf_run *run = p5_run();
    char dir[] = "/tmp/pf-report-XXXXXX", err[PF_ERRLEN] = "";
    char *text = NULL;
    cJSON *doc;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(run->cfg.report_file, sizeof(run->cfg.report_file), "%s/r.json", dir);
    run->cfg.json = true;      /* keep the table off the test's stdout */
    cr_assert(freopen("/dev/null", "w", stdout));
    cr_assert_eq(pf_publish(run, &published, err), PF_OK, "%s", err);
    text = pf_test_read_file(run->cfg.report_file);
    doc = cJSON_Parse(text);
    cr_assert_not_null(doc);
    cr_assert_str_eq(at(doc, "verdict.reason")->valuestring, "EFADeviceCountMismatch");
    cJSON_Delete(doc);
    free(text);
    unlink(run->cfg.report_file);
    cr_assert_eq(rmdir(dir), 0, "temp files left in %s", dir);
    pf_test_run_free(run);
}

/* The stdout JSON of pf_publish, parsed. */
static cJSON *publish_to_json(struct pf_run *run)
{
    char path[] = "/tmp/pf-stdout-XXXXXX", err[PF_ERRLEN] = "";
    char *text;
    cJSON *doc;
    int fd = mkstemp(path);

    cr_assert(fd >= 0);
    close(fd);
    run->cfg.json = true;
    cr_assert(freopen(path, "w", stdout));
    cr_assert_eq(pf_publish(run, &published, err), PF_OK, "%s", err);
    fflush(stdout);
    text = pf_test_read_file(path);
    unlink(path);
    doc = cJSON_Parse(text);
    cr_assert_not_null(doc, "stdout is not JSON: %s", text);
    free(text);
    return doc;
}

/* A report that cannot be written is a check: the JSON on stdout (and the
 * table) carry the exit code the process returns, never a stale 0. */
Test(report, report_failure_is_a_check_with_the_process_exit_code)
{
    struct pf_run *run = p5_run();
    cJSON *doc, *c, *report_check = NULL;

    /* A run that passed: nothing but the report can fail it. */
    memset(&run->verdict, 0, sizeof(run->verdict));
    pf_verdict_finish(run);
    cr_assert_eq(run->verdict.exit_code, 0);
    snprintf(run->cfg.report_file, sizeof(run->cfg.report_file),
             "/nonexistent-dir/r.json");
    doc = publish_to_json(run);
    /* The check is publishing's own: the verdict it published stays as
     * judged, the outcome (what the process returns) carries it. */
    cr_assert_eq(run->verdict.exit_code, 0);
    cr_assert_eq(run->verdict.n, 0);
    cr_assert_eq(published.shown.exit_code, PF_EXIT_INFRA);
    cr_assert_eq(at(doc, "verdict.exit_code")->valueint, PF_EXIT_INFRA);
    cr_assert_str_eq(at(doc, "verdict.reason")->valuestring, "ReportFailed");
    cJSON_ArrayForEach(c, at(doc, "checks"))
        if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, "report"))
            report_check = c;
    cr_assert_not_null(report_check);
    cr_assert(strstr(cJSON_GetObjectItem(report_check, "message")->valuestring,
                     "/nonexistent-dir/"));
    cJSON_Delete(doc);

    /* A failed node keeps its own exit code, the report check beside it. */
    pf_test_run_free(run);
    run = p5_run();
    snprintf(run->cfg.report_file, sizeof(run->cfg.report_file),
             "/nonexistent-dir/r.json");
    doc = publish_to_json(run);
    cr_assert_eq(at(doc, "verdict.exit_code")->valueint, PF_EXIT_FAIL);
    cr_assert_eq(published.shown.exit_code, PF_EXIT_FAIL);
    cr_assert_eq(published.shown.n, run->verdict.n + 1);
    cJSON_Delete(doc);
    pf_test_run_free(run);
}

/* The temp file is created exclusively under an unpredictable name and
 * never through a link: a symlink at the old predictable name
 * (<report>.tmp.<pid>) or at the report itself redirects nothing. */
Test(report, report_temp_file_never_follows_a_symlink)
{
    char dir[] = "/tmp/pf-link-XXXXXX", target[PF_PATH_MAX], path[PF_PATH_MAX];
    char old_tmp[PF_PATH_MAX], err[PF_ERRLEN] = "", buf[64] = "";
    struct stat st;
    FILE *f;
    DIR *d;
    struct dirent *e;
    int entries = 0;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(target, sizeof(target), "%s/victim", dir);
    f = fopen(target, "w");
    cr_assert_not_null(f);
    fputs("precious", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/r.json", dir);
    snprintf(old_tmp, sizeof(old_tmp), "%s.tmp.%d", path, (int)getpid());
    cr_assert_eq(symlink(target, old_tmp), 0);
    cr_assert_eq(pf_write_file_atomic(path, "{}\n", 3, err), PF_OK, "%s", err);
    f = fopen(target, "r");
    cr_assert(fgets(buf, sizeof(buf), f));
    fclose(f);
    cr_assert_str_eq(buf, "precious", "the write followed %s", old_tmp);

    /* A link at the report's own name is neither followed nor replaced:
     * only a regular file (or none) is. */
    unlink(path);
    cr_assert_eq(symlink(target, path), 0);
    cr_assert_neq(pf_write_file_atomic(path, "{}\n", 3, err), PF_OK);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISLNK(st.st_mode));
    f = fopen(target, "r");
    cr_assert(fgets(buf, sizeof(buf), f));
    fclose(f);
    cr_assert_str_eq(buf, "precious");

    /* No temp file left: the directory holds victim, the link, r.json. */
    d = opendir(dir);
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
            entries++;
    closedir(d);
    cr_assert_eq(entries, 3, "temp files left in %s", dir);
    unlink(old_tmp);
    unlink(path);
    unlink(target);
    cr_assert_eq(rmdir(dir), 0);
}

/* Valid UTF-8 (RFC 3629) with no control byte but newline and tab: an
 * independent check, not the sanitiser's own. */
static bool clean_text(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2
                : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        uint32_t cp = n == 1 ? *p : n == 2 ? *p & 0x1Fu : n == 3 ? *p & 0x0Fu
                                                                : *p & 0x07u;
        if (n == 0)
            return false;
        for (int i = 1; i < n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3Fu);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
            (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7F ||
            (cp >= 0x80 && cp <= 0x9F))
            return false;
        p += n;
    }
    return true;
}

/* Outside bytes (a forged hostname, a peer's message with ESC, newline and
 * invalid UTF-8) never make the report invalid UTF-8 or carry a control
 * character. */
Test(report, forged_hostname_and_messages_stay_valid_json)
{
    struct pf_run *run = p5_run();
    cJSON *doc;
    char *text;

    snprintf(run->node.hostname, sizeof(run->node.hostname),
             "evil\x1b[2J\nFAKE: pass\xff\xfe");
    snprintf(run->node.libfabric_error, sizeof(run->node.libfabric_error),
             "bad \xc0\xaf overlong \xed\xa0\x80 surrogate \x7f");
    pf_fault_set(&run->coll.fault, PF_ERR_REJECTED, PF_R_PeerRejected,
                 "peer says \x1b]0;owned\x07 \xe2\x80\xae reversed");
    run->coll.ran = true;
    pf_test_judged(run);
    text = pf_report_json(run);
    cr_assert_not_null(text);
    cr_assert(clean_text(text), "report holds raw control or "
              "invalid UTF-8 bytes");
    cr_assert_null(strchr(text, '\x1b'));
    cr_assert(strstr(text, "evil?[2J?FAKE: pass??"), "%s", text);
    doc = cJSON_Parse(text);
    cr_assert_not_null(doc);
    cJSON_Delete(doc);
    free(text);
    pf_test_run_free(run);
}

Test(report, local_ranks_other_than_zero_stay_quiet, .init = cr_redirect_stdout)
{
    struct pf_run *run = p5_run();
    char err[PF_ERRLEN] = "";
    char dir[] = "/tmp/pf-quiet-XXXXXX";

    cr_assert_not_null(mkdtemp(dir));
    run->cfg.command = PF_CMD_LOCAL;
    run->peers.rank = 2;
    snprintf(run->cfg.report_file, sizeof(run->cfg.report_file), "%s/r.json", dir);
    cr_assert_eq(pf_publish(run, &published, err), PF_OK, "%s", err);
    fflush(stdout);
    cr_assert_eq(access(run->cfg.report_file, F_OK), -1);
    cr_assert_eq(rmdir(dir), 0);
    cr_assert_stdout_eq_str("");
    pf_test_run_free(run);
}

Test(report, json_flag_prints_the_report_on_stdout, .init = cr_redirect_stdout)
{
    struct pf_run *run = p5_run();
    char err[PF_ERRLEN] = "";
    char *expect = pf_report_json(run), *full;

    run->cfg.json = true;
    cr_assert_eq(pf_publish(run, &published, err), PF_OK, "%s", err);
    fflush(stdout);
    full = malloc(strlen(expect) + 2);
    sprintf(full, "%s\n", expect);
    cr_assert_stdout_eq_str(full);
    free(full);
    free(expect);
    pf_test_run_free(run);
}

/* The peers never came: no empty table under a "provider ?" header and no
 * "Out of bounds values : 0 OK" for data never checked; the failure is
 * named once. */
Test(report, table_after_a_failed_rendezvous_has_no_empty_sweep)
{
    struct pf_run *run = p5_run();
    char *t;

    run->cfg.command = PF_CMD_RUN;
    run->peers.world = 2;
    run->peers.fault = (struct pf_fault){ .err = PF_ERR_TIMEOUT,
                                          .reason = PF_R_PeerTimeout };
    snprintf(run->peers.fault.msg, sizeof(run->peers.fault.msg),
             "rank 0 at 127.0.0.1:30411 never answered within 4 s");
    t = table_text(run);
    cr_assert(strstr(t, "\n# all_reduce: no message size measured\n"
                        "# collective failed: PeerTimeout: rank 0 at "
                        "127.0.0.1:30411 never answered within 4 s\n"), "%s", t);
    cr_assert_null(strstr(t, "Out of bounds"), "%s", t);
    cr_assert_null(strstr(t, "provider ?"), "%s", t);
    cr_assert_null(strstr(t, "Avg bus bandwidth"), "%s", t);
    cr_assert_null(strstr(t, "#wrong"), "%s", t);
    free(t);
    pf_test_run_free(run);
}
