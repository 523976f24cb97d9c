/* Publish on this pod's Node, in three moments:
 *
 *   begin        before the run: status=validating (a "pending" status
 *                stays), the labels that speak for a verdict removed,
 *                both conditions Unknown/Validating. Labels first, so no
 *                crash leaves a stale pass next to anything.
 *   verdict      conditions (strategic merge on nodes/{name}/status), an
 *                Event, the optional taint (read-modify-write with
 *                resourceVersion) and last the labels (merge patch),
 *                because in DaemonSet mode the status label un-selects the
 *                node and the controller then deletes this pod.
 *   interrupted  a SIGTERM/SIGINT before the verdict: status=error and
 *                both conditions Unknown/Interrupted, within the grace.
 *
 * A run that ends in a usage error puts back what begin found. Every Node
 * write retries on 409 after reading the Node again; the Event takes a 409
 * as itself already written. Only our own labels, conditions and taint are
 * ever written. */
#include "publish.h"
#include "budget.h"
#include "node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/config.h"
#include "../config/run_clock.h"
#include "../util/clock.h"
#include "../util/kubeapi.h"
#include "../util/log.h"
#include "../util/sanitize.h"

#define CONFLICT_RETRIES 5

enum patch_kind { PATCH_LABELS, PATCH_CONDITIONS, PATCH_TAINT,
                  PATCH_STATE_LABELS, PATCH_STATE_CONDITIONS,
                  PATCH_UNDO_LABELS, PATCH_UNDO_CONDITIONS };

struct pub {
    const struct pf_config *cfg;
    const struct pf_run *run;         /* NULL: a state write, no verdict */
    struct pf_kube *k;
    char node[PF_NAME_MAX];
    char reporter[PF_NAME_MAX];
    char now[32];
    time_t now_t;
    bool taint;                       /* add (true) or remove our taint */
    bool mark_allowed;                /* under the blast-radius cap */
    char note[320];                   /* why the mark was withheld, for the
                                         Event */
    /* PATCH_STATE_*: what the Node says while no verdict stands */
    const char *status;
    enum pf_reason reason;
    char message[256];
    /* our conditions before the run marked the Node (NULL: as read) */
    cJSON *before;
};

static pf_err read_node(struct pub *p, cJSON **node, char *err)
{
    char path[PF_PATH_MAX];
    pf_err rc;

    snprintf(path, sizeof(path), "/api/v1/nodes/%s", p->node);
    rc = pf_kube_get(p->k, path, node, err);
    if (rc == PF_ERR_FORBIDDEN)
        pf_err_prefix(err, "reading Node %s needs get on nodes", p->node);
    return rc;
}

/* Build one patch from a fresh read of the Node and send it; on 409 read
 * again and rebuild, a bounded number of times. */
static pf_err patch_node(struct pub *p, enum patch_kind kind, char *err)
{
    static const char *what[] = { "labels", "conditions", "taint",
                                  "labels", "conditions", "labels",
                                  "conditions" };
    /* The RBAC each write needs (k8s/10-rbac.yaml), named on a 403. */
    static const char *need[] = { "patch on nodes", "patch on nodes/status",
                                  "patch on nodes", "patch on nodes",
                                  "patch on nodes/status", "patch on nodes",
                                  "patch on nodes/status" };
    const char *prefix = p->cfg->label_prefix;
    char path[PF_PATH_MAX];
    pf_err rc = PF_OK;

    for (int attempt = 1; attempt <= CONFLICT_RETRIES; attempt++) {
        struct pf_kube_resp r;
        struct pf_node_labels l;
        cJSON *node = NULL, *patch = NULL;
        const char *ctype = "application/merge-patch+json";
        bool changed = true;
        char *body;

        rc = read_node(p, &node, err);
        if (rc != PF_OK)
            return rc;
        snprintf(path, sizeof(path), "/api/v1/nodes/%s", p->node);
        if (kind == PATCH_CONDITIONS || kind == PATCH_STATE_CONDITIONS ||
            kind == PATCH_UNDO_CONDITIONS) {
            snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", p->node);
            ctype = "application/strategic-merge-patch+json";
        }
        switch (kind) {
        case PATCH_LABELS:
            pf_node_labels_make(p->run, p->now_t, &l);
            if (p->taint && p->mark_allowed &&
                pf_hyperpod_action_value(p->run->cfg.on_fail_action))
                snprintf(l.health_status, sizeof(l.health_status), "%s",
                         pf_hyperpod_action_value(p->run->cfg.on_fail_action));
            patch = pf_node_labels_patch(prefix, &l);
            break;
        case PATCH_CONDITIONS:
            /* lastTransitionTime as the Node had it before the run
             * marked it: a verdict that did not change keeps it. */
            patch = pf_node_conditions_patch(p->run,
                                             p->before ? p->before : node,
                                             p->now);
            break;
        case PATCH_TAINT:
            patch = pf_node_taints_patch(node, prefix, p->taint,
                                         pf_node_reason(p->run), &changed);
            break;
        case PATCH_STATE_LABELS:
            patch = pf_node_state_labels_patch(prefix, node, p->status);
            break;
        case PATCH_STATE_CONDITIONS:
            patch = pf_node_state_conditions_patch(node, p->reason,
                                                   p->message, p->now);
            break;
        case PATCH_UNDO_LABELS:
            patch = cJSON_Parse(p->run->mark.undo_labels);
            break;
        case PATCH_UNDO_CONDITIONS:
            patch = cJSON_Parse(p->run->mark.undo_conditions);
            break;
        }
        cJSON_Delete(node);
        if (!changed)
            return PF_OK;
        /* Condition messages quote peers and the API server. */
        pf_sanitize_json(patch);
        body = patch ? cJSON_PrintUnformatted(patch) : NULL;
        cJSON_Delete(patch);
        if (!body)
            return pf_fail(err, PF_ERR_NOMEM, "out of memory");
        rc = pf_kube_do(p->k, "PATCH", path, ctype, body, &r, err);
        free(body);
        if (rc != PF_OK)
            return rc;
        if (r.status == 409) {
            pf_info("node %s: %s update conflicted (attempt %d); reading "
                    "the Node again", p->node, what[kind], attempt);
            rc = pf_kube_status_err(&r, "PATCH", path, err);
            pf_kube_resp_free(&r);
            continue;
        }
        if (r.status < 200 || r.status > 299) {
            rc = pf_kube_status_err(&r, "PATCH", path, err);
            pf_kube_resp_free(&r);
            if (rc == PF_ERR_FORBIDDEN)
                pf_err_prefix(err, "writing %s on Node %s needs %s",
                              what[kind], p->node, need[kind]);
            else
                pf_err_prefix(err, "writing %s on Node %s", what[kind],
                              p->node);
            return rc;
        }
        pf_kube_resp_free(&r);
        pf_debug("node %s: %s written", p->node, what[kind]);
        return PF_OK;
    }
    pf_err_prefix(err, "writing %s on Node %s: still conflicting after %d "
                  "attempts", what[kind], p->node, CONFLICT_RETRIES);
    return rc;
}

static pf_err post_event(struct pub *p, char *err)
{
    static const char *path = "/api/v1/namespaces/default/events";
    char name[PF_NAME_MAX + 32], *body;
    struct pf_kube_resp r;
    struct timespec ts;
    cJSON *node = NULL, *ev;
    pf_err rc = read_node(p, &node, err);

    if (rc != PF_OK)
        return rc;
    clock_gettime(CLOCK_REALTIME, &ts);
    pf_node_event_name(name, sizeof(name), p->node,
                       (unsigned long long)ts.tv_sec * 1000000000ull +
                           (unsigned long long)ts.tv_nsec);
    ev = pf_node_event(p->run, p->node, pf_json_str(node, "metadata.uid"),
                       p->reporter, p->now, name, p->note);
    cJSON_Delete(node);
    pf_sanitize_json(ev);
    body = cJSON_PrintUnformatted(ev);
    cJSON_Delete(ev);
    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    rc = pf_kube_do(p->k, "POST", path, "application/json", body, &r, err);
    free(body);
    if (rc != PF_OK)
        return rc;
    /* The name carries the time in ns, so a 409 AlreadyExists is this very
     * Event: an earlier try of the POST landed and its answer was lost.
     * Posting again under a new name would write it twice. */
    if (r.status == 409) {
        pf_debug("node %s: event %s already written", p->node, name);
    } else if (r.status < 200 || r.status > 299) {
        rc = pf_kube_status_err(&r, "POST", path, err);
        if (rc == PF_ERR_FORBIDDEN)
            pf_err_prefix(err, "needs create on events");
    }
    pf_kube_resp_free(&r);
    return rc;
}

/* The taint budget as this run sees it (budget.h). */
static struct pf_budget budget_of(const struct pub *p)
{
    const struct pf_config *cfg = &p->run->cfg;
    struct pf_budget b = { .k = p->k, .node = p->node,
                           .prefix = cfg->label_prefix,
                           .max_tainted = cfg->max_tainted,
                           .deadline = pf_run_deadline(p->run) +
                                       PF_PUBLISH_GRACE_MS };
    return b;
}

/* Blast radius: take a slot of the cluster-wide budget (budget.h) before
 * marking; a node that cannot take one is labelled only, and its Event
 * and report say why. Unable to read or write the budget: not marked. */
static void may_mark(struct pub *p, struct pf_mark_outcome *out)
{
    const struct pf_config *cfg = &p->run->cfg;
    struct pf_budget b = budget_of(p);
    char err[PF_ERRLEN];
    pf_err rc = pf_budget_target(&b, cfg->taint_budget, err);

    if (rc == PF_OK)
        rc = pf_budget_take(&b, &p->mark_allowed, err);
    if (rc != PF_OK) {
        p->mark_allowed = false;
        out->withheld = PF_R_TaintBudgetUnavailable;
        snprintf(p->note, sizeof(p->note), "not tainted: the taint budget "
                 "%s could not be taken (%s)", cfg->taint_budget, err);
        pf_warn("node %s: not marked: taint budget %s: %s", p->node,
                cfg->taint_budget, err);
    } else if (!p->mark_allowed) {
        out->withheld = PF_R_TaintCapReached;
        snprintf(p->note, sizeof(p->note), "not tainted: %d of %d nodes "
                 "already carry %sunhealthy or a HyperPod recovery label, and "
                 "max_tainted %s allows %d (budget %s)", b.others, b.total,
                 cfg->label_prefix, cfg->max_tainted, b.cap,
                 cfg->taint_budget);
        pf_warn("node %s: not marked: %d of %d nodes hold the taint budget, "
                "cap %d", p->node, b.others, b.total, b.cap);
    } else {
        pf_info("node %s: %d other node(s) marked of %d, cap %d: may mark",
                p->node, b.others, b.total, b.cap);
    }
    snprintf(out->note, sizeof(out->note), "%s", p->note);
}

/* Our taint came off: give the slot back (best effort: a slot whose node
 * carries no mark goes stale and is dropped by the next taker). */
static void release_mark(struct pub *p)
{
    const struct pf_config *cfg = &p->run->cfg;
    struct pf_budget b = budget_of(p);
    char err[PF_ERRLEN];

    if (pf_budget_target(&b, cfg->taint_budget, err) != PF_OK ||
        pf_budget_release(&b, err) != PF_OK)
        pf_warn("node %s: taint budget %s: slot not released (%s); it goes "
                "stale in %d s", p->node, cfg->taint_budget, err,
                PF_BUDGET_STALE_S);
}

/* Node name: the one begin resolved, config, NODE_NAME, the peer table,
 * else the own pod. */
static pf_err resolve_node(struct pub *p, const struct pf_kube_identity *id,
                           const char *known, char *err)
{
    const struct pf_peers *pe = p->run ? &p->run->peers : NULL;
    char path[PF_PATH_MAX];
    cJSON *pod = NULL;
    const char *n;
    pf_err rc;

    if (known && known[0]) {
        snprintf(p->node, sizeof(p->node), "%s", known);
    } else if (id->node[0]) {
        snprintf(p->node, sizeof(p->node), "%s", id->node);
    } else if (pe && pe->list && pe->rank >= 0 && pe->rank < pe->world &&
               pe->list[pe->rank].node[0]) {
        snprintf(p->node, sizeof(p->node), "%s", pe->list[pe->rank].node);
    } else {
        if (!pf_kube_name_ok(id->pod) || !pf_kube_name_ok(id->ns))
            return pf_fail(err, PF_ERR_USAGE, "cannot tell which Node to "
                           "write: set NODE_NAME or --node-name");
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", id->ns,
                 id->pod);
        rc = pf_kube_get(p->k, path, &pod, err);
        if (rc != PF_OK)
            return rc;
        n = pf_json_str(pod, "spec.nodeName");
        snprintf(p->node, sizeof(p->node), "%s", n ? n : "");
        cJSON_Delete(pod);
    }
    if (!pf_kube_name_ok(p->node))
        return pf_fail(err, PF_ERR_USAGE, "node name '%s' is not a valid "
                       "Kubernetes name", p->node);
    return PF_OK;
}

/* A client for one publishing moment, bounded by deadline and, when
 * cancel is set, stopped by it. */
void pf_publish_target(const struct pf_config *cfg, struct pf_node_target *t)
{
    struct pf_kube_given given;

    memset(t, 0, sizeof(*t));
    pf_config_kube(cfg, &given);
    pf_kube_identity(&given, &t->id);
    t->rc = pf_kube_opts_init(&t->opts, &given, t->err);
}

/* A client for one publishing moment, bounded by deadline and, when
 * cancel is set, stopped by it. t: identity and options read before
 * (NULL: read them now). */
static pf_err open_pub(struct pub *p, const struct pf_config *cfg,
                       const struct pf_run *run,
                       const struct pf_node_target *t, int64_t deadline,
                       const atomic_int *cancel, const char *known_node,
                       char *err)
{
    struct pf_node_target now;
    struct pf_kube_opts o;
    pf_err rc;

    memset(p, 0, sizeof(*p));
    p->cfg = cfg;
    p->run = run;
    p->now_t = time(NULL);
    pf_rfc3339(p->now, 0);
    if (!t) {
        pf_publish_target(cfg, &now);
        t = &now;
    }
    snprintf(p->reporter, sizeof(p->reporter), "%s",
             t->id.pod[0] ? t->id.pod : "efa-preflight");
    rc = t->rc;
    if (rc != PF_OK)
        return pf_fail(err, rc, "%s", t->err);
    o = t->opts;
    o.deadline = deadline;
    o.cancel = cancel;
    rc = pf_kube_open(&o, &p->k, err);
    if (rc == PF_OK)
        rc = resolve_node(p, &t->id, known_node, err);
    return rc;
}

static void close_pub(struct pub *p)
{
    pf_kube_close(p->k);
    cJSON_Delete(p->before);
    p->k = NULL;
    p->before = NULL;
}

static char *print_patch(cJSON *patch)
{
    char *s = patch ? cJSON_PrintUnformatted(patch) : NULL;
    cJSON_Delete(patch);
    return s;
}

/* Before anything is written: the own pod, when named, must be one the
 * API server knows. A pod (or token) it does not know is a usage error
 * that discovery reports, and a usage error writes nothing. */
static pf_err check_own_pod(struct pub *p, char *err)
{
    struct pf_kube_given given;
    struct pf_kube_identity id;
    char path[PF_PATH_MAX];
    cJSON *pod = NULL;
    pf_err rc;

    pf_config_kube(p->cfg, &given);
    pf_kube_identity(&given, &id);
    if (!pf_kube_name_ok(id.pod) || !pf_kube_name_ok(id.ns))
        return PF_OK;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", id.ns,
             id.pod);
    rc = pf_kube_get(p->k, path, &pod, err);
    cJSON_Delete(pod);
    return rc;
}

pf_err pf_publish_node_begin(struct pf_run *run, char *err)
{
    struct pub p;
    cJSON *node = NULL;
    pf_err rc;

    /* Part of the run: bounded by its deadline, stopped by a signal. */
    rc = open_pub(&p, &run->cfg, run, NULL, pf_run_deadline(run),
                  run->cancel, "", err);
    if (rc == PF_OK)
        rc = check_own_pod(&p, err);
    if (rc == PF_OK) {
        snprintf(run->mark.node, sizeof(run->mark.node), "%s", p.node);
        rc = read_node(&p, &node, err);
    }
    if (rc == PF_OK) {
        free(run->mark.undo_labels);
        free(run->mark.undo_conditions);
        run->mark.undo_labels = print_patch(
            pf_node_undo_labels_patch(run->cfg.label_prefix, node));
        run->mark.undo_conditions = print_patch(
            pf_node_undo_conditions_patch(node));
        /* The probe's source of the instance type where DMI is hidden. */
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            pf_json_at(node, "metadata.labels"), "node.kubernetes.io/instance-type"));
        snprintf(run->mark.instance_type_label,
                 sizeof(run->mark.instance_type_label), "%s", type ? type : "");
        cJSON_Delete(node);
        if (!run->mark.undo_labels || !run->mark.undo_conditions)
            rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
    }
    if (rc == PF_OK) {
        p.status = PF_NODE_VALIDATING;
        rc = patch_node(&p, PATCH_STATE_LABELS, err);
    }
    if (rc == PF_OK) {
        run->mark.marked = true;
        p.reason = PF_R_Validating;
        snprintf(p.message, sizeof(p.message), "validation under way since "
                 "%s (%s, --timeout %d s)", p.now, p.reporter,
                 run->cfg.timeout_s);
        rc = patch_node(&p, PATCH_STATE_CONDITIONS, err);
    }
    if (rc == PF_OK)
        pf_info("node %s: marked %s until the verdict", p.node,
                PF_NODE_VALIDATING);
    close_pub(&p);
    return rc;
}

pf_err pf_publish_node_undo(const struct pf_run *run, char *err)
{
    struct pub p;
    pf_err rc;

    if (!run->mark.marked || !run->mark.undo_labels ||
        !run->mark.undo_conditions)
        return PF_OK;
    rc = open_pub(&p, &run->cfg, run, NULL,
                  pf_run_deadline(run) + PF_PUBLISH_GRACE_MS, run->cancel,
                  run->mark.node, err);
    if (rc == PF_OK)
        rc = patch_node(&p, PATCH_UNDO_CONDITIONS, err);
    if (rc == PF_OK)
        rc = patch_node(&p, PATCH_UNDO_LABELS, err);
    if (rc == PF_OK)
        pf_info("node %s: put back as it was before the run", p.node);
    close_pub(&p);
    return rc;
}

pf_err pf_publish_node_interrupted(const struct pf_config *cfg,
                                   const struct pf_node_target *t,
                                   const char *node, int sig,
                                   int64_t deadline, char *err)
{
    struct pub p;
    pf_err rc;

    rc = open_pub(&p, cfg, NULL, t, deadline, NULL, node, err);
    /* The label first: it is what selects nodes for jobs, and whatever
     * it said must stop saying pass. */
    if (rc == PF_OK) {
        p.status = pf_class_status_label(pf_reason_class_of(PF_R_Interrupted));
        rc = patch_node(&p, PATCH_STATE_LABELS, err);
    }
    if (rc == PF_OK) {
        p.reason = PF_R_Interrupted;
        /* Names the pod: its peers, waiting for it, read this mark
         * (pf_publish_peer_interrupted) and stop waiting. */
        pf_node_interrupted_message(p.message, sizeof(p.message), sig,
                                    strsignal(sig), p.now, p.reporter);
        rc = patch_node(&p, PATCH_STATE_CONDITIONS, err);
    }
    if (rc == PF_OK)
        pf_warn("node %s: no verdict; marked %s (%s)", p.node, p.status,
                pf_reason_name(PF_R_Interrupted));
    close_pub(&p);
    return rc;
}

/* A peer's Node is read within this (and the run's deadline): the
 * rendezvous asks while it waits, and must not wait on the API instead. */
#define PEER_ASK_MS 1500
/* Two nodes' clocks may differ this much: a mark written this long before
 * this run began still counts as written during it. */
#define PEER_MARK_SKEW_S 2

bool pf_publish_peer_interrupted(void *ctx, int rank, char *why, size_t len)
{
    const struct pf_run *run = ctx;
    const struct pf_peers *pe = &run->peers;
    const struct pf_peer *x;
    struct pf_node_target t;
    struct pub p;
    cJSON *node = NULL;
    char err[PF_ERRLEN] = "", msg[PF_ERRLEN];
    int64_t since = pf_rfc3339_seconds(run->started_at);
    int64_t deadline = pf_deadline_in(PEER_ASK_MS);
    bool gone = false;

    if (!pe->list || rank < 0 || rank >= pe->world || rank == pe->rank ||
        pe->bootstrap != PF_BOOT_K8S || since < 0)
        return false;
    x = &pe->list[rank];
    if (!x->pod[0] || !pf_kube_name_ok(x->node))
        return false;
    if (deadline > pf_run_deadline(run))
        deadline = pf_run_deadline(run);
    pf_publish_target(&run->cfg, &t);
    if (open_pub(&p, &run->cfg, run, &t, deadline, run->cancel, x->node,
                 err) == PF_OK &&
        read_node(&p, &node, err) == PF_OK)
        gone = pf_node_interrupted_mark(node, x->pod,
                                        since - PEER_MARK_SKEW_S, msg,
                                        sizeof(msg));
    else
        pf_debug("rank %d: Node %s not read: %s", rank, x->node, err);
    if (gone)
        snprintf(why, len, "Node %s: %s", x->node, msg);
    cJSON_Delete(node);
    close_pub(&p);
    return gone;
}

void pf_publish_mark_free(struct pf_run *run)
{
    free(run->mark.undo_labels);
    free(run->mark.undo_conditions);
    run->mark.undo_labels = run->mark.undo_conditions = NULL;
}

pf_err pf_publish_node(const struct pf_run *run, struct pf_mark_outcome *mark,
                       char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pub p;
    char ev_err[PF_ERRLEN];
    pf_err rc;

    /* The run deadline bounds publishing too, with a short grace so a
     * verdict reached at the deadline can still be written. */
    rc = open_pub(&p, cfg, run, NULL,
                  pf_run_deadline(run) + PF_PUBLISH_GRACE_MS, run->cancel,
                  run->mark.node, err);
    if (rc == PF_OK && run->mark.marked && run->mark.undo_conditions)
        p.before = cJSON_Parse(run->mark.undo_conditions);
    if (rc == PF_OK)
        rc = patch_node(&p, PATCH_CONDITIONS, err);
    /* The class decides: mark (taint, HyperPod recovery) only a failure
     * proven on this node, never one we could not test nor a peer's, and
     * only under the cap; clear our taint when the node passed. */
    memset(mark, 0, sizeof(*mark));
    p.taint = pf_class_may_taint(run->verdict.cls);
    if (rc == PF_OK && p.taint &&
        (cfg->taint_on_failure || pf_hyperpod_action_value(cfg->on_fail_action)))
        may_mark(&p, mark);
    if (rc == PF_OK) {
        enum pf_reason_class cls = run->verdict.cls;
        bool clear = cls == PF_CLASS_OK || cls == PF_CLASS_WARN;
        /* An Event is worth a warning, not the verdict. */
        if (post_event(&p, ev_err) != PF_OK)
            pf_warn("node %s: event not written: %s", p.node, ev_err);
        if ((p.taint && cfg->taint_on_failure && p.mark_allowed) || clear)
            rc = patch_node(&p, PATCH_TAINT, err);
        /* The taint is off: so is our claim on the budget. */
        if (rc == PF_OK && clear && (cfg->taint_on_failure ||
                                     pf_hyperpod_action_value(cfg->on_fail_action)))
            release_mark(&p);
    }
    if (rc == PF_OK)
        rc = patch_node(&p, PATCH_LABELS, err);
    if (rc == PF_OK)
        pf_info("node %s: verdict %s published", p.node,
                pf_class_status_word(run->verdict.cls));
    else if (run->mark.marked && p.k) {
        /* Part of the verdict may be on the Node: make the status say
         * that none stands (the write failing is itself an error). */
        char again[PF_ERRLEN];
        p.status = pf_class_status_label(PF_CLASS_INFRA);
        if (patch_node(&p, PATCH_STATE_LABELS, again) == PF_OK)
            pf_warn("node %s: verdict not written; status=%s", p.node,
                    p.status);
    }
    close_pub(&p);
    return rc;
}
