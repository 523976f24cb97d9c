/* DaemonSet pre-flight mode: the agent pods on nodes labelled
 * <prefix>status=pending, of the same instance type and zone, validate
 * together in groups of cfg.group_size. Every member computes the same
 * groups from the same sorted list of node names; the membership settles
 * first (unchanged for SETTLE_MS, with every pending node's agent present,
 * or SETTLE_MAX_MS at most). A lone leftover joins the last group (group
 * size 2 with 3 nodes: one group of 3), so every node gets a real fabric
 * test when it has any partner; a node with no partner at all runs as a
 * group of one and is labelled fabric=untested by the publisher. */
#include "k8s.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../util/clock.h"
#include "../util/log.h"

#define SETTLE_MS 3000
#define SETTLE_MAX_MS 20000
#define POLL_MS 1000

struct member {
    char node[PF_NAME_MAX];
    char pod[PF_NAME_MAX];
    char ip[64];
};

struct view {
    int n;
    struct member *m;                 /* sorted by node name */
    int waiting;                      /* pending nodes with no agent yet */
};

static const char *label(const cJSON *obj, const char *key)
{
    const cJSON *labels = pf_json_at(obj, "metadata.labels");
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key)
                            : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *instance_type(const cJSON *node)
{
    const char *t = label(node, "node.kubernetes.io/instance-type");
    return t ? t : label(node, "beta.kubernetes.io/instance-type");
}

static const char *zone(const cJSON *node)
{
    const char *z = label(node, "topology.kubernetes.io/zone");
    return z ? z : label(node, "failure-domain.beta.kubernetes.io/zone");
}

static bool same(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static int by_node(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->node,
                  ((const struct member *)b)->node);
}

/* The agent pod on node, from a pod list, or NULL. */
static const cJSON *agent_on(const cJSON *pods, const char *node)
{
    const cJSON *p;

    cJSON_ArrayForEach(p, pf_json_at(pods, "items")) {
        struct pf_k8s_pod q;
        pf_k8s_pod_parse(p, &q);
        if (!strcmp(q.node, node) && pf_k8s_pod_counts(&q))
            return p;
    }
    return NULL;
}

static pf_err add_member(struct view *v, const char *node, const cJSON *pod,
                         char *err)
{
    struct member *m = realloc(v->m, (size_t)(v->n + 1) * sizeof(*m));
    struct pf_k8s_pod q;

    if (!m)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    v->m = m;
    pf_k8s_pod_parse(pod, &q);
    memset(&m[v->n], 0, sizeof(m[v->n]));
    snprintf(m[v->n].node, sizeof(m[v->n].node), "%s", node);
    snprintf(m[v->n].pod, sizeof(m[v->n].pod), "%s", q.name);
    snprintf(m[v->n].ip, sizeof(m[v->n].ip), "%s", q.ip);
    v->n++;
    return PF_OK;
}

/* One look at the cluster: pending nodes of our type and zone that run a
 * live agent pod (our own node always counts). */
static pf_err take_view(struct pf_kube *k, const char *nodes_path,
                        const char *pods_path, const char *own_node,
                        const char *type, const char *zn, struct view *v,
                        char *err)
{
    cJSON *nodes = NULL, *pods = NULL;
    const cJSON *n;
    bool own_seen = false;
    pf_err rc;

    free(v->m);
    memset(v, 0, sizeof(*v));
    rc = pf_kube_get(k, nodes_path, &nodes, err);
    if (rc == PF_OK)
        rc = pf_kube_get(k, pods_path, &pods, err);
    if (rc != PF_OK)
        goto out;
    cJSON_ArrayForEach(n, pf_json_at(nodes, "items")) {
        const char *name = pf_json_str(n, "metadata.name");
        const cJSON *pod;
        if (!name || !same(instance_type(n), type) || !same(zone(n), zn))
            continue;
        pod = agent_on(pods, name);
        if (!pod) {
            v->waiting++;
            continue;
        }
        own_seen |= !strcmp(name, own_node);
        rc = add_member(v, name, pod, err);
        if (rc != PF_OK)
            goto out;
    }
    if (!own_seen) {
        const cJSON *pod = agent_on(pods, own_node);
        if (!pod) {
            rc = pf_fail(err, PF_ERR_USAGE, "no live agent pod on own node "
                         "%s matches the peer selector", own_node);
            goto out;
        }
        rc = add_member(v, own_node, pod, err);
        if (rc != PF_OK)
            goto out;
    }
    qsort(v->m, (size_t)v->n, sizeof(*v->m), by_node);
out:
    cJSON_Delete(nodes);
    cJSON_Delete(pods);
    return rc;
}

static bool same_view(const struct view *a, const struct view *b)
{
    if (a->n != b->n)
        return false;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->m[i].node, b->m[i].node) || strcmp(a->m[i].ip, b->m[i].ip))
            return false;
    return true;
}

pf_err pf_discover_daemonset(struct pf_run *run, struct pf_kube *k,
                             const struct pf_kube_identity *id,
                             const cJSON *own_pod, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    char node_name[PF_NAME_MAX], selector[1024], sel[2048], pend[512];
    char nodes_path[PF_PATH_MAX * 2], pods_path[PF_PATH_MAX * 3];
    char path[PF_PATH_MAX], type[128], zn[128];
    struct view cur = { 0 }, prev = { 0 };
    int64_t start = pf_now_ms(), stable_since = start;
    int64_t deadline = pf_run_deadline(run);
    cJSON *node = NULL;
    int me = -1, first, count;
    uint64_t h;
    pf_err rc;

    snprintf(node_name, sizeof(node_name), "%s", id->node[0] ? id->node
             : pf_json_str(own_pod, "spec.nodeName")
                 ? pf_json_str(own_pod, "spec.nodeName") : "");
    if (!pf_kube_name_ok(node_name))
        return pf_fail(err, PF_ERR_USAGE, "daemonset mode needs the node "
                       "name: set NODE_NAME (downward API spec.nodeName) or "
                       "--node-name");
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node_name);
    rc = pf_kube_get(k, path, &node, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "reading own node");
        return rc;
    }
    snprintf(type, sizeof(type), "%s", instance_type(node) ? instance_type(node) : "");
    snprintf(zn, sizeof(zn), "%s", zone(node) ? zone(node) : "");
    cJSON_Delete(node);

    rc = pf_k8s_selector(own_pod, cfg->peer_selector, selector,
                         sizeof(selector), err);
    if (rc == PF_OK)
        rc = pf_kube_query_escape(selector, sel, sizeof(sel), err);
    if (rc != PF_OK)
        return rc;
    snprintf(path, sizeof(path), "%sstatus=pending", cfg->label_prefix);
    rc = pf_kube_query_escape(path, pend, sizeof(pend), err);
    if (rc != PF_OK)
        return rc;
    snprintf(nodes_path, sizeof(nodes_path), "/api/v1/nodes?labelSelector=%s",
             pend);
    snprintf(pods_path, sizeof(pods_path),
             "/api/v1/namespaces/%s/pods?labelSelector=%s", id->ns, sel);
    pf_info("daemonset: node %s (%s, %s), agents '%s', group size %d",
            node_name, type[0] ? type : "?", zn[0] ? zn : "?", selector,
            cfg->group_size);

    /* Settle: the same members for SETTLE_MS with no pending node still
     * waiting for its agent, or SETTLE_MAX_MS at most. */
    pf_progress_begin(&run->progress, "settling the group", start);
    for (int polls = 0; polls < 100000; polls++) {
        int64_t now;
        rc = take_view(k, nodes_path, pods_path, node_name, type, zn, &cur,
                       err);
        if (rc != PF_OK)
            goto out;
        now = pf_now_ms();
        if (pf_progress_due(&run->progress, now))
            pf_progress_say(&run->progress, now, "%d pending node(s) of this "
                            "type and zone, %d without an agent yet",
                            cur.n, cur.waiting);
        if (polls == 0 || !same_view(&cur, &prev))
            stable_since = now;
        if ((cur.waiting == 0 && now - stable_since >= SETTLE_MS) ||
            now - start >= SETTLE_MAX_MS || pf_ms_left(deadline) < POLL_MS)
            break;
        free(prev.m);
        prev = cur;
        memset(&cur, 0, sizeof(cur));
        pf_sleep_ms(POLL_MS);
    }

    for (int i = 0; i < cur.n; i++)
        if (!strcmp(cur.m[i].node, node_name))
            me = i;
    pf_k8s_group_of(cur.n, cfg->group_size, me, &first, &count);
    run->peers.list = calloc((size_t)count, sizeof(*run->peers.list));
    if (!run->peers.list) {
        rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    run->peers.world = count;
    run->peers.rank = me - first;
    h = pf_k8s_hash(type, pf_k8s_hash(zn, 0));
    for (int r = 0; r < count; r++) {
        const struct member *m = &cur.m[first + r];
        struct pf_peer *pe = &run->peers.list[r];
        pe->rank = r;
        pe->port = cfg->port;
        snprintf(pe->host, sizeof(pe->host), "%s", m->ip);
        snprintf(pe->pod, sizeof(pe->pod), "%s", m->pod);
        snprintf(pe->node, sizeof(pe->node), "%s", m->node);
        h = pf_k8s_hash(m->node, h);
    }
    if (cfg->run_id[0])
        snprintf(run->peers.run_id, sizeof(run->peers.run_id), "%s",
                 cfg->run_id);
    else
        snprintf(run->peers.run_id, sizeof(run->peers.run_id),
                 "ds-%016" PRIx64, h);
    pf_info("daemonset: %d pending node(s) of this type and zone; group of "
            "%d, rank %d%s", cur.n, count, run->peers.rank,
            count == 1 ? " (alone: fabric untested)" : "");
out:
    pf_progress_end(&run->progress);
    free(cur.m);
    free(prev.m);
    return rc;
}
