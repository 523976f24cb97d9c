/* The DaemonSet pool's reads (pool.h): own Node, the pending Nodes and
 * agent pods of the pool, a Lease holder's pod. */
#include "pool.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/json.h"
#include "client.h"
#include "nodes.h"
#include "pods.h"

/* EKS: the network nodes above an instance, layer 3 nearest to it. */
#define TOPO_LAYER "topology.k8s.aws/network-node-layer-"

struct vpod {
    char node[PF_NAME_MAX], name[PF_NAME_MAX], ip[64];
    int agent;
};

pf_err pf_k8s_pool_node(struct pf_k8s_pool *p, char *err)
{
    cJSON *node = NULL;
    const char *t, *z;
    pf_err rc = pf_k8s_node_get(p->k, p->node, &node, err);

    if (rc != PF_OK) {
        pf_err_prefix(err, "reading own node");
        return rc;
    }
    t = pf_k8s_node_type(node);
    z = pf_k8s_node_zone(node);
    snprintf(p->type, sizeof(p->type), "%s", t ? t : "");
    snprintf(p->zone, sizeof(p->zone), "%s", z ? z : "");
    cJSON_Delete(node);
    return PF_OK;
}

pf_err pf_k8s_pool_select(struct pf_k8s_pool *p, const char *label_prefix,
                          const char *selector, char *err)
{
    char sel[2048], pend[512], q[PF_PATH_MAX];
    pf_err rc = pf_kube_query_escape(selector, sel, sizeof(sel), err);

    /* Only the coordinator lists: the pending Nodes of its instance type
     * (the zone is checked on each). */
    if (rc == PF_OK) {
        if (p->type[0])
            snprintf(q, sizeof(q), "%sstatus=pending,"
                     "node.kubernetes.io/instance-type=%s", label_prefix,
                     p->type);
        else
            snprintf(q, sizeof(q), "%sstatus=pending", label_prefix);
        rc = pf_kube_query_escape(q, pend, sizeof(pend), err);
    }
    if (rc != PF_OK)
        return rc;
    snprintf(p->nodes_path, sizeof(p->nodes_path),
             "/api/v1/nodes?labelSelector=%s", pend);
    snprintf(p->pods_path, sizeof(p->pods_path),
             "/api/v1/namespaces/%s/pods?labelSelector=%s", p->ns, sel);
    return PF_OK;
}

static const char *label(const cJSON *obj, const char *key)
{
    const cJSON *labels = pf_json_at(obj, "metadata.labels");
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key)
                            : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Has the agent container been running long enough to have registered? */
static int agent_state(const cJSON *pod, time_t now)
{
    const cJSON *st = pf_json_at(pod, "status.containerStatuses");
    const cJSON *first = cJSON_IsArray(st) ? cJSON_GetArrayItem(st, 0) : NULL;
    const char *started = first ? pf_json_str(first, "state.running.startedAt")
                                : NULL;
    struct tm tm = { 0 };

    if (!started || !strptime(started, "%Y-%m-%dT%H:%M:%S", &tm))
        return PF_K8S_AGENT_STARTING;
    return now - timegm(&tm) >= PF_K8S_AGENT_STARTING_S ? PF_K8S_AGENT_UP
                                                        : PF_K8S_AGENT_STARTING;
}

static int by_vpod(const void *a, const void *b)
{
    return strcmp(((const struct vpod *)a)->node,
                  ((const struct vpod *)b)->node);
}

pf_err pf_k8s_pool_view(const struct pf_k8s_pool *p,
                        struct pf_k8s_pool_node **out, int *n, char *err)
{
    cJSON *nodes = NULL, *pods = NULL;
    struct vpod *vp = NULL;
    struct pf_k8s_pool_node *vn = NULL;
    const cJSON *it;
    int npods = 0, nn = 0, cap;
    time_t now = time(NULL);
    pf_err rc;

    rc = pf_kube_get(p->k, p->nodes_path, &nodes, err);
    if (rc == PF_OK)
        rc = pf_kube_get(p->k, p->pods_path, &pods, err);
    if (rc != PF_OK)
        goto out;
    cap = cJSON_GetArraySize(pf_json_at(pods, "items"));
    vp = calloc((size_t)cap + 1, sizeof(*vp));
    cap = cJSON_GetArraySize(pf_json_at(nodes, "items"));
    vn = calloc((size_t)cap + 1, sizeof(*vn));
    if (!vp || !vn) {
        rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(it, pf_json_at(pods, "items")) {
        struct pf_k8s_pod q;
        pf_k8s_pod_parse(it, &q);
        if (!q.node[0] || !pf_k8s_pod_counts(&q))
            continue;
        snprintf(vp[npods].node, sizeof(vp[npods].node), "%s", q.node);
        snprintf(vp[npods].name, sizeof(vp[npods].name), "%s", q.name);
        snprintf(vp[npods].ip, sizeof(vp[npods].ip), "%s", q.ip);
        vp[npods].agent = agent_state(it, now);
        npods++;
    }
    qsort(vp, (size_t)npods, sizeof(*vp), by_vpod);
    cJSON_ArrayForEach(it, pf_json_at(nodes, "items")) {
        const char *name = pf_json_str(it, "metadata.name");
        const char *t = pf_k8s_node_type(it), *z = pf_k8s_node_zone(it);
        struct vpod key, *hit;
        if (!name || strcmp(t ? t : "", p->type) || strcmp(z ? z : "", p->zone))
            continue;
        snprintf(vn[nn].name, sizeof(vn[nn].name), "%s", name);
        for (int l = 0; l < 3; l++) {
            char k[64];
            const char *v;
            snprintf(k, sizeof(k), TOPO_LAYER "%d", l + 1);
            v = label(it, k);
            snprintf(vn[nn].layer[l], sizeof(vn[nn].layer[l]), "%s",
                     v ? v : "");
        }
        snprintf(key.node, sizeof(key.node), "%s", name);
        hit = bsearch(&key, vp, (size_t)npods, sizeof(*vp), by_vpod);
        if (hit) {
            snprintf(vn[nn].pod, sizeof(vn[nn].pod), "%s", hit->name);
            snprintf(vn[nn].ip, sizeof(vn[nn].ip), "%s", hit->ip);
            vn[nn].agent = hit->agent;
        }
        nn++;
    }
    *out = vn;
    *n = nn;
    vn = NULL;
out:
    free(vp);
    free(vn);
    cJSON_Delete(nodes);
    cJSON_Delete(pods);
    return rc;
}


pf_err pf_k8s_pool_others(const struct pf_k8s_pool *p, int *others,
                          char *err)
{
    cJSON *nodes = NULL, *pods = NULL;
    const cJSON *it, *pod;
    pf_err rc = pf_kube_get(p->k, p->nodes_path, &nodes, err);

    *others = 0;
    if (rc == PF_OK)
        rc = pf_kube_get(p->k, p->pods_path, &pods, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "listing the pool's pending Nodes and agents");
        goto out;
    }
    cJSON_ArrayForEach(it, pf_json_at(nodes, "items")) {
        const char *name = pf_json_str(it, "metadata.name");
        const char *t = pf_k8s_node_type(it), *z = pf_k8s_node_zone(it);
        bool agent = false;

        if (!name || !strcmp(name, p->node) || strcmp(t ? t : "", p->type) ||
            strcmp(z ? z : "", p->zone))
            continue;
        cJSON_ArrayForEach(pod, pf_json_at(pods, "items")) {
            struct pf_k8s_pod q;
            pf_k8s_pod_parse(pod, &q);
            if (!strcmp(q.node, name) && !q.deleting &&
                strcmp(q.phase, "Failed") && strcmp(q.phase, "Succeeded"))
                agent = true;
        }
        *others += agent;
    }
out:
    cJSON_Delete(nodes);
    cJSON_Delete(pods);
    return rc;
}


pf_err pf_k8s_holder_address(struct pf_kube *k, const char *ns,
                             const char *holder, char *ip, size_t len,
                             char *err)
{
    char pod[PF_NAME_MAX];
    const char *us = strrchr(holder, '_');
    cJSON *obj = NULL;
    struct pf_k8s_pod q;
    pf_err rc;

    snprintf(pod, sizeof(pod), "%.*s", us ? (int)(us - holder)
                                          : (int)strlen(holder), holder);
    if (!pf_k8s_name_ok(pod))
        return pf_fail(err, PF_ERR_PROTOCOL, "lease holder '%s' names no pod",
                       holder);
    rc = pf_k8s_pod_get(k, ns, pod, &obj, err);
    if (rc == PF_ERR_NOTFOUND)
        return pf_fail(err, rc, "coordinator pod %s is gone", pod);
    if (rc != PF_OK)
        return rc;
    pf_k8s_pod_parse(obj, &q);
    cJSON_Delete(obj);
    if (!pf_k8s_pod_counts(&q))
        return pf_fail(err, PF_ERR_NOTFOUND, "coordinator pod %s has no "
                       "address or is gone", pod);
    snprintf(ip, len, "%s", q.ip);
    return PF_OK;
}
