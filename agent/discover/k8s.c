/* The k8s bootstrap: find this pod, its peers and its rank through the API
 * server (the reads and the list + watch are k8s/pods.h's). Own pod ->
 * selector -> world size (config or the owner Job) ->
 * then, on rank 0 (the leader) only, list (paged) + watch (bookmarks) until
 * world pods have a podIP; every other rank lists and watches only the pod
 * of rank 0 (a label selector on index 0) until it has a podIP, and learns
 * the rest of the table from rank 0's WELCOME. So a non-leader makes a
 * handful of requests whatever the group's size, and rank 0, which checks
 * every HELLO against its own view, is the only one that reads N pods.
 * Bounded by the run deadline; 410 on a continue token or a watch means
 * list again. */
#include "discover.h"
#include "k8s.h"
#include "k8s_owner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../config/run_clock.h"
#include "../k8s/object.h"
#include "../k8s/pods.h"
#include "../k8s/session.h"
#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"

/* What the wait for the group looks for (k8s/pods.h's wait calls back). */
struct group_wait {
    bool follower;                    /* not rank 0: waits for rank 0 only */
    struct pf_k8s_pod own_pod;        /* follower: own index and address */
    int world, parallelism, port;
    const char *own, *prefix;
    struct pf_peers *peers;
    char missing[PF_ERRLEN];
    struct pf_progress *progress;     /* lines while waiting */
    int64_t deadline;
};

static const char *owner_job(const cJSON *pod)
{
    const cJSON *refs = pf_json_at(pod, "metadata.ownerReferences");
    const cJSON *r;

    cJSON_ArrayForEach(r, refs) {
        const char *kind = pf_json_str(r, "kind");
        if (kind && !strcmp(kind, "Job"))
            return pf_json_str(r, "name");
    }
    return NULL;
}

static const char *label(const cJSON *obj, const char *key)
{
    const cJSON *labels = pf_json_at(obj, "metadata.labels");
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key)
                            : NULL;
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* A positive decimal annotation (at most 100000), else 0. */
static int annotation_int(const cJSON *obj, const char *key)
{
    const cJSON *annos = pf_json_at(obj, "metadata.annotations");
    const cJSON *v = annos ? cJSON_GetObjectItemCaseSensitive(annos, key) : NULL;
    char *end;
    long n;

    if (!cJSON_IsString(v) || !v->valuestring[0])
        return 0;
    n = strtol(v->valuestring, &end, 10);
    return *end == '\0' && n > 0 && n <= 100000 ? (int)n : 0;
}

/* World size, JobSet parallelism (pods per Job, 0 when not a JobSet) and
 * the pod-name prefix used to name pods that were never created. */
static pf_err resolve_world(struct pf_kube *k, const struct pf_config *cfg,
                            const char *ns, const cJSON *own, int *world,
                            int *parallelism, char *prefix, size_t plen,
                            char *err)
{
    const char *pod = pf_json_str(own, "metadata.name");
    const char *jobset = label(own, PF_K8S_JOBSET_NAME);
    const char *rjob = label(own, PF_K8S_JOBSET_RJOB);
    const char *reps = label(own, PF_K8S_JOBSET_REPLICAS);
    const char *job = owner_job(own);
    int replicas = reps ? atoi(reps) : 0;
    int per_job = 0;
    pf_err rc;

    if (!job)
        job = label(own, "batch.kubernetes.io/job-name");
    prefix[0] = '\0';
    if (jobset && rjob)
        snprintf(prefix, plen, "%s-%s-", jobset, rjob);
    else if (job)
        snprintf(prefix, plen, "%s-", job);

    *world = cfg->world_size;
    /* The pod's <prefix>world-size annotation (set in a job template: the
     * gate the webhook injects has no flags of its own), else a
     * LeaderWorkerSet's size, annotated on every pod of the group. */
    if (*world <= 0) {
        char key[PF_NAME_MAX + 16];
        snprintf(key, sizeof(key), "%sworld-size", cfg->label_prefix);
        *world = annotation_int(own, key);
        if (*world <= 0 && !jobset && !job && label(own, PF_K8S_LWS_NAME))
            *world = annotation_int(own, PF_K8S_LWS_SIZE);
    }
    if (jobset && replicas > 0 && *world > 0 && *world % replicas == 0)
        per_job = *world / replicas;
    if ((*world <= 0 || (jobset && per_job == 0)) && job) {
        if (!pf_k8s_name_ok(job))
            return pf_fail(err, PF_ERR_API, "owner Job name '%s' is not a "
                           "valid name", job);
        rc = pf_k8s_job_size(k, ns, job, &per_job, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "reading the owner Job for the world size "
                          "(or set --world-size)");
            return rc;
        }
        if (*world <= 0)
            *world = jobset ? per_job * (replicas > 0 ? replicas : 1)
                            : per_job;
    }
    if (*world <= 0)
        return pf_fail(err, PF_ERR_USAGE,
                       "cannot derive the world size: pod %s has no owner "
                       "Job with completions or parallelism, no %sworld-size "
                       "annotation (nor a LeaderWorkerSet size); set "
                       "--world-size", pod ? pod : "?", cfg->label_prefix);
    *parallelism = jobset ? per_job : 0;
    return PF_OK;
}

/* After every change of the set: is the group (or rank 0) complete? */
static bool group_done(void *ctx, const struct pf_k8s_podset *set, pf_err *rc,
                       char *err)
{
    struct group_wait *g = ctx;
    bool fatal = false, done;

    done = g->follower
        ? pf_k8s_assign_follower(set, g->world, g->parallelism, &g->own_pod,
                                 g->prefix, g->port, g->peers, g->missing,
                                 sizeof(g->missing), &fatal)
        : pf_k8s_assign(set, g->world, g->parallelism, g->own, g->prefix,
                        g->port, g->peers, g->missing, sizeof(g->missing),
                        &fatal);
    if (fatal)
        *rc = pf_fail(err, PF_ERR_USAGE, "%s", g->missing);
    return done;
}

/* Between events: say who is still missing, at most once per interval. */
static void waiting(void *ctx, const struct pf_k8s_podset *set)
{
    const struct group_wait *g = ctx;
    int have = 0;

    if (!pf_progress_due(g->progress, pf_now_ms()))
        return;
    if (g->follower) {                /* it watches rank 0's pod alone */
        pf_progress_say(g->progress, pf_now_ms(), "its pod has no podIP yet, "
                        "missing %s; %.0f s left",
                        g->missing[0] ? g->missing : "(unknown)",
                        (double)pf_ms_left(g->deadline) / 1000.0);
        return;
    }
    for (int i = 0; i < set->n; i++)
        have += pf_k8s_pod_counts(&set->items[i]);
    pf_progress_say(g->progress, pf_now_ms(), "%d of %d peer pods have a "
                    "podIP, missing %s; %.0f s left", have, g->world,
                    g->missing[0] ? g->missing : "(unknown)",
                    (double)pf_ms_left(g->deadline) / 1000.0);
}

pf_err pf_discover_k8s(struct pf_run *run, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_k8s_target t;
    struct pf_kube *k = NULL;
    struct group_wait w;
    struct pf_k8s_pod_wait pw;
    cJSON *own = NULL;
    char selector[1024], watch_sel[1200], prefix[PF_NAME_MAX * 2];
    int64_t deadline = pf_run_deadline(run);
    int64_t t0 = pf_now_ms();
    enum pf_reason why;
    pf_err rc;

    memset(&w, 0, sizeof(w));
    memset(&pw, 0, sizeof(pw));
    pf_config_target(cfg, &t);
    /* The run's deadline, started before the probe (not now), and the
     * run's cancel: a SIGTERM ends a watch at once. */
    rc = pf_k8s_open(&t, deadline, run->cancel, &k, err);
    if (rc == PF_OK)
        rc = pf_k8s_own_pod(k, &t.id, &own, err);
    if (rc != PF_OK)
        goto out;
    run->peers.bootstrap = PF_BOOT_K8S;
    pf_k8s_group_owner(own, cfg->mode == PF_MODE_DAEMONSET,
                       cfg->peer_selector[0] != '\0', run->peers.owner,
                       sizeof(run->peers.owner));
    if (cfg->mode == PF_MODE_DAEMONSET) {
        rc = pf_discover_daemonset(run, k, &t, own, err);
        goto out;
    }

    rc = pf_k8s_selector(own, cfg->peer_selector, selector, sizeof(selector),
                         err);
    if (rc == PF_OK)
        rc = resolve_world(k, cfg, t.id.ns, own, &w.world, &w.parallelism,
                           prefix, sizeof(prefix), err);
    if (rc != PF_OK)
        goto out;
    w.own = t.id.pod;
    w.prefix = prefix;
    w.port = cfg->port;
    w.peers = &run->peers;
    /* Its podIP may come from the downward API (POD_IP) before the API
     * server shows it. */
    pf_k8s_pod_parse(own, &w.own_pod);
    if (!w.own_pod.ip[0] && t.id.pod_ip[0] && !strcmp(w.own_pod.name, t.id.pod))
        snprintf(w.own_pod.ip, sizeof(w.own_pod.ip), "%s", t.id.pod_ip);
    w.follower = pf_k8s_pod_rank(&w.own_pod, w.parallelism) > 0 &&
                 pf_k8s_leader_selector(own, selector, w.parallelism,
                                        watch_sel, sizeof(watch_sel));
    pf_info("k8s: pod %s/%s, selector '%s', world %d, %s", t.id.ns, t.id.pod,
            selector, w.world, w.follower ? "waiting for rank 0 only"
            : pf_k8s_pod_rank(&w.own_pod, w.parallelism) == 0
                ? "rank 0: listing the group"
                : "no index label: listing the group");

    w.progress = &run->progress;
    w.deadline = deadline;
    pf_progress_begin(&run->progress, w.follower ? "waiting for rank 0"
                                                 : "waiting for pods",
                      pf_now_ms());
    pw.ns = t.id.ns;
    pw.selector = w.follower ? watch_sel : selector;
    pw.own = t.id.pod;
    pw.own_ip = t.id.pod_ip;
    pw.one_stream = w.follower;
    pw.deadline = deadline;
    pw.done = group_done;
    pw.idle = waiting;
    pw.ctx = &w;
    rc = pf_k8s_pods_wait(k, &pw, err);
    pf_progress_end(&run->progress);
    if (rc == PF_ERR_TIMEOUT && w.follower) {
        rc = pf_fail(err, PF_ERR_TIMEOUT,
                     "PeerTimeout: rank 0 had no podIP after %.1f s (selector "
                     "%s); missing: %s", (double)(pf_now_ms() - t0) / 1000.0,
                     watch_sel, w.missing[0] ? w.missing : "(unknown)");
        goto out;
    }
    if (rc == PF_ERR_TIMEOUT) {
        int have = 0;
        for (int i = 0; i < pw.set.n; i++)
            have += pf_k8s_pod_counts(&pw.set.items[i]);
        rc = pf_fail(err, PF_ERR_TIMEOUT,
                     "PeerTimeout: %d of %d peer pods had a podIP after "
                     "%.1f s (selector %s); missing: %s", have, w.world,
                     (double)(pf_now_ms() - t0) / 1000.0, selector,
                     w.missing[0] ? w.missing : "(unknown)");
        goto out;
    }
    if (rc != PF_OK)
        goto out;
    if (cfg->run_id[0])
        snprintf(run->peers.run_id, sizeof(run->peers.run_id), "%s",
                 cfg->run_id);
    else
        snprintf(run->peers.run_id, sizeof(run->peers.run_id),
                 "k8s-%016" PRIx64,
                 pf_k8s_hash(selector, pf_k8s_hash(t.id.ns, 0)));
    pf_info("k8s: rank %d of %d, rank 0 is %s (%s)", run->peers.rank,
            run->peers.world, run->peers.list[0].pod,
            run->peers.list[0].host);
out:
    /* A name the API server does not know (own pod, its Job, own Node) or
     * a token file that cannot be read is a deployment error (exit 2,
     * nothing published), not a bad fabric: as a validation failure it
     * would label the Node failed and taint it. */
    if (rc == PF_ERR_NOTFOUND || rc == PF_ERR_IO)
        rc = PF_ERR_USAGE;
    /* The verdict names why the fabric could not be tested (the API, the
     * peers, the coordinator): infrastructure (exit 3), not a bad fabric.
     * Bad input has no reason: the run stops with exit 2. */
    why = pf_reason_for_err(rc, PF_STAGE_DISCOVER);
    if (why != PF_R_None)
        pf_fault_set(&run->peers.fault, rc, why, err);
    pf_k8s_podset_free(&pw.set);
    cJSON_Delete(own);
    pf_k8s_close(k);
    return rc;
}
