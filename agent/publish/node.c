/* Publish the verdict on this pod's Node: conditions (strategic merge on
 * nodes/{name}/status), an Event, the optional taint (read-modify-write
 * with resourceVersion) and last the labels (merge patch), because in
 * DaemonSet mode the status label un-selects the node and the controller
 * then deletes this pod. Every Node write retries on 409 after reading the
 * Node again; the Event takes a 409 as itself already written. Only our own
 * labels, conditions and taint are ever written. */
#include "publish.h"
#include "node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/config.h"
#include "../util/clock.h"
#include "../util/kubeapi.h"
#include "../util/log.h"

#define CONFLICT_RETRIES 5

enum patch_kind { PATCH_LABELS, PATCH_CONDITIONS, PATCH_TAINT };

struct pub {
    const struct pf_run *run;
    struct pf_kube *k;
    char node[PF_NAME_MAX];
    char reporter[PF_NAME_MAX];
    char now[32];
    time_t now_t;
    bool taint;                       /* add (true) or remove our taint */
    bool mark_allowed;                /* under the blast-radius cap */
    char note[320];                   /* why the mark was withheld, for the
                                         Event */
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
    static const char *what[] = { "labels", "conditions", "taint" };
    /* The RBAC each write needs (k8s/10-rbac.yaml), named on a 403. */
    static const char *need[] = { "patch on nodes", "patch on nodes/status",
                                  "patch on nodes" };
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
        switch (kind) {
        case PATCH_LABELS:
            pf_node_labels_make(p->run, p->now_t, &l);
            if (p->taint && p->mark_allowed &&
                pf_hyperpod_action_value(p->run->cfg.on_fail_action))
                snprintf(l.health_status, sizeof(l.health_status), "%s",
                         pf_hyperpod_action_value(p->run->cfg.on_fail_action));
            patch = pf_node_labels_patch(p->run->cfg.label_prefix, &l);
            break;
        case PATCH_CONDITIONS:
            snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", p->node);
            ctype = "application/strategic-merge-patch+json";
            patch = pf_node_conditions_patch(p->run, node, p->now);
            break;
        case PATCH_TAINT:
            patch = pf_node_taints_patch(node, p->run->cfg.label_prefix,
                                         p->taint, pf_node_reason(p->run),
                                         &changed);
            break;
        }
        cJSON_Delete(node);
        if (!changed)
            return PF_OK;
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

/* Blast radius: count every Node (paged) and those carrying our mark, and
 * allow marking this one only while that stays within cfg.max_tainted. Two
 * nodes failing at the same instant can both pass the check: the cap can
 * be exceeded by the nodes deciding at once, never more. */
static pf_err may_mark(struct pub *p, char *err)
{
    const char *prefix = p->run->cfg.label_prefix;
    char path[PF_PATH_MAX * 2], token[PF_PATH_MAX] = "";
    int total = 0, marked = 0, cap;
    bool self_marked = false;

    for (int page = 0; page < 100000; page++) {
        cJSON *list = NULL;
        const cJSON *n;
        const char *next;
        pf_err rc;

        if (token[0])
            snprintf(path, sizeof(path), "/api/v1/nodes?limit=500&continue=%s",
                     token);
        else
            snprintf(path, sizeof(path), "/api/v1/nodes?limit=500");
        rc = pf_kube_get(p->k, path, &list, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "counting tainted Nodes (needs list on nodes)");
            return rc;
        }
        cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(list, "items")) {
            const char *name = pf_json_str(n, "metadata.name");
            bool mine = name && !strcmp(name, p->node);
            total++;
            if (pf_node_marked(n, prefix)) {
                if (mine)
                    self_marked = true;
                else
                    marked++;
            }
        }
        next = pf_json_str(list, "metadata.continue");
        snprintf(token, sizeof(token), "%s", next ? next : "");
        cJSON_Delete(list);
        if (!token[0])
            break;
    }
    cap = pf_blast_cap(p->run->cfg.max_tainted, total);
    p->mark_allowed = self_marked || marked + 1 <= cap;
    if (!p->mark_allowed)
        snprintf(p->note, sizeof(p->note), "not tainted: %d of %d nodes "
                 "already carry %sunhealthy or a HyperPod recovery label, and "
                 "max_tainted %s allows %d", marked, total, prefix,
                 p->run->cfg.max_tainted, cap);
    pf_info("node %s: %d of %d nodes marked, cap %d: %s", p->node, marked,
            total, cap, p->mark_allowed ? "may mark" : "at the cap");
    return PF_OK;
}

/* Node name: config, NODE_NAME, the peer table, else the own pod. */
static pf_err resolve_node(struct pub *p, const struct pf_kube_identity *id,
                           char *err)
{
    const struct pf_peers *pe = &p->run->peers;
    char path[PF_PATH_MAX];
    cJSON *pod = NULL;
    const char *n;
    pf_err rc;

    if (id->node[0]) {
        snprintf(p->node, sizeof(p->node), "%s", id->node);
    } else if (pe->list && pe->rank >= 0 && pe->rank < pe->world &&
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

pf_err pf_publish_node(const struct pf_run *run, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_kube_identity id;
    struct pf_kube_opts o;
    struct pub p;
    char ev_err[PF_ERRLEN];
    pf_err rc;

    memset(&p, 0, sizeof(p));
    p.run = run;
    p.now_t = time(NULL);
    pf_rfc3339(p.now, 0);
    pf_kube_identity(cfg, &id);
    snprintf(p.reporter, sizeof(p.reporter), "%s",
             id.pod[0] ? id.pod : "efa-preflight");

    rc = pf_kube_opts_init(&o, cfg, err);
    /* The run deadline bounds publishing too, with a short grace so a
     * verdict reached at the deadline can still be written. */
    o.deadline = pf_run_deadline(run) + PF_PUBLISH_GRACE_MS;
    if (rc == PF_OK)
        rc = pf_kube_open(&o, &p.k, err);
    if (rc == PF_OK)
        rc = resolve_node(&p, &id, err);
    if (rc == PF_OK)
        rc = patch_node(&p, PATCH_CONDITIONS, err);
    /* The class decides: mark (taint, HyperPod recovery) only a failure
     * proven on this node, never one we could not test nor a peer's, and
     * only under the cap; clear our taint when the node passed. */
    p.taint = pf_class_may_taint(run->verdict.cls);
    if (rc == PF_OK && p.taint &&
        (cfg->taint_on_failure || pf_hyperpod_action_value(cfg->on_fail_action))) {
        char cap_err[PF_ERRLEN];
        if (may_mark(&p, cap_err) != PF_OK) {
            /* Unable to count: a healthy majority must never be marked by
             * a check we cannot bound. */
            pf_warn("node %s: not marked: %s", p.node, cap_err);
            snprintf(p.note, sizeof(p.note), "not tainted: could not count "
                     "the marked nodes (%s)", cap_err);
            p.mark_allowed = false;
        }
    }
    if (rc == PF_OK) {
        enum pf_reason_class cls = run->verdict.cls;
        /* An Event is worth a warning, not the verdict. */
        if (post_event(&p, ev_err) != PF_OK)
            pf_warn("node %s: event not written: %s", p.node, ev_err);
        if ((p.taint && cfg->taint_on_failure && p.mark_allowed) ||
            cls == PF_CLASS_OK || cls == PF_CLASS_WARN)
            rc = patch_node(&p, PATCH_TAINT, err);
    }
    if (rc == PF_OK)
        rc = patch_node(&p, PATCH_LABELS, err);
    if (rc == PF_OK)
        pf_info("node %s: verdict %s published", p.node,
                pf_status_name(run->verdict.overall));
    pf_kube_close(p.k);
    return rc;
}
