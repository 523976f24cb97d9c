/* The run's stage order: probe -> [discover -> collective] -> verdict ->
 * publish, under one deadline, with the signal state (interrupt.c) around
 * it and the DaemonSet's idle wait after it. */
#include "launch.h"

#include <stdio.h>

#include "interrupt.h"
#include "../baseline/source.h"
#include "../collective/collective.h"
#include "../discover/discover.h"
#include "../judge/judge.h"
#include "../probe/gpu_health.h"
#include "../probe/probe.h"
#include "../publish/publish.h"
#include "../reasons.h"
#include "../util/fsutil.h"
#include "../util/kubeapi.h"
#include "../util/log.h"
#include "../verdict/verdict.h"

/* Bad input found after the Node was marked: exit 2 and put back what
 * the mark changed (a usage error writes nothing to the cluster). */
static int usage_exit(struct pf_run *run, struct pf_interrupt *it,
                      const char *msg)
{
    char err[PF_ERRLEN];

    pf_say("%s", msg);
    if (run->mark.marked) {
        pf_interrupt_enter_publish(it);
        if (pf_publish_node_undo(run, err) != PF_OK)
            pf_warn("node %s: could not put back the state found before "
                    "the run: %s", run->mark.node, err);
        pf_interrupt_leave_publish(it);
    }
    return pf_class_exit_code(PF_CLASS_USAGE);
}

/* probe -> [discover -> collective] -> verdict -> publish. Returns the
 * exit code. */
static int pipeline(struct pf_run *run, bool collective,
                    struct pf_interrupt *it, bool *node_written)
{
    struct pf_publish_outcome published;
    char err[PF_ERRLEN] = "";
    pf_err rc;

    rc = pf_probe(run, err);
    if (rc != PF_OK)
        /* The probe fails only on bad flags (--sysfs-root). */
        return usage_exit(run, it, err);
    if (collective) {
        bool discovered;

        rc = pf_discover(run, err);
        discovered = rc == PF_OK;
        /* The fleet's baseline, for the leader that judges the links. */
        if (discovered && (rc = pf_base_load(run, err)) != PF_OK)
            return usage_exit(run, it, err);
        if (discovered)
            rc = pf_collective(run, err);
        else
            /* No collective: the floor that would have applied, for the
             * report and the metrics. */
            pf_judge(run);
        /* Bad input stops here; a deployment error the collective named
         * (RendezvousPortInUse) goes on to the verdict, whose usage class
         * writes nothing to the cluster but still reports. */
        if (pf_err_class(rc) == PF_CLASS_USAGE &&
            run->coll.fault.reason == PF_R_None)
            return usage_exit(run, it, err);
        if (!discovered)
            /* Discovery failed in a way it did not name (a reason it did
             * name was recorded first and stays). */
            pf_fault_set(&run->peers.fault, rc,
                         pf_reason_for_err(rc, PF_STAGE_DISCOVER), err);
    }
    /* Node checks run after discovery: in k8s mode the instance type may
     * come from the Node's label. A node that fails them still joins the
     * collective, so its peers see a result rather than a timeout. */
    pf_gpu_health_finish(run);
    pf_verdict_node(run);
    pf_verdict_gpu(run);
    if (collective)
        pf_verdict_fabric(run);
    pf_verdict_finish(run);

    pf_interrupt_enter_publish(it);
    rc = pf_publish(run, &published, err);
    pf_interrupt_leave_publish(it);
    *node_written = published.node_written;
    if (rc != PF_OK) {
        pf_say("publish: %s", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    /* A failed report or Node write is publishing's own check: the exit
     * code the table and the report show is the outcome's. */
    return published.shown.exit_code;
}

int pf_run_stages(struct pf_run *run, bool collective)
{
    struct pf_interrupt it;
    struct pf_sigwatch watch;
    char err[PF_ERRLEN] = "";
    bool node_written = false;
    int code;
    pf_err rc;

    /* Signals first, before any thread exists, then the Node: from here
     * on no stale pass survives whatever happens. */
    pf_interrupt_init(&it, run);
    run->cancel = &it.cancel;
    /* A peer stopped before it joined marks its Node as this agent does
     * (pf_interrupt_on_signal): the rendezvous reads that mark instead of
     * waiting for the peer until the deadline. */
    if (it.k8s)
        run->peer_gone = pf_publish_peer_interrupted;
    pf_kube_global_init();
    if (pf_sigwatch_start(&watch, pf_interrupt_on_signal, &it, err) != PF_OK)
        pf_warn("%s: SIGTERM ends the run without a word", err);
    if (it.k8s) {
        rc = pf_publish_begin(run, err);
        if (rc != PF_OK)
            pf_warn("node: could not mark the Node as being validated: %s",
                    err);
        pf_interrupt_set_node(&it, run->mark.node);
    }
    code = pipeline(run, collective, &it, &node_written);
    pf_gpu_health_close(run);
    pf_sigwatch_stop(&watch);
    pf_publish_mark_free(run);
    run->cancel = NULL;
    run->peer_gone = NULL;
    /* DaemonSet: the status label un-selects the node; wait to be removed
     * rather than exit and be restarted into a second validation. A
     * signal taken while publishing already asked for the end. */
    if (node_written && !it.sig && run->cfg.mode == PF_MODE_DAEMONSET &&
        run->cfg.command == PF_CMD_RUN && !run->peers.stay_pending)
        pf_idle_wait(PF_IDLE_MAX_MS);
    /* Still pending (no group though partners were there): exit, and the
     * kubelet starts the agent again after its back-off. */
    pf_interrupt_destroy(&it);
    return code;
}

pf_err pf_prerun_checks(const struct pf_config *cfg, char *err)
{
    /* A bad --baseline file stops the run before any peer is waited for. */
    if (cfg->baseline_file[0]) {
        struct pf_baseline b = { 0 };
        pf_err rc = pf_base_load_file(cfg->baseline_file, &b, err);
        pf_base_free(&b);
        if (rc != PF_OK)
            return rc;
    }
    static const char *const flags[] = { "--report", "--metrics-textfile",
                                         "--history-dir" };
    const char *paths[] = { cfg->report_file, cfg->metrics_textfile,
                            cfg->history_dir };

    for (int i = 0; i < 3; i++) {
        pf_err rc;
        if (!paths[i][0])
            continue;
        rc = i == 2 ? pf_check_dir_path(paths[i], err)
                    : pf_check_writable_path(paths[i], err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "%s", flags[i]);
            return PF_ERR_USAGE;
        }
    }
    return pf_probe_config_names(cfg, err);
}
