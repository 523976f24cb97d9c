/* `efa-preflight monitor`: read, judge, export, write; then wait for the
 * next interval or the end (monitor.h).
 *
 * One thread does the work; the signal thread (command.c) only sets *stop and
 * wakes the wait, so a SIGTERM ends the loop within one API request's
 * bound, the cancel flag cutting even that short. */
#include "monitor.h"
#include "gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../config/catalog.h"
#include "../k8s/session.h"
#include "../probe/probe.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/httpd.h"
#include "../util/log.h"

/* The Node's gate labels are read, and re-validation decided, at most
 * this often: one GET (and sometimes a pod list) per node per minute keeps
 * a thousand monitors light on the API server. */
#define GATE_EVERY_S 60.0
/* The condition is written again at least this often, so its
 * lastHeartbeatTime tells a live monitor from one that stopped. */
#define HEARTBEAT_S 300.0

/* Whether the monitor writes to a Node: asked to publish, and an API
 * server to write to (flag or in-cluster). */
static bool use_k8s(const struct pf_config *cfg)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    return cfg->publish && (cfg->api_server[0] || (host && *host));
}

static void wait_until(struct pf_mon_ctl *ctl, double until)
{
    pthread_mutex_lock(&ctl->lock);
    while (!atomic_load(&ctl->stop)) {
        double left = until - pf_now_s();
        struct timespec ts;
        if (left <= 0)
            break;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += (time_t)left;
        ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ctl->wake, &ctl->lock, &ts);
    }
    pthread_mutex_unlock(&ctl->lock);
}

pf_err pf_mon_ctl_init(struct pf_mon_ctl *ctl, char *err)
{
    pthread_condattr_t ca;

    memset(ctl, 0, sizeof(*ctl));
    atomic_init(&ctl->stop, 0);
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&ctl->wake, &ca) != 0)
        return pf_fail(err, PF_ERR_SYS, "monitor: cannot make a condition "
                       "variable");
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&ctl->lock, NULL);
    return PF_OK;
}

void pf_mon_ctl_stop(struct pf_mon_ctl *ctl)
{
    pthread_mutex_lock(&ctl->lock);
    atomic_store(&ctl->stop, 1);
    pthread_cond_broadcast(&ctl->wake);
    pthread_mutex_unlock(&ctl->lock);
}

void pf_mon_ctl_destroy(struct pf_mon_ctl *ctl)
{
    pthread_cond_destroy(&ctl->wake);
    pthread_mutex_destroy(&ctl->lock);
    free(ctl->text);
    ctl->text = NULL;
}

/* Hand the interval's text to readers (the scrape endpoint). */
static void publish_text(struct pf_mon_ctl *ctl, const struct pf_mon_buf *b,
                         bool healthy)
{
    char *copy = malloc(b->len + 1);

    if (!copy)
        return;                       /* the old text stays served */
    memcpy(copy, b->p ? b->p : "", b->len);
    copy[b->len] = '\0';
    pthread_mutex_lock(&ctl->lock);
    free(ctl->text);
    ctl->text = copy;
    ctl->text_len = b->len;
    ctl->healthy = healthy;
    ctl->last_read = pf_now_s();
    pthread_mutex_unlock(&ctl->lock);
}

static int expected_efa(const struct pf_run *run)
{
    if (run->cfg.expect_efa >= 0)
        return run->cfg.expect_efa;
    return run->instance ? run->instance->efa_count : -1;
}

int pf_monitor_run(struct pf_run *run, struct pf_mon_ctl *ctl)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_mon_rules rules;
    struct pf_mon_health health = { 0 };
    struct pf_mon_snap prev = { 0 }, cur = { 0 };
    struct pf_mon_gate gate = { 0 };
    struct pf_mon_buf text = { 0 };
    struct pf_mon_gpu *gpus = NULL;
    enum pf_reason gpu_last = PF_R_None;
    char gpu_last_msg[PF_ERRLEN] = "";
    double gpu_published = 0;
    struct pf_mon_k8s *k8s = NULL;
    struct pf_httpd *httpd = NULL;
    struct pf_node *node;
    char err[PF_ERRLEN] = "", node_name[PF_NAME_MAX];
    char last_msg[PF_ERRLEN] = "";
    enum pf_reason last_reason = PF_R_None;
    bool have_prev = false, cleared_since = false, published = false;
    double next_gate = 0, last_publish = 0, start;
    int code = PF_EXIT_PASS;

    if (pf_check_root_dir(cfg->sysfs_root, "sysfs_root", err) != PF_OK ||
        pf_check_root_dir(cfg->dev_root, "dev_root", err) != PF_OK ||
        pf_mon_rules_parse(cfg->monitor_thresholds, cfg->monitor_raise,
                           cfg->monitor_clear, &rules, err) != PF_OK) {
        pf_error("%s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    ctl->interval_s = cfg->interval_s;
    /* Before the server's threads (libcurl's global state, and OpenSSL's
     * some 3 MiB of pages, only where a Node is written). */
    if (use_k8s(cfg))
        pf_k8s_global_init();
    if (cfg->listen[0] && pf_mon_serve(cfg->listen, ctl, &httpd, err) !=
                              PF_OK) {
        pf_error("%s", err);
        pf_mon_rules_free(&rules);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    node = calloc(1, sizeof(*node));
    if (!node) {
        pf_httpd_stop(httpd);
        pf_mon_rules_free(&rules);
        pf_error("out of memory");
        return pf_class_exit_code(PF_CLASS_INFRA);
    }
    if (use_k8s(cfg)) {
        if (pf_mon_k8s_open(cfg, &ctl->stop, &k8s, err) != PF_OK) {
            pf_error("monitor: %s", err);
            free(node);
            pf_httpd_stop(httpd);
            pf_mon_rules_free(&rules);
            return pf_class_exit_code(PF_CLASS_USAGE);
        }
    }
    if (gethostname(run->node.hostname, sizeof(run->node.hostname) - 1) != 0)
        run->node.hostname[0] = '\0';
    if (k8s && pf_mon_k8s_read(k8s, &gate, err) != PF_OK)
        pf_warn("monitor: %s", err);
    /* The Node's instance-type label where DMI names none, as the gate. */
    pf_probe_instance(cfg, &run->node,
                      gate.instance_type[0] ? gate.instance_type : NULL);
    run->instance = pf_catalog_find(&run->catalog, run->node.instance_type);
    snprintf(node_name, sizeof(node_name), "%s",
             cfg->node_name[0] ? cfg->node_name
             : getenv("NODE_NAME") && *getenv("NODE_NAME") ? getenv("NODE_NAME")
                                                           : run->node.hostname);
    pf_info("monitor: %s (%s, %d EFA devices expected), every %g s, raise "
            "after %d, clear after %d", node_name,
            run->node.instance_type[0] ? run->node.instance_type : "type unknown",
            expected_efa(run), cfg->interval_s, rules.raise_after,
            rules.clear_after);

    /* GPU health beside the NICs, with the same hysteresis (gpu.h) */
    gpus = calloc(1, sizeof(*gpus));
    if (gpus)
        pf_mon_gpu_init(gpus, rules.raise_after, rules.clear_after,
                        run->instance);
    start = pf_now_s();
    for (long i = 0; !atomic_load(&ctl->stop); i++) {
        double t0 = pf_now_s();
        char msg[PF_ERRLEN];
        enum pf_reason reason;

        memset(node, 0, sizeof(*node));
        pf_probe_efa_quiet(cfg, node);
        if (pf_mon_read(cfg->sysfs_root, node, expected_efa(run), &cur,
                        err) != PF_OK ||
            pf_mon_judge(&health, &rules, have_prev ? &prev : NULL, &cur,
                         err) != PF_OK) {
            pf_error("monitor: %s", err);
            pf_mon_snap_free(&cur);
            code = pf_class_exit_code(PF_CLASS_INFRA);
            break;
        }
        reason = pf_mon_condition(&health, msg, sizeof(msg));
        if (gpus) {
            char gmsg[PF_ERRLEN];
            enum pf_reason gr;
            pf_mon_gpu_step(gpus);
            gr = pf_mon_gpu_condition(gpus, gmsg, sizeof(gmsg));
            for (int c = 0; c < gpus->nchanges; c++)
                pf_warn("monitor: %s %s",
                        pf_reason_name(gpus->changes[c].reason),
                        gpus->changes[c].msg);
            if (k8s && gr != PF_R_None &&
                (gr != gpu_last || strcmp(gmsg, gpu_last_msg) ||
                 gpus->nchanges || t0 - gpu_published >= HEARTBEAT_S)) {
                if (pf_mon_k8s_condition(k8s, PF_COND_GPU, gr, gmsg,
                                         gpus->changes, gpus->nchanges,
                                         err) != PF_OK) {
                    pf_warn("monitor: node %s: %s", node_name, err);
                } else {
                    gpu_last = gr;
                    gpu_published = t0;
                    snprintf(gpu_last_msg, sizeof(gpu_last_msg), "%s", gmsg);
                }
            }
            if (k8s && cfg->monitor_taint && gpus->nchanges &&
                pf_mon_k8s_taint(k8s, pf_reason_class_of(reason) ==
                                          PF_CLASS_NODE ||
                                      pf_mon_gpu_faulted(gpus),
                                 err) != PF_OK)
                pf_warn("monitor: node %s: taint: %s", node_name, err);
        }
        for (int c = 0; c < health.n; c++)
            if (health.nics[c].pending[0])
                pf_info("monitor: %s: %s: not a fault before %d reads in a row",
                        health.nics[c].name, health.nics[c].pending,
                        rules.raise_after);
        for (int c = 0; c < health.nchanges; c++) {
            const struct pf_mon_change *ch = &health.changes[c];
            pf_warn("monitor: %s %s", pf_reason_name(ch->reason), ch->msg);
            if (!ch->raised)
                cleared_since = true;
        }
        if (k8s && (!published || reason != last_reason ||
                    strcmp(msg, last_msg) || health.nchanges ||
                    t0 - last_publish >= HEARTBEAT_S)) {
            if (pf_mon_k8s_publish(k8s, reason, msg, health.changes,
                                   health.nchanges, err) != PF_OK) {
                pf_warn("monitor: node %s: %s", node_name, err);
            } else {
                published = true;
                last_publish = t0;
                last_reason = reason;
                snprintf(last_msg, sizeof(last_msg), "%s", msg);
            }
            if (cfg->monitor_taint &&
                pf_mon_k8s_taint(k8s, pf_reason_class_of(reason) ==
                                          PF_CLASS_NODE ||
                                      (gpus && pf_mon_gpu_faulted(gpus)),
                                 err) != PF_OK)
                pf_warn("monitor: node %s: taint: %s", node_name, err);
        }
        if (k8s && (t0 >= next_gate || health.nchanges)) {
            bool marked = false;
            char why[512];
            next_gate = t0 + GATE_EVERY_S;
            if (pf_mon_k8s_read(k8s, &gate, err) != PF_OK)
                pf_warn("monitor: node %s: %s", node_name, err);
            /* Never while this node's own fault stands. */
            if (cfg->revalidate &&
                pf_reason_class_of(reason) != PF_CLASS_NODE) {
                if (pf_mon_k8s_revalidate(k8s, cleared_since, &marked, why,
                                          sizeof(why), err) != PF_OK) {
                    pf_warn("monitor: node %s: re-validation: %s",
                            node_name, err);
                } else if (marked) {
                    struct pf_mon_change ch = {
                        .raised = false,
                        .reason = PF_R_RevalidationRequested };
                    snprintf(ch.msg, sizeof(ch.msg), "%s", why);
                    pf_warn("monitor: %s %s",
                            pf_reason_name(PF_R_RevalidationRequested), why);
                    cleared_since = false;
                    snprintf(gate.status, sizeof(gate.status), "pending");
                    if (pf_mon_k8s_publish(k8s, reason, msg, &ch, 1, err) !=
                        PF_OK)
                        pf_warn("monitor: node %s: %s", node_name, err);
                } else {
                    pf_debug("monitor: re-validation: %s", why);
                }
            }
        }
        if (pf_mon_expose(node_name, &cur, &health, &rules, &gate,
                          (int64_t)time(NULL), &text, err) != PF_OK) {
            pf_warn("monitor: %s", err);
        } else {
            if (gpus)
                pf_mon_gpu_expose(gpus, node_name, &text);
            publish_text(ctl, &text,
                         pf_reason_class_of(reason) != PF_CLASS_NODE &&
                             !(gpus && pf_mon_gpu_faulted(gpus)));
            if (cfg->metrics_textfile[0] &&
                pf_write_file_atomic(cfg->metrics_textfile, text.p, text.len,
                                     err) != PF_OK)
                pf_warn("monitor: %s", err);
        }
        pf_mon_snap_free(&prev);
        prev = cur;
        memset(&cur, 0, sizeof(cur));
        have_prev = true;
        if (cfg->monitor_intervals > 0 && i + 1 >= cfg->monitor_intervals)
            break;
        wait_until(ctl, start + (double)(i + 1) * cfg->interval_s);
        /* Fell behind (a slow API): start again from now, never in a
         * burst. */
        if (pf_now_s() > start + (double)(i + 2) * cfg->interval_s)
            start = pf_now_s() - (double)(i + 1) * cfg->interval_s;
    }
    pf_info("monitor: stopped after %d intervals", health.intervals);
    if (httpd)
        pf_httpd_stop(httpd);
    pf_mon_k8s_close(k8s);
    pf_mon_buf_free(&text);
    pf_mon_snap_free(&prev);
    pf_mon_health_free(&health);
    pf_mon_rules_free(&rules);
    if (gpus)
        pf_mon_gpu_free(gpus);
    free(gpus);
    free(node);
    return code;
}
