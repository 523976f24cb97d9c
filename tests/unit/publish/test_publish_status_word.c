/* One status word per class: the Node's status label, the report's
 * verdict.status, the efa_preflight_status metric, `history` and the
 * table's summary all say the same word for the same run; the report's
 * EFAFabricReady says what the Node's condition says. A group failure
 * used to label the Node `error` while the report and history said
 * `fail`. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_fixture.h"
#include "config/catalog.h"
#include "config/config.h"
#include "publish/history.h"
#include "publish/metrics.h"
#include "publish/node.h"
#include "publish/publish.h"
#include "k8s/client.h"
#include "util/json.h"
#include "verdict/verdict.h"

/* A 2-node run whose node checks passed and whose fabric check says st
 * with reason (PF_R_None: a clean pass). */
static struct pf_run *run_of(enum pf_status st, enum pf_reason reason)
{
    struct pf_run *run = calloc(1, sizeof(*run));

    cr_assert_not_null(run);
    pf_config_defaults(&run->cfg);
    run->cfg.command = PF_CMD_RUN;
    run->cfg.mode = PF_MODE_INITCONTAINER;
    run->cfg.valid_hours = 24;
    run->node.efa_count = 32;
    run->peers.world = 2;
    run->coll.slow_rank = -1;
    run->coll.nnodes = 2;
    pf_test_judged(run);
    pf_verdict_add(&run->verdict, "efa_devices", PF_COND_DEVICES, PF_PASS,
                   PF_R_EFADeviceCountMatches, "", "32 of 32");
    pf_verdict_add(&run->verdict, "busbw", PF_COND_FABRIC, st, reason, "",
                   "case %s", pf_reason_name(reason));
    pf_verdict_finish(run);
    return run;
}

static const char *metric_status(const char *text, char *out, size_t cap)
{
    static const char *const words[] = { "pass", "warn", "fail", "error",
                                         "usage" };
    int ones = 0;

    out[0] = '\0';
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        char line[96];
        snprintf(line, sizeof(line), "efa_preflight_status{status=\"%s\"} 1\n",
                 words[i]);
        if (strstr(text, line)) {
            snprintf(out, cap, "%s", words[i]);
            ones++;
        }
    }
    cr_assert_eq(ones, 1, "one-hot status: %s", text);
    return out;
}

/* The newest run's status as `history --json` reads it back. */
static void history_status(const char *json, char *out, size_t cap)
{
    char dir[] = "/tmp/pf-status-word-XXXXXX", err[PF_ERRLEN], cmd[96];
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    struct timespec t = { 1795309323, 0 };
    cJSON *arr;

    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(pf_history_append(dir, 10, json, &t, err), PF_OK, "%s", err);
    f = open_memstream(&buf, &len);
    cr_assert_eq(pf_history_print(dir, true, false, f, err), PF_OK, "%s", err);
    fclose(f);
    arr = cJSON_Parse(buf);
    cr_assert_eq(cJSON_GetArraySize(arr), 1, "%s", buf);
    snprintf(out, cap, "%s",
             cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
                                                      "status")));
    cJSON_Delete(arr);
    free(buf);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void summary_word(const struct pf_run *run, char *out, size_t cap)
{
    char *buf = NULL;
    size_t len = 0, k;
    FILE *f = open_memstream(&buf, &len);
    const char *s;

    pf_publish_table(run, f);
    fclose(f);
    s = strstr(buf, "\nsummary: ");
    cr_assert_not_null(s, "%s", buf);
    s += strlen("\nsummary: ");
    for (k = 0; k + 1 < cap && s[k] && s[k] != ' '; k++)
        out[k] = (char)tolower((unsigned char)s[k]);
    out[k] = '\0';
    free(buf);
}

Test(status_word, report_label_metric_history_and_table_agree)
{
    static const struct {
        enum pf_status st;
        enum pf_reason reason;
        enum pf_reason_class cls;
        const char *word;         /* everywhere */
        const char *label;        /* NULL: nothing written */
        const char *condition;    /* the Node's EFAFabricReady */
        const char *report_cond;  /* the report's EFAFabricReady */
    } cases[] = {
        { PF_PASS, PF_R_None, PF_CLASS_OK, "pass", "pass", "True", "pass" },
        { PF_WARN, PF_R_BandwidthNotJudged, PF_CLASS_WARN, "warn", "warn",
          "True", "warn" },
        { PF_FAIL, PF_R_DataCorruption, PF_CLASS_FABRIC, "fail", "fail",
          "False", "fail" },
        { PF_FAIL, PF_R_FabricUnavailable, PF_CLASS_NODE, "fail", "fail",
          "False", "fail" },
        { PF_FAIL, PF_R_BandwidthBelowThreshold, PF_CLASS_GROUP, "error",
          "error", "Unknown", "unknown" },
        { PF_FAIL, PF_R_PeerLost, PF_CLASS_INFRA, "error", "error",
          "Unknown", "unknown" },
        { PF_WARN, PF_R_SlowPeer, PF_CLASS_PEER, "warn", "warn", "Unknown",
          "unknown" },
        { PF_FAIL, PF_R_RendezvousPortInUse, PF_CLASS_USAGE, "usage", NULL,
          "Unknown", "unknown" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_run *run = run_of(cases[i].st, cases[i].reason);
        const char *why = pf_class_name(cases[i].cls);
        struct pf_node_labels l;
        char *json, *text, word[32];
        cJSON *doc, *p;

        cr_assert_eq(run->verdict.cls, cases[i].cls, "%s", why);
        cr_assert_str_eq(pf_class_status_word(cases[i].cls), cases[i].word);

        /* the Node: label and condition */
        if (cases[i].label) {
            pf_node_labels_make(run, 1795309323, &l);
            cr_assert_str_eq(l.status, cases[i].word, "%s: label", why);
        } else {
            cr_assert_null(pf_class_status_label(run->verdict.cls), "%s", why);
        }
        p = pf_node_conditions_patch(run, NULL, "2026-11-22T01:02:03Z");
        {
            const cJSON *c, *fab = NULL;
            cJSON_ArrayForEach(c, pf_json_at(p, "status.conditions"))
                if (!strcmp(pf_json_str(c, "type"), PF_COND_FABRIC))
                    fab = c;
            cr_assert_not_null(fab, "%s", why);
            cr_assert_str_eq(pf_json_str(fab, "status"), cases[i].condition,
                             "%s: condition", why);
        }
        cJSON_Delete(p);

        /* the report */
        json = pf_report_json(run);
        cr_assert_not_null(json);
        doc = cJSON_Parse(json);
        cr_assert_str_eq(pf_json_str(doc, "verdict.status"), cases[i].word,
                         "%s: report", why);
        cr_assert_str_eq(pf_json_str(doc, "verdict.conditions.EFAFabricReady"),
                         cases[i].report_cond, "%s: report condition", why);
        cr_assert_str_eq(pf_json_str(doc, "verdict.conditions.EFADevicesReady"),
                         "pass", "%s", why);
        cJSON_Delete(doc);

        /* the metric */
        text = pf_metrics_text(run, 1795309323.0);
        cr_assert_not_null(text);
        cr_assert_str_eq(metric_status(text, word, sizeof(word)), cases[i].word,
                         "%s: metric", why);
        free(text);

        /* history, read back from the report it keeps */
        history_status(json, word, sizeof(word));
        cr_assert_str_eq(word, cases[i].word, "%s: history", why);
        free(json);

        /* the table's summary */
        summary_word(run, word, sizeof(word));
        cr_assert_str_eq(word, cases[i].word, "%s: summary", why);
        free(run);
    }
}
