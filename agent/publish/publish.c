/* pf_publish: the one place that decides what goes where, a table of
 * sinks (below) walked in order, each with its own enabled() and write():
 *   Node     labels, conditions, Event, taint (node.c) in k8s mode with
 *            cfg.publish;
 *   file     the JSON report, written atomically, with cfg.report_file;
 *   stdout   the table (table.c), or the JSON report with cfg.json;
 *   history  the JSON report again, in cfg.history_dir (history.c);
 *   metrics  cfg.metrics_textfile and cfg.pushgateway (metrics.c).
 * Under `local` only rank 0 speaks: the other ranks' results reach it
 * through the collective, and N copies of the table would be noise. */
#include "publish.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/run_clock.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "../verdict/verdict.h"
#include "../baseline/source.h"
#include "history.h"
#include "metrics.h"
#include "pushgateway.h"
#include "node.h"

/* A Node write that failed becomes a check of publishing's own, so the
 * table, the report and the exit code all tell the same story. */
static void publish_failed(struct pf_verdict *shown, pf_err rc,
                           const char *msg)
{
    pf_verdict_add(shown, "publish", "", PF_FAIL,
                   pf_reason_for_err(rc, PF_STAGE_PUBLISH), "", "%s", msg);
    pf_verdict_settle(shown);
}

bool pf_publish_to_node(const struct pf_run *run)
{
    const struct pf_config *cfg = &run->cfg;

    /* bootstrap "auto" resolves to k8s in a pod: config or discover
     * records it. */
    return cfg->publish && cfg->command != PF_CMD_LOCAL &&
           (cfg->bootstrap == PF_BOOT_K8S ||
            run->peers.bootstrap == PF_BOOT_K8S);
}

pf_err pf_publish_begin(struct pf_run *run, char *err)
{
    if (!pf_publish_to_node(run))
        return PF_OK;
    return pf_publish_node_begin(run, err);
}

/* The report file could not be written: a check of its own, so the
 * table and the JSON on stdout carry the exit code the process returns. */
static void report_failed(struct pf_verdict *shown, const char *msg)
{
    pf_error("report: %s", msg);
    pf_verdict_add(shown, "report", "", PF_FAIL, PF_R_ReportFailed, "", "%s",
                   msg);
    pf_verdict_settle(shown);
}

/* ---------------------------------------------------------------- sinks */

/* What the sinks of one pf_publish share: the outcome they add to, the
 * JSON report and the metrics text, each made once, and the moment the
 * monitoring sinks record. */
struct sink_ctx {
    const struct pf_run *run;
    struct pf_publish_outcome *out;
    char *json;                       /* the JSON report, NULL until made */
    char *metrics;                    /* the metrics text, NULL until made */
    bool metrics_tried;
    bool now_taken;
    struct timespec now;
    char *err;
};

/* AMENDS: may add a check to the outcome, so it runs before the JSON
 * report the later sinks read is made. READS_JSON: reads that report. */
enum { SINK_AMENDS = 1, SINK_READS_JSON = 2 };

struct sink {
    const char *name;
    bool (*enabled)(const struct sink_ctx *x);
    pf_err (*write)(struct sink_ctx *x);
    unsigned flags;                   /* SINK_* */
};

static const struct timespec *sink_now(struct sink_ctx *x)
{
    if (!x->now_taken) {
        clock_gettime(CLOCK_REALTIME, &x->now);
        x->now_taken = true;
    }
    return &x->now;
}

/* The metrics text, made once for the textfile and the Pushgateway; NULL
 * (logged once) when there is no memory for it. */
static const char *sink_metrics(struct sink_ctx *x)
{
    if (!x->metrics_tried) {
        const struct timespec *now = sink_now(x);
        x->metrics_tried = true;
        x->metrics = pf_metrics_text_of(x->run, &x->out->shown,
                                        (double)now->tv_sec +
                                            now->tv_nsec / 1e9);
        if (!x->metrics)
            pf_error("metrics: out of memory");
    }
    return x->metrics;
}

/* The Node first: its outcome is part of what the report and the table
 * say. A usage error writes nothing to the cluster, and puts back what the
 * run's start changed. */
static bool node_verdict(const struct pf_run *run)
{
    return pf_publish_to_node(run) && run->verdict.cls != PF_CLASS_USAGE;
}

static bool node_enabled(const struct sink_ctx *x)
{
    return node_verdict(x->run) || x->run->mark.marked;
}

static pf_err node_write(struct sink_ctx *x)
{
    const struct pf_run *run = x->run;
    char node_err[PF_ERRLEN] = "";

    if (node_verdict(run)) {
        struct pf_mark_outcome mark;
        pf_err nrc = pf_publish_node(run, &mark, node_err);
        /* A mark withheld is a warning of its own in the report: the
         * node failed, and the cluster does not keep jobs away from it. */
        if (mark.withheld != PF_R_None) {
            pf_verdict_add(&x->out->shown, "taint", "", PF_WARN,
                           mark.withheld, "", "%s", mark.note);
            pf_verdict_settle(&x->out->shown);
        }
        if (nrc != PF_OK) {
            pf_error("publish: %s", node_err);
            publish_failed(&x->out->shown, nrc, node_err);
        } else {
            x->out->node_written = true;
        }
    } else if (pf_publish_node_undo(run, node_err) != PF_OK) {
        pf_warn("node %s: could not put back the state found before the "
                "run: %s", run->mark.node, node_err);
    }
    return PF_OK;
}

/* Then the file, so that its failure can still reach stdout. */
static bool report_enabled(const struct sink_ctx *x)
{
    return x->run->cfg.report_file[0] != '\0';
}

static pf_err report_write(struct sink_ctx *x)
{
    char file_err[PF_ERRLEN] = "";

    x->json = pf_report_json_of(x->run, &x->out->shown);
    if (!x->json)
        return pf_fail(x->err, PF_ERR_NOMEM, "JSON report: out of memory");
    if (pf_write_file_atomic(x->run->cfg.report_file, x->json,
                             strlen(x->json), file_err) != PF_OK) {
        /* The report the later sinks read carries the failure. */
        report_failed(&x->out->shown, file_err);
        free(x->json);
        x->json = NULL;
    }
    return PF_OK;
}

static bool json_enabled(const struct sink_ctx *x)
{
    return x->run->cfg.json;
}

static pf_err json_write(struct sink_ctx *x)
{
    fputs(x->json, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    return PF_OK;
}

static bool table_enabled(const struct sink_ctx *x)
{
    return !x->run->cfg.json;
}

static pf_err table_write(struct sink_ctx *x)
{
    pf_publish_table_of(x->run, &x->out->shown, stdout);
    fflush(stdout);
    return PF_OK;
}

/* History and metrics are for monitoring: a failure is logged and changes
 * neither the verdict nor the exit code, since the outcome is already on
 * the Node and in the report, and a stale
 * efa_preflight_last_run_timestamp_seconds is what alerts watch for. */
static bool history_enabled(const struct sink_ctx *x)
{
    return x->run->cfg.history_dir[0] != '\0';
}

static pf_err history_write(struct sink_ctx *x)
{
    const struct pf_config *cfg = &x->run->cfg;
    char msg[PF_ERRLEN];

    if (pf_history_append(cfg->history_dir, cfg->history_keep, x->json,
                          sink_now(x), msg) != PF_OK)
        pf_error("%s", msg);
    return PF_OK;
}

static bool textfile_enabled(const struct sink_ctx *x)
{
    return x->run->cfg.metrics_textfile[0] != '\0';
}

static pf_err textfile_write(struct sink_ctx *x)
{
    const char *text = sink_metrics(x);
    char msg[PF_ERRLEN];

    if (text && pf_metrics_write_textfile(x->run->cfg.metrics_textfile, text,
                                          msg) != PF_OK)
        pf_error("%s", msg);
    return PF_OK;
}

/* A Pushgateway is the cluster's: a usage error writes nothing there. */
static bool pushgateway_enabled(const struct sink_ctx *x)
{
    return x->run->cfg.pushgateway[0] &&
           x->out->shown.cls != PF_CLASS_USAGE;
}

static pf_err pushgateway_write(struct sink_ctx *x)
{
    const struct pf_run *run = x->run;
    const char *text = sink_metrics(x);
    /* Its own short budget, never past the publishing grace. */
    int64_t until = pf_deadline_in(PF_PUSH_BUDGET_MS);
    int64_t last = pf_run_deadline(run) + PF_PUBLISH_GRACE_MS;
    char msg[PF_ERRLEN];

    if (text && pf_metrics_push(run->cfg.pushgateway, pf_metrics_node(run),
                                text, until < last ? until : last,
                                msg) != PF_OK)
        pf_error("metrics: %s", msg);
    return PF_OK;
}

/* The fleet baseline: after a run that passed, the leader (rank 0, the
 * one that judged the links) folds its values into the ConfigMap. Like
 * history and metrics, a failure is logged and changes nothing else. */
static bool baseline_enabled(const struct sink_ctx *x)
{
    const struct pf_run *run = x->run;

    return pf_publish_to_node(run) && run->cfg.baseline_configmap[0] &&
           run->peers.rank == 0 && x->out->shown.exit_code == 0 &&
           run->coll.ran;
}

static pf_err baseline_write(struct sink_ctx *x)
{
    pf_base_fold_run(x->run);
    return PF_OK;
}

/* Walked in this order: the Node, the report file, stdout (the JSON
 * report or the table), then the monitoring sinks. */
static const struct sink sinks[] = {
    { "node", node_enabled, node_write, SINK_AMENDS },
    { "report", report_enabled, report_write, SINK_AMENDS | SINK_READS_JSON },
    { "json", json_enabled, json_write, SINK_READS_JSON },
    { "table", table_enabled, table_write, 0 },
    { "history", history_enabled, history_write, SINK_READS_JSON },
    { "baseline", baseline_enabled, baseline_write, 0 },
    { "metrics_textfile", textfile_enabled, textfile_write, 0 },
    { "pushgateway", pushgateway_enabled, pushgateway_write, 0 },
};

#define NSINKS (sizeof(sinks) / sizeof(sinks[0]))

/* Whether an enabled sink from i on reads the JSON report once the
 * verdict is final. */
static bool json_read_from(size_t i, const struct sink_ctx *x)
{
    for (; i < NSINKS; i++)
        if ((sinks[i].flags & SINK_READS_JSON) &&
            !(sinks[i].flags & SINK_AMENDS) && sinks[i].enabled(x))
            return true;
    return false;
}

pf_err pf_publish(const struct pf_run *run, struct pf_publish_outcome *out,
                  char *err)
{
    struct sink_ctx x = { .run = run, .out = out, .err = err };
    pf_err rc = PF_OK;

    out->shown = run->verdict;
    out->node_written = false;
    if (run->cfg.command == PF_CMD_LOCAL && run->peers.rank != 0)
        return PF_OK;

    for (size_t i = 0; i < NSINKS && rc == PF_OK; i++) {
        const struct sink *s = &sinks[i];
        /* The verdict is final past the sinks that amend it: the JSON
         * report is made once then, for every later sink that reads it. */
        if (!(s->flags & SINK_AMENDS) && !x.json && json_read_from(i, &x)) {
            x.json = pf_report_json_of(run, &out->shown);
            if (!x.json) {
                rc = pf_fail(err, PF_ERR_NOMEM, "JSON report: out of memory");
                break;
            }
        }
        if (s->enabled(&x))
            rc = s->write(&x);
    }
    free(x.json);
    free(x.metrics);
    return rc;
}
