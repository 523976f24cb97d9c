/* The monitor's writes to its Node (monitor.h): the EFANICHealthy
 * condition, an Event per change, the budgeted taint when asked, and the
 * pending label that sends an idle node back to the pre-flight DaemonSet.
 *
 * Only the condition type EFANICHealthy, the status label and the taint
 * <prefix>unhealthy are ever written; the gate's conditions stay as the
 * gate left them. */
#include "monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../config/config.h"
#include "../publish/budget.h"
#include "../publish/node.h"
#include "../util/clock.h"
#include "../util/kubeapi.h"
#include "../util/log.h"
#include "../util/sanitize.h"

#define CONFLICT_RETRIES 5
/* One request's bound: an interval must not wait on the API for long. */
#define REQUEST_MS 10000

struct pf_mon_k8s {
    struct pf_kube *k;
    const struct pf_config *cfg;
    char node[PF_NAME_MAX];
    char pod[PF_NAME_MAX];
    char ns[PF_NAME_MAX];
    char uid[64];
    bool tainted;                     /* we added the taint */
    unsigned long long events;        /* makes Event names unique */
};

pf_err pf_mon_k8s_open(const struct pf_config *cfg, const atomic_int *cancel,
                       struct pf_mon_k8s **out, char *err)
{
    struct pf_kube_given given;
    struct pf_kube_identity id;
    struct pf_kube_opts o;
    struct pf_mon_k8s *k;
    pf_err rc;

    *out = NULL;
    pf_config_kube(cfg, &given);
    pf_kube_identity(&given, &id);
    if (!id.node[0])
        return pf_fail(err, PF_ERR_USAGE, "the monitor needs its node's name "
                       "(--node-name or $NODE_NAME, the downward API's "
                       "spec.nodeName)");
    if (!pf_kube_name_ok(id.node))
        return pf_fail(err, PF_ERR_USAGE, "node name '%s' is not a valid "
                       "Kubernetes name", id.node);
    rc = pf_kube_opts_init(&o, &given, err);
    if (rc != PF_OK)
        return rc;
    o.request_timeout_ms = REQUEST_MS;
    if (o.max_attempts > 3)
        o.max_attempts = 3;
    o.deadline = 0;
    o.cancel = cancel;
    k = calloc(1, sizeof(*k));
    if (!k)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    k->cfg = cfg;
    snprintf(k->node, sizeof(k->node), "%s", id.node);
    snprintf(k->pod, sizeof(k->pod), "%s", id.pod);
    snprintf(k->ns, sizeof(k->ns), "%s", id.ns);
    rc = pf_kube_open(&o, &k->k, err);
    if (rc != PF_OK) {
        free(k);
        return rc;
    }
    *out = k;
    return PF_OK;
}

void pf_mon_k8s_close(struct pf_mon_k8s *k)
{
    if (!k)
        return;
    pf_kube_close(k->k);
    free(k);
}

static pf_err get_node(struct pf_mon_k8s *k, cJSON **node, char *err)
{
    char path[PF_PATH_MAX];
    pf_err rc;

    snprintf(path, sizeof(path), "/api/v1/nodes/%s", k->node);
    rc = pf_kube_get(k->k, path, node, err);
    if (rc == PF_OK) {
        const char *uid = pf_json_str(*node, "metadata.uid");
        snprintf(k->uid, sizeof(k->uid), "%s", uid ? uid : "");
    }
    return rc;
}

static const char *label(const cJSON *node, const char *prefix,
                         const char *name)
{
    const cJSON *labels = pf_json_at(node, "metadata.labels");
    char key[PF_NAME_MAX + 32];
    const cJSON *v;

    snprintf(key, sizeof(key), "%s%s", prefix, name);
    v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "20261122T010203Z" -> epoch seconds, 0 when it is not that. */
static int64_t label_time(const char *s)
{
    struct tm tm;
    char *end;

    if (!s)
        return 0;
    memset(&tm, 0, sizeof(tm));
    end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
    if (!end || *end)
        return 0;
    return (int64_t)timegm(&tm);
}

static void gate_from(const cJSON *node, const char *prefix,
                      struct pf_mon_gate *g)
{
    const char *st = label(node, prefix, "status");
    const char *epoch = label(node, prefix, "valid-until-epoch");

    memset(g, 0, sizeof(*g));
    snprintf(g->status, sizeof(g->status), "%s", st ? st : "");
    g->validated_at = label_time(label(node, prefix, "validated-at"));
    g->valid_until = epoch ? strtoll(epoch, NULL, 10)
                           : label_time(label(node, prefix, "valid-until"));
    if (g->valid_until < 0)
        g->valid_until = 0;
    st = label(node, "", "node.kubernetes.io/instance-type");
    snprintf(g->instance_type, sizeof(g->instance_type), "%s", st ? st : "");
}

pf_err pf_mon_k8s_read(struct pf_mon_k8s *k, struct pf_mon_gate *gate,
                       char *err)
{
    cJSON *node = NULL;
    pf_err rc = get_node(k, &node, err);

    if (rc == PF_OK)
        gate_from(node, k->cfg->label_prefix, gate);
    cJSON_Delete(node);
    return rc;
}

static pf_err send(struct pf_mon_k8s *k, const char *method,
                   const char *path, const char *ctype, cJSON *obj,
                   long *status, char *err)
{
    struct pf_kube_resp r;
    char *body;
    pf_err rc;

    pf_sanitize_json(obj);
    body = cJSON_PrintUnformatted(obj);
    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    rc = pf_kube_do(k->k, method, path, ctype, body, &r, err);
    free(body);
    if (rc != PF_OK)
        return rc;
    *status = r.status;
    if (r.status != 409 && (r.status < 200 || r.status > 299))
        rc = pf_kube_status_err(&r, method, path, err);
    pf_kube_resp_free(&r);
    return rc;
}

/* The status the Node's condition `type` has now, and since when. */
static void current_condition(const cJSON *node, const char *type_want,
                              const char **status, const char **since)
{
    const cJSON *list = pf_json_at(node, "status.conditions"), *c;

    *status = *since = NULL;
    cJSON_ArrayForEach(c, list) {
        const char *type = pf_json_str(c, "type");
        if (type && !strcmp(type, type_want)) {
            *status = pf_json_str(c, "status");
            *since = pf_json_str(c, "lastTransitionTime");
        }
    }
}

static pf_err post_event(struct pf_mon_k8s *k, const struct pf_mon_change *c,
                         const char *now, char *err)
{
    cJSON *ev;
    char name[PF_K8S_NAME_MAX + 1];
    enum pf_reason_class cls = pf_reason_class_of(c->reason);
    long status = 0;
    pf_err rc;

    pf_node_event_name(name, sizeof(name), k->node,
                       (unsigned long long)time(NULL) * 1000000000ull +
                           ++k->events);
    ev = pf_node_event_object(name, k->node, k->uid, pf_reason_name(c->reason),
                              c->msg, cls != PF_CLASS_OK, now,
                              k->pod[0] ? k->pod : "efa-preflight-monitor");
    rc = send(k, "POST", "/api/v1/namespaces/default/events",
              "application/json", ev, &status, err);
    cJSON_Delete(ev);
    if (rc == PF_OK && status == 409)
        rc = pf_fail(err, PF_ERR_API, "Event %s already exists", name);
    return rc;
}

pf_err pf_mon_k8s_publish(struct pf_mon_k8s *k, enum pf_reason reason,
                          const char *msg, const struct pf_mon_change *ch,
                          int nch, char *err)
{
    return pf_mon_k8s_condition(k, PF_COND_NICS, reason, msg, ch, nch, err);
}

pf_err pf_mon_k8s_condition(struct pf_mon_k8s *k, const char *type,
                            enum pf_reason reason, const char *msg,
                            const struct pf_mon_change *ch, int nch,
                            char *err)
{
    const char *status = pf_class_condition_status(pf_reason_class_of(reason));
    char path[PF_PATH_MAX], now[32];
    pf_err rc = PF_OK;

    pf_rfc3339(now, 0);
    snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", k->node);
    for (int attempt = 1; attempt <= CONFLICT_RETRIES; attempt++) {
        cJSON *node = NULL, *patch, *conds, *c;
        const char *was, *since;
        long code = 0;

        rc = get_node(k, &node, err);
        if (rc != PF_OK)
            return rc;
        current_condition(node, type, &was, &since);
        patch = cJSON_CreateObject();
        conds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(patch,
                                                               "status"),
                                       "conditions");
        c = cJSON_CreateObject();
        cJSON_AddItemToArray(conds, c);
        cJSON_AddStringToObject(c, "type", type);
        cJSON_AddStringToObject(c, "status", status);
        cJSON_AddStringToObject(c, "reason", pf_reason_name(reason));
        cJSON_AddStringToObject(c, "message", msg);
        cJSON_AddStringToObject(c, "lastHeartbeatTime", now);
        /* The transition is when the status changed, not this write. */
        cJSON_AddStringToObject(c, "lastTransitionTime",
                                was && since && !strcmp(was, status) ? since
                                                                     : now);
        cJSON_Delete(node);
        rc = send(k, "PATCH", path, "application/strategic-merge-patch+json",
                  patch, &code, err);
        cJSON_Delete(patch);
        if (rc != PF_OK)
            return rc;
        if (code != 409)
            break;
        rc = pf_fail(err, PF_ERR_API, "PATCH %s: conflict %d times", path,
                     attempt);
    }
    if (rc != PF_OK)
        return rc;
    for (int i = 0; i < nch; i++) {
        rc = post_event(k, &ch[i], now, err);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
}

pf_err pf_mon_k8s_taint(struct pf_mon_k8s *k, bool add, char *err)
{
    struct pf_budget b = { .k = k->k, .node = k->node,
                           .prefix = k->cfg->label_prefix,
                           .max_tainted = k->cfg->max_tainted };
    char path[PF_PATH_MAX];
    bool allowed = true;
    pf_err rc;

    if (add == k->tainted)
        return PF_OK;
    rc = pf_budget_target(&b, k->cfg->taint_budget, err);
    if (rc != PF_OK)
        return rc;
    b.deadline = pf_deadline_in(3 * REQUEST_MS);
    if (add) {
        rc = pf_budget_take(&b, &allowed, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "%s",
                          pf_reason_name(PF_R_TaintBudgetUnavailable));
            return rc;
        }
        if (!allowed) {
            pf_warn("node %s: not tainted (%s): %d of %d nodes hold the "
                    "budget, max_tainted %s allows %d",
                    k->node, pf_reason_name(PF_R_TaintCapReached), b.others,
                    b.total, k->cfg->max_tainted, b.cap);
            return PF_OK;
        }
    }
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", k->node);
    for (int attempt = 1; attempt <= CONFLICT_RETRIES; attempt++) {
        cJSON *node = NULL, *patch;
        bool changed = false;
        long code = 0;

        rc = get_node(k, &node, err);
        if (rc != PF_OK)
            return rc;
        patch = pf_node_taints_patch(node, k->cfg->label_prefix, add,
                                     pf_reason_name(PF_R_EFANICErrorRate),
                                     &changed);
        cJSON_Delete(node);
        if (!changed)
            break;
        rc = send(k, "PATCH", path, "application/merge-patch+json", patch,
                  &code, err);
        cJSON_Delete(patch);
        if (rc != PF_OK)
            return rc;
        if (code != 409)
            break;
    }
    k->tainted = add;
    if (!add && pf_budget_release(&b, err) != PF_OK)
        pf_warn("node %s: taint budget slot not released (%s); it goes "
                "stale in %d s", k->node, err, PF_BUDGET_STALE_S);
    return PF_OK;
}

/* A quantity string above zero ("1", "32"; EFA counts are whole). */
static bool positive(const cJSON *q)
{
    if (cJSON_IsNumber(q))
        return q->valuedouble > 0;
    if (cJSON_IsString(q) && q->valuestring)
        return strtod(q->valuestring, NULL) > 0;
    return false;
}

static bool containers_hold(const cJSON *list)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, list) {
        const cJSON *req = pf_json_at(c, "resources.requests");
        const cJSON *lim = pf_json_at(c, "resources.limits");
        if (positive(cJSON_GetObjectItemCaseSensitive(req,
                                                      "vpc.amazonaws.com/efa")) ||
            positive(cJSON_GetObjectItemCaseSensitive(lim,
                                                      "vpc.amazonaws.com/efa")))
            return true;
    }
    return false;
}

bool pf_mon_pod_holds_efa(const cJSON *pod)
{
    const char *phase = pf_json_str(pod, "status.phase");

    /* A pod being deleted still holds its devices until it ends. */
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
        return false;
    return containers_hold(pf_json_at(pod, "spec.containers")) ||
           containers_hold(pf_json_at(pod, "spec.initContainers"));
}

/* Whether any pod on the node other than this one holds EFA devices;
 * *who names the first. Pages through the list. */
static pf_err node_busy(struct pf_mon_k8s *k, bool *busy, char *who,
                        size_t len, char *err)
{
    char sel[PF_NAME_MAX * 3], path[PF_PATH_MAX * 2], cont[1024] = "";
    char field[PF_NAME_MAX + 32];

    *busy = false;
    snprintf(field, sizeof(field), "spec.nodeName=%s", k->node);
    if (pf_kube_query_escape(field, sel, sizeof(sel), err) != PF_OK)
        return PF_ERR_USAGE;
    for (int page = 0; page < 10000; page++) {
        cJSON *list = NULL;
        const cJSON *items, *p;
        const char *next;
        char esc[1024] = "";
        pf_err rc;

        if (cont[0] &&
            pf_kube_query_escape(cont, esc, sizeof(esc), err) != PF_OK)
            return PF_ERR_API;
        snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=%s"
                 "&limit=500%s%s", sel, esc[0] ? "&continue=" : "", esc);
        rc = pf_kube_get(k->k, path, &list, err);
        if (rc != PF_OK)
            return rc;
        items = cJSON_GetObjectItemCaseSensitive(list, "items");
        cJSON_ArrayForEach(p, items) {
            const char *name = pf_json_str(p, "metadata.name");
            const char *ns = pf_json_str(p, "metadata.namespace");
            if (name && ns && !strcmp(name, k->pod) && !strcmp(ns, k->ns))
                continue;             /* the monitor itself */
            if (!*busy && pf_mon_pod_holds_efa(p)) {
                *busy = true;
                snprintf(who, len, "%s/%s", ns ? ns : "?",
                         name ? name : "?");
            }
        }
        next = pf_json_str(list, "metadata.continue");
        snprintf(cont, sizeof(cont), "%s", next ? next : "");
        cJSON_Delete(list);
        if (*busy || !cont[0])
            return PF_OK;
    }
    return pf_fail(err, PF_ERR_API, "pod list of node %s never ended",
                   k->node);
}

pf_err pf_mon_k8s_revalidate(struct pf_mon_k8s *k, bool cleared,
                             bool *marked, char *why, size_t len, char *err)
{
    const char *prefix = k->cfg->label_prefix;
    struct pf_mon_gate g;
    char key[PF_NAME_MAX + 16], path[PF_PATH_MAX], who[2 * PF_NAME_MAX];
    cJSON *node = NULL, *patch, *labels;
    bool expired, busy = false;
    long code = 0;
    pf_err rc;

    *marked = false;
    why[0] = '\0';
    rc = get_node(k, &node, err);
    if (rc != PF_OK)
        return rc;
    gate_from(node, prefix, &g);
    cJSON_Delete(node);
    if (!strcmp(g.status, PF_NODE_PENDING) ||
        !strcmp(g.status, PF_NODE_VALIDATING)) {
        snprintf(why, len, "status is %s already", g.status);
        return PF_OK;
    }
    expired = g.valid_until > 0 && g.valid_until <= (int64_t)time(NULL);
    if (!expired && !cleared) {
        snprintf(why, len, "nothing to prove again");
        return PF_OK;
    }
    rc = node_busy(k, &busy, who, sizeof(who), err);
    if (rc != PF_OK)
        return rc;
    if (busy) {
        snprintf(why, len, "%s, but pod %s holds EFA devices",
                 expired ? "valid-until passed" : "a NIC fault cleared", who);
        return PF_OK;
    }
    snprintf(key, sizeof(key), "%sstatus", prefix);
    patch = cJSON_CreateObject();
    labels = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch,
                                                             "metadata"),
                                     "labels");
    cJSON_AddStringToObject(labels, key, PF_NODE_PENDING);
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", k->node);
    rc = send(k, "PATCH", path, "application/merge-patch+json", patch, &code,
              err);
    cJSON_Delete(patch);
    if (rc != PF_OK)
        return rc;
    *marked = true;
    snprintf(why, len, "%s and no pod holds EFA devices: %s=%s",
             expired ? "valid-until passed" : "a NIC fault cleared", key,
             PF_NODE_PENDING);
    return PF_OK;
}
