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
#include "../k8s/nodes.h"
#include "../k8s/object.h"
#include "../k8s/session.h"
#include "../publish/publish.h"
#include "../util/clock.h"
#include "../util/json.h"

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
    struct pf_k8s_target t;
    struct pf_mon_k8s *k;
    pf_err rc;

    *out = NULL;
    pf_config_target(cfg, &t);
    if (!t.id.node[0])
        return pf_fail(err, PF_ERR_USAGE, "the monitor needs its node's name "
                       "(--node-name or $NODE_NAME, the downward API's "
                       "spec.nodeName)");
    if (!pf_k8s_name_ok(t.id.node))
        return pf_fail(err, PF_ERR_USAGE, "node name '%s' is not a valid "
                       "Kubernetes name", t.id.node);
    if (t.rc != PF_OK)
        return pf_fail(err, t.rc, "%s", t.err);
    t.opts.request_timeout_ms = REQUEST_MS;
    if (t.opts.max_attempts > 3)
        t.opts.max_attempts = 3;
    k = calloc(1, sizeof(*k));
    if (!k)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    k->cfg = cfg;
    snprintf(k->node, sizeof(k->node), "%s", t.id.node);
    snprintf(k->pod, sizeof(k->pod), "%s", t.id.pod);
    snprintf(k->ns, sizeof(k->ns), "%s", t.id.ns);
    rc = pf_k8s_open(&t, 0, cancel, &k->k, err);
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
    pf_k8s_close(k->k);
    free(k);
}

static pf_err get_node(struct pf_mon_k8s *k, cJSON **node, char *err)
{
    pf_err rc = pf_k8s_node_get(k->k, k->node, node, err);

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
    rc = pf_k8s_event_post(k->k, ev, &status, err);
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
    char now[32];
    pf_err rc = PF_OK;

    pf_rfc3339(now, 0);
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
        rc = pf_k8s_node_patch(k->k, k->node, PF_K8S_NODE_STATUS, patch,
                               &code, err);
        cJSON_Delete(patch);
        if (rc != PF_OK)
            return rc;
        if (code != 409)
            break;
        rc = pf_fail(err, PF_ERR_API, "PATCH /api/v1/nodes/%s/status: "
                     "conflict %d times", k->node, attempt);
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
    bool applied = false;
    pf_err rc;

    if (add == k->tainted)
        return PF_OK;
    rc = pf_publish_taint(k->k, k->cfg, k->node, add, PF_R_EFANICErrorRate,
                          pf_deadline_in(3 * REQUEST_MS), &applied, err);
    if (rc == PF_OK && applied)
        k->tainted = add;
    return rc;
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

struct busy {
    const struct pf_mon_k8s *k;
    bool busy;
    char *who;
    size_t len;
};

static bool busy_pod(void *ctx, const cJSON *p)
{
    struct busy *x = ctx;
    const char *name = pf_json_str(p, "metadata.name");
    const char *ns = pf_json_str(p, "metadata.namespace");

    if (name && ns && !strcmp(name, x->k->pod) && !strcmp(ns, x->k->ns))
        return true;                  /* the monitor itself */
    if (pf_mon_pod_holds_efa(p)) {
        x->busy = true;
        snprintf(x->who, x->len, "%s/%s", ns ? ns : "?", name ? name : "?");
        return false;
    }
    return true;
}

/* Whether any pod on the node other than this one holds EFA devices;
 * *who names the first. Pages through the list. */
static pf_err node_busy(struct pf_mon_k8s *k, bool *busy, char *who,
                        size_t len, char *err)
{
    struct busy x = { .k = k, .who = who, .len = len };
    pf_err rc = pf_k8s_node_pods_each(k->k, k->node, busy_pod, &x, err);

    *busy = x.busy;
    return rc;
}

pf_err pf_mon_k8s_revalidate(struct pf_mon_k8s *k, bool cleared,
                             bool *marked, char *why, size_t len, char *err)
{
    const char *prefix = k->cfg->label_prefix;
    struct pf_mon_gate g;
    char key[PF_NAME_MAX + 16], who[2 * PF_NAME_MAX];
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
    rc = pf_k8s_node_patch(k->k, k->node, PF_K8S_NODE_META, patch, &code,
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
