/* pf_publish: the one place that decides what goes where.
 *   stdout   the table (table.c), or the JSON report with cfg.json;
 *   file     the JSON report, written atomically, with cfg.report_file;
 *   Node     labels, conditions, Event, taint (node.c) in k8s mode with
 *            cfg.publish;
 *   history  the JSON report again, in cfg.history_dir (history.c);
 *   metrics  cfg.metrics_textfile and cfg.pushgateway (metrics.c).
 * Under `local` only rank 0 speaks: the other ranks' results reach it
 * through the collective, and N copies of the table would be noise. */
#include "publish.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/config.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "../verdict/verdict.h"
#include "history.h"
#include "metrics.h"
#include "pushgateway.h"
#include "node.h"

/* A Node write that failed becomes a check of its own, so the table, the
 * report and the exit code all tell the same story. */
static void publish_failed(struct pf_run *run, pf_err rc, const char *msg)
{
    pf_verdict_add(&run->verdict, "publish", "", PF_FAIL,
                   pf_reason_for_err(rc, PF_STAGE_PUBLISH), "", "%s", msg);
    pf_verdict_finish(run);
}

/* History and metrics are for monitoring: a failure is logged and changes
 * neither the verdict nor the exit code, since the outcome is already on
 * the Node and in the report, and a stale
 * efa_preflight_last_run_timestamp_seconds is what alerts watch for. */
static void publish_monitoring(const struct pf_run *run, const char *json)
{
    const struct pf_config *cfg = &run->cfg;
    char msg[PF_ERRLEN], *text = NULL;
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    if (cfg->history_dir[0] && json &&
        pf_history_append(cfg->history_dir, cfg->history_keep, json, &now,
                          msg) != PF_OK)
        pf_error("%s", msg);
    if (!cfg->metrics_textfile[0] && !cfg->pushgateway[0])
        return;
    text = pf_metrics_text(run, (double)now.tv_sec + now.tv_nsec / 1e9);
    if (!text) {
        pf_error("metrics: out of memory");
        return;
    }
    if (cfg->metrics_textfile[0] &&
        pf_metrics_write_textfile(cfg->metrics_textfile, text, msg) != PF_OK)
        pf_error("%s", msg);
    /* A Pushgateway is the cluster's: a usage error writes nothing there.
     * Its own short budget, never past the publishing grace. */
    if (cfg->pushgateway[0] && run->verdict.cls != PF_CLASS_USAGE) {
        int64_t until = pf_deadline_in(PF_PUSH_BUDGET_MS);
        int64_t last = pf_run_deadline(run) + PF_PUBLISH_GRACE_MS;

        if (pf_metrics_push(cfg->pushgateway, pf_metrics_node(run), text,
                            until < last ? until : last, msg) != PF_OK)
            pf_error("metrics: %s", msg);
    }
    free(text);
}

bool pf_publish_to_node(const struct pf_run *run)
{
    const struct pf_config *cfg = &run->cfg;

    /* bootstrap "auto" resolves to k8s in a pod: config or discover
     * records it. */
    return cfg->publish && cfg->command != PF_CMD_LOCAL &&
           (!strcmp(cfg->bootstrap, "k8s") ||
            !strcmp(run->peers.bootstrap, "k8s"));
}

pf_err pf_publish_begin(struct pf_run *run, char *err)
{
    if (!pf_publish_to_node(run))
        return PF_OK;
    return pf_publish_node_begin(run, err);
}

/* The report file could not be written: a check of its own, so the
 * table and the JSON on stdout carry the exit code the process returns. */
static void report_failed(struct pf_run *run, const char *msg)
{
    pf_error("report: %s", msg);
    pf_verdict_add(&run->verdict, "report", "", PF_FAIL, PF_R_ReportFailed,
                   "", "%s", msg);
    pf_verdict_finish(run);
}

pf_err pf_publish(struct pf_run *run, bool *node_written, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    char *json = NULL;
    char node_err[PF_ERRLEN] = "", file_err[PF_ERRLEN] = "";

    if (node_written)
        *node_written = false;
    if (cfg->command == PF_CMD_LOCAL && run->peers.rank != 0)
        return PF_OK;

    /* The Node first: its outcome is part of what the report and the
     * table say. A usage error writes nothing to the cluster, and puts
     * back what the run's start changed. */
    if (pf_publish_to_node(run) && run->verdict.cls != PF_CLASS_USAGE) {
        struct pf_mark_outcome mark;
        pf_err nrc = pf_publish_node(run, &mark, node_err);
        /* A mark withheld is a warning of its own in the report: the
         * node failed, and the cluster does not keep jobs away from it. */
        if (mark.withheld != PF_R_None) {
            pf_verdict_add(&run->verdict, "taint", "", PF_WARN, mark.withheld,
                           "", "%s", mark.note);
            pf_verdict_finish(run);
        }
        if (nrc != PF_OK) {
            pf_error("publish: %s", node_err);
            publish_failed(run, nrc, node_err);
        } else if (node_written) {
            *node_written = true;
        }
    } else if (run->mark.marked && pf_publish_node_undo(run, node_err) != PF_OK) {
        pf_warn("node %s: could not put back the state found before the "
                "run: %s", run->mark.node, node_err);
    }

    /* Then the file, so that its failure can still reach stdout. */
    if (cfg->report_file[0]) {
        json = pf_report_json(run);
        if (!json)
            return pf_fail(err, PF_ERR_NOMEM, "JSON report: out of memory");
        if (pf_write_file_atomic(cfg->report_file, json, strlen(json),
                                 file_err) != PF_OK) {
            report_failed(run, file_err);
            free(json);
            json = NULL;
        }
    }
    if (!json && (cfg->json || cfg->history_dir[0])) {
        json = pf_report_json(run);
        if (!json)
            return pf_fail(err, PF_ERR_NOMEM, "JSON report: out of memory");
    }
    if (cfg->json) {
        fputs(json, stdout);
        fputc('\n', stdout);
    } else {
        pf_publish_table(run, stdout);
    }
    fflush(stdout);
    publish_monitoring(run, json);
    free(json);
    return PF_OK;
}
