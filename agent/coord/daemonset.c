/* DaemonSet pre-flight mode: the agent pods on nodes labelled
 * <prefix>status=pending validate together, in groups of cfg.group_size of
 * one instance type and zone (a pool). No agent computes groups on its own:
 * the pool's coordinator, whoever holds the pool's coordination.k8s.io
 * Lease, forms them from the agents registered with it (coord.h), so a
 * node that turns pending while others validate never lands in a group
 * nobody joins; it waits for the next round. An agent that gets no group
 * within half its run (no partner came, coordinator unreachable) validates
 * alone: node checks plus a one-rank run, labelled fabric=untested. */
#include "daemonset.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/run_clock.h"
#include "../discover/k8s.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "coord.h"
#include "lease.h"

#define SECRET_MAX (64 * 1024)
#define RETRY_MS 1000                 /* between tries of the Lease */
#define LOOP_MAX 100000

/* The DaemonSet that owns our pod names the Lease, so two releases in one
 * namespace do not share coordinators. */
static const char *owner_daemonset(const cJSON *pod)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, pf_json_at(pod, "metadata.ownerReferences")) {
        const char *kind = pf_json_str(r, "kind");
        const char *name = pf_json_str(r, "name");
        if (kind && name && !strcmp(kind, "DaemonSet"))
            return name;
    }
    return "efa-preflight";
}

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The coordinator's pod and address from its holderIdentity
 * "<pod>_<random>". PF_ERR_NOTFOUND: that pod is gone (deleted, finished,
 * never had an address): its holder is dead. */
static pf_err holder_address(struct pf_kube *k, const char *ns,
                             const char *holder, char *ip, size_t len,
                             char *err)
{
    char pod[PF_NAME_MAX], path[PF_PATH_MAX];
    const char *us = strrchr(holder, '_');
    cJSON *obj = NULL;
    struct pf_k8s_pod q;
    pf_err rc;

    snprintf(pod, sizeof(pod), "%.*s", us ? (int)(us - holder)
                                          : (int)strlen(holder), holder);
    if (!pf_kube_name_ok(pod))
        return pf_fail(err, PF_ERR_PROTOCOL, "lease holder '%s' names no pod",
                       holder);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, pod);
    rc = pf_kube_get(k, path, &obj, err);
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

static pf_err pool_init(struct pf_run *run, struct pf_kube *k,
                        const struct pf_kube_identity *id,
                        const cJSON *own_pod, struct pf_co_pool *p,
                        char *err)
{
    const struct pf_config *cfg = &run->cfg;
    char path[PF_PATH_MAX], sel[2048], pend[512];
    char selector[1024];
    cJSON *node = NULL;
    const char *t, *z;
    pf_err rc;

    memset(p, 0, sizeof(*p));
    p->k = k;
    p->cfg = cfg;
    snprintf(p->ns, sizeof(p->ns), "%s", id->ns);
    snprintf(p->pod, sizeof(p->pod), "%s", id->pod);
    snprintf(p->node, sizeof(p->node), "%s", id->node[0] ? id->node
             : pf_json_str(own_pod, "spec.nodeName")
                 ? pf_json_str(own_pod, "spec.nodeName") : "");
    snprintf(p->pod_ip, sizeof(p->pod_ip), "%s", id->pod_ip[0] ? id->pod_ip
             : pf_json_str(own_pod, "status.podIP")
                 ? pf_json_str(own_pod, "status.podIP") : "");
    if (!pf_kube_name_ok(p->node))
        return pf_fail(err, PF_ERR_USAGE, "daemonset mode needs the node "
                       "name: set NODE_NAME (downward API spec.nodeName) or "
                       "--node-name");
    if (cfg->port >= 65535)
        return pf_fail(err, PF_ERR_USAGE, "daemonset mode uses --port and "
                       "--port + 1 (the coordinator): --port %d leaves no "
                       "room", cfg->port);
    p->port = cfg->port + 1;
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", p->node);
    rc = pf_kube_get(k, path, &node, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "reading own node");
        return rc;
    }
    t = pf_k8s_node_type(node);
    z = pf_k8s_node_zone(node);
    snprintf(p->type, sizeof(p->type), "%s", t ? t : "");
    snprintf(p->zone, sizeof(p->zone), "%s", z ? z : "");
    cJSON_Delete(node);

    rc = pf_k8s_selector(own_pod, cfg->peer_selector, selector,
                         sizeof(selector), err);
    if (rc == PF_OK)
        rc = pf_kube_query_escape(selector, sel, sizeof(sel), err);
    /* Only the coordinator lists: the pending Nodes of its instance type
     * (the zone is checked on each). */
    if (rc == PF_OK) {
        if (p->type[0])
            snprintf(path, sizeof(path), "%sstatus=pending,"
                     "node.kubernetes.io/instance-type=%s", cfg->label_prefix,
                     p->type);
        else
            snprintf(path, sizeof(path), "%sstatus=pending",
                     cfg->label_prefix);
        rc = pf_kube_query_escape(path, pend, sizeof(pend), err);
    }
    if (rc != PF_OK)
        return rc;
    snprintf(p->nodes_path, sizeof(p->nodes_path),
             "/api/v1/nodes?labelSelector=%s", pend);
    snprintf(p->pods_path, sizeof(p->pods_path),
             "/api/v1/namespaces/%s/pods?labelSelector=%s", id->ns, sel);
    /* Wait for stragglers a quarter of the run at most (>= 5 s). */
    p->gather_ms = (int64_t)clamp(cfg->timeout_s / 4, 5, 120) * 1000;
    pf_info("daemonset: node %s (%s, %s), agents '%s', group size %d",
            p->node, p->type[0] ? p->type : "?", p->zone[0] ? p->zone : "?",
            selector, cfg->group_size);
    return PF_OK;
}

static pf_err fill_peers(struct pf_run *run, const struct pf_co_pool *p,
                         const struct pf_co_assign *a, char *err)
{
    int world = a ? a->world : 1;

    run->peers.list = calloc((size_t)world, sizeof(*run->peers.list));
    if (!run->peers.list)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    run->peers.world = world;
    run->peers.rank = a ? a->rank : 0;
    for (int r = 0; r < world; r++) {
        struct pf_peer *pe = &run->peers.list[r];
        pe->rank = r;
        pe->port = run->cfg.port;
        snprintf(pe->host, sizeof(pe->host), "%s", a ? a->e[r].host
                                                     : p->pod_ip);
        snprintf(pe->pod, sizeof(pe->pod), "%s", a ? a->e[r].pod : p->pod);
        snprintf(pe->node, sizeof(pe->node), "%s", a ? a->e[r].node : p->node);
    }
    if (run->cfg.run_id[0])
        snprintf(run->peers.run_id, sizeof(run->peers.run_id), "%s",
                 run->cfg.run_id);
    else if (a)
        snprintf(run->peers.run_id, sizeof(run->peers.run_id), "%s",
                 a->run_id);
    else
        snprintf(run->peers.run_id, sizeof(run->peers.run_id),
                 "ds-%016" PRIx64, pf_k8s_hash(p->node, 0));
    return PF_OK;
}

/* How many other pending nodes of the pool have an agent pod (starting
 * or running, not finished nor being deleted): the agents we could pair
 * with. An error: we cannot tell. */
static pf_err pool_others(const struct pf_co_pool *p, int *others, char *err)
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

pf_err pf_discover_daemonset(struct pf_run *run, struct pf_kube *k,
                             const struct pf_kube_identity *id,
                             const cJSON *own_pod, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_co_pool pool;
    struct pf_lease lease;
    struct pf_co_assign group = { 0 };
    char *secret = NULL, holder[PF_NAME_MAX] = "", ip[64] = "";
    char msg[PF_ERRLEN] = "", last[PF_ERRLEN] = "no coordinator found";
    uint8_t rnd[PF_CO_NONCE];
    size_t secret_len = 0;
    int64_t start = pf_now_ms(), left = pf_ms_left(pf_run_deadline(run));
    int64_t wait_until, lease_warned = 0;
    int races = 0, others = 0;
    bool grouped = false;
    pf_err rc;

    rc = pool_init(run, k, id, own_pod, &pool, err);
    if (rc != PF_OK)
        return rc;
    if (cfg->secret_file[0]) {
        rc = pf_read_file(cfg->secret_file, SECRET_MAX, &secret, &secret_len,
                          err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "--secret-file");
            return rc == PF_ERR_NOMEM ? rc : PF_ERR_USAGE;
        }
        pool.secret = (const uint8_t *)secret;
        pool.secret_len = secret_len;
    }
    /* Half the run at most waiting for a group (10 s at least), so the
     * collective keeps the other half. */
    wait_until = start + (left / 2 > 10000 ? left / 2 : 10000);

    memset(&lease, 0, sizeof(lease));
    snprintf(lease.ns, sizeof(lease.ns), "%s", id->ns);
    pf_lease_name(owner_daemonset(own_pod), pool.type, pool.zone, lease.name,
                  sizeof(lease.name));
    pf_seal_nonce(rnd);
    snprintf(lease.identity, sizeof(lease.identity),
             "%s_%02x%02x%02x%02x%02x%02x%02x%02x", id->pod, rnd[0], rnd[1],
             rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    /* client-go's 15 s, shorter for short runs so a dead coordinator's
     * Lease frees up within a fraction of the run. */
    lease.duration_s = clamp(cfg->timeout_s / 6, 5, 15);

    pool.progress = &run->progress;
    pf_progress_begin(&run->progress, "waiting for a group", start);
    for (int i = 0; i < LOOP_MAX && !grouped; i++) {
        enum pf_lease_state st;
        int64_t now = pf_now_ms();

        if (now >= wait_until)
            break;
        rc = pf_lease_try(k, &lease, now, &st, msg);
        if (rc == PF_ERR_FORBIDDEN || rc == PF_ERR_UNAUTHORIZED ||
            rc == PF_ERR_USAGE) {
            snprintf(err, PF_ERRLEN, "%s", msg);
            goto out;
        }
        if (rc != PF_OK) {
            pf_warn("daemonset: lease %s/%s: %s; trying again", lease.ns,
                    lease.name, msg);
            snprintf(last, sizeof(last), "lease %s/%s: %s", lease.ns,
                     lease.name, msg);
            pf_sleep_ms(RETRY_MS);
            continue;
        }
        if (st == PF_LEASE_HELD) {
            rc = pf_co_coordinate(&pool, &lease, wait_until, &group, &grouped,
                                  err);
            if (rc != PF_OK)
                goto out;
            /* A group of one while partners are still pending (validating
             * with others, or on their way): look again while time is
             * left rather than leave pending untested. */
            if (grouped && group.world < 2 && pf_now_ms() + RETRY_MS < wait_until &&
                (pool_others(&pool, &others, msg) != PF_OK || others > 0)) {
                pf_info("daemonset: a group of one, but %d other pending "
                        "node(s) in the pool: another round", others);
                pf_co_assign_free(&group);
                grouped = false;
                pf_sleep_ms(RETRY_MS);
            }
            continue;
        }
        if (st == PF_LEASE_RETRY) {
            /* Lost a race for it (409) or it just expired. Many in a row
             * is trouble (a rival writing all the time, a server refusing
             * every write): say so, and back off further. */
            races++;
            snprintf(last, sizeof(last), "lease %s/%s: %d writes in a row "
                     "lost to a conflict (409)", lease.ns, lease.name, races);
            if (races >= 5 && now - lease_warned >= 5000) {
                pf_warn("daemonset: %s; trying again", last);
                lease_warned = now;
            }
            pf_sleep_ms((races < 5 ? 100 : 500) +
                        (int64_t)(rnd[i % PF_CO_NONCE] % 200) * (races < 5 ? 1 : 5));
            continue;
        }
        races = 0;
        /* Held by another agent: find its address (again when it changed)
         * and register there. */
        if (strcmp(holder, lease.holder) || !ip[0]) {
            snprintf(holder, sizeof(holder), "%s", lease.holder);
            ip[0] = '\0';
            rc = holder_address(k, id->ns, holder, ip, sizeof(ip), msg);
            if (rc == PF_ERR_FORBIDDEN || rc == PF_ERR_UNAUTHORIZED) {
                snprintf(err, PF_ERRLEN, "%s", msg);
                goto out;
            }
            if (rc == PF_ERR_NOTFOUND) {
                /* A dead holder: its record (whatever duration it claims)
                 * is taken over at the next try. */
                pf_warn("daemonset: lease %s/%s is held by %s: %s; taking it "
                        "over", lease.ns, lease.name, holder, msg);
                snprintf(lease.gone, sizeof(lease.gone), "%s", holder);
                snprintf(last, sizeof(last), "%s", msg);
                holder[0] = '\0';
                pf_sleep_ms(100 + (int64_t)(rnd[i % PF_CO_NONCE] % 200));
                continue;
            }
            if (rc != PF_OK) {
                snprintf(last, sizeof(last), "%s", msg);
                pf_sleep_ms(RETRY_MS);
                continue;
            }
        }
        pf_info("daemonset: registering with coordinator %s at %s", holder,
                ip);
        rc = pf_co_join(&pool, ip, wait_until, &group, &grouped, msg);
        if (rc == PF_ERR_LOST) {
            pf_info("daemonset: %s; asking the lease again", msg);
            snprintf(last, sizeof(last), "%s", msg);
            pf_sleep_ms(RETRY_MS);
            continue;
        }
        if (rc != PF_OK) {
            snprintf(err, PF_ERRLEN, "%s", msg);
            goto out;
        }
    }
    pf_progress_end(&run->progress);
    /* Alone, with or without a coordinator: only a pool that really has
     * no other pending node may leave pending untested (status=untested).
     * With partners there, or when we cannot tell, the node stays pending
     * and the agent exits, to be started again (GroupNotFormed). */
    if (!grouped || group.world < 2) {
        rc = pool_others(&pool, &others, msg);
        if (rc != PF_OK || others > 0) {
            if (rc != PF_OK)
                snprintf(msg + strlen(msg), PF_ERRLEN - strlen(msg),
                         "; %s", last);
            else
                snprintf(msg, sizeof(msg), "%d other node(s) of pool %s/%s "
                         "are pending, but no group formed within %.1f s "
                         "(%s)", others, pool.type[0] ? pool.type : "?",
                         pool.zone[0] ? pool.zone : "?",
                         (double)(pf_now_ms() - start) / 1000.0, last);
            pf_warn("daemonset: %s: the node stays pending; exiting to be "
                    "started again", msg);
            snprintf(err, PF_ERRLEN, "%s", msg);
            run->peers.stay_pending = true;
            rc = PF_ERR_TIMEOUT;
            pf_fault_set(&run->peers.fault, rc, PF_R_GroupNotFormed, msg);
            goto out;
        }
        pf_warn("daemonset: no other pending node in pool %s/%s (%s): "
                "validating alone, fabric untested",
                pool.type[0] ? pool.type : "?",
                pool.zone[0] ? pool.zone : "?", grouped ? "a group of one"
                                                       : last);
        if (grouped && group.world < 2) {
            pf_co_assign_free(&group);
            grouped = false;
        }
    }
    rc = fill_peers(run, &pool, grouped ? &group : NULL, err);
    if (rc == PF_OK)
        pf_info("daemonset: group of %d, rank %d, rank 0 on %s%s",
                run->peers.world, run->peers.rank, run->peers.list[0].node,
                run->peers.world == 1 ? " (alone: fabric untested)" : "");
out:
    pf_progress_end(&run->progress);
    /* A coordinator's refusal (PF_ERR_REJECTED) is recorded as PeerRejected
     * by the caller, pf_discover_k8s, with every other discovery error. */
    pf_co_assign_free(&group);
    if (secret) {
        memset(secret, 0, secret_len);
        free(secret);
    }
    return rc;
}
