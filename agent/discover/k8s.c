/* The k8s bootstrap: find this pod, its peers and its rank through the API
 * server. Own pod -> selector -> world size (config or the owner Job) ->
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
#include "../coord/daemonset.h"
#include "../util/clock.h"
#include "../util/log.h"

#define WATCH_SECONDS 30
#define MAX_RELISTS 1000

struct wait_ctx {
    struct pf_k8s_podset set;
    char rv[64];
    bool gone;                        /* 410: our resourceVersion expired */
    bool reauth;                      /* a watch just got 401 */
    bool watch_error;                 /* an ERROR event other than 410 */
    int events;                       /* events the current watch gave */
    bool done;
    bool follower;                    /* not rank 0: waits for rank 0 only */
    struct pf_k8s_pod own_pod;        /* follower: own index and address */
    int world, parallelism, port;
    const char *own, *own_ip, *prefix;
    struct pf_peers *peers;
    char missing[PF_ERRLEN];
    char err[PF_ERRLEN];
    pf_err rc;
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

static int json_int(const cJSON *obj, const char *path)
{
    const cJSON *v = pf_json_at(obj, path);
    return cJSON_IsNumber(v) && v->valuedouble >= 1 ? v->valueint : 0;
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
        char path[PF_PATH_MAX];
        cJSON *j = NULL;
        if (!pf_kube_name_ok(job))
            return pf_fail(err, PF_ERR_API, "owner Job name '%s' is not a "
                           "valid name", job);
        snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs/%s",
                 ns, job);
        rc = pf_kube_get(k, path, &j, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "reading the owner Job for the world size "
                          "(or set --world-size)");
            return rc;
        }
        per_job = json_int(j, "spec.completions");
        if (!per_job)
            per_job = json_int(j, "spec.parallelism");
        cJSON_Delete(j);
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

/* Parse a pod; the own pod's IP may come from the downward API (POD_IP)
 * before the API server shows it. */
static void parse_pod(const struct wait_ctx *w, const cJSON *obj,
                      struct pf_k8s_pod *p)
{
    pf_k8s_pod_parse(obj, p);
    if (!p->ip[0] && w->own_ip[0] && !strcmp(p->name, w->own))
        snprintf(p->ip, sizeof(p->ip), "%s", w->own_ip);
}

static void note_rv(struct wait_ctx *w, const cJSON *obj)
{
    const char *rv = pf_json_str(obj, "metadata.resourceVersion");
    if (rv)
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
}

static void check_done(struct wait_ctx *w)
{
    bool fatal = false;

    w->done = w->follower
        ? pf_k8s_assign_follower(&w->set, w->world, w->parallelism,
                                 &w->own_pod, w->prefix, w->port, w->peers,
                                 w->missing, sizeof(w->missing), &fatal)
        : pf_k8s_assign(&w->set, w->world, w->parallelism, w->own,
                        w->prefix, w->port, w->peers, w->missing,
                        sizeof(w->missing), &fatal);
    if (fatal) {
        w->rc = pf_fail(w->err, PF_ERR_USAGE, "%s", w->missing);
        w->done = true;
    }
}

/* Between events: say who is still missing, at most once per interval. */
static void waiting(const struct wait_ctx *w)
{
    int have = 0;

    if (!pf_progress_due(w->progress, pf_now_ms()))
        return;
    if (w->follower) {                /* it watches rank 0's pod alone */
        pf_progress_say(w->progress, pf_now_ms(), "its pod has no podIP yet, "
                        "missing %s; %.0f s left",
                        w->missing[0] ? w->missing : "(unknown)",
                        (double)pf_ms_left(w->deadline) / 1000.0);
        return;
    }
    for (int i = 0; i < w->set.n; i++)
        have += pf_k8s_pod_counts(&w->set.items[i]);
    pf_progress_say(w->progress, pf_now_ms(), "%d of %d peer pods have a "
                    "podIP, missing %s; %.0f s left", have, w->world,
                    w->missing[0] ? w->missing : "(unknown)",
                    (double)pf_ms_left(w->deadline) / 1000.0);
}

static bool on_event(void *ctx, const cJSON *ev)
{
    struct wait_ctx *w = ctx;
    const char *type = pf_json_str(ev, "type");
    const cJSON *obj = pf_json_at(ev, "object");
    struct pf_k8s_pod p;

    if (!ev) {
        waiting(w);
        return true;
    }
    if (!type || !obj)
        return true;
    w->events++;
    if (!strcmp(type, "ERROR")) {
        const cJSON *code = pf_json_at(obj, "code");
        if (cJSON_IsNumber(code) && code->valueint == 410) {
            pf_debug("pod watch: resourceVersion %s expired (410), listing "
                     "again", w->rv);
            w->gone = true;
        } else {
            w->watch_error = true;
            pf_warn("pod watch: ERROR event: %s",
                    pf_json_str(obj, "message") ? pf_json_str(obj, "message")
                                                : "(no message)");
        }
        return false;
    }
    note_rv(w, obj);
    if (!strcmp(type, "BOOKMARK"))
        return true;
    parse_pod(w, obj, &p);
    if (!p.name[0])
        return true;
    if (!strcmp(type, "DELETED")) {
        pf_k8s_podset_remove(&w->set, p.name);
    } else {
        w->rc = pf_k8s_podset_put(&w->set, &p, w->err);
        if (w->rc != PF_OK)
            return false;
    }
    check_done(w);
    return !w->done;
}

/* List every page into set. A 410 on a continue token means the
 * snapshot expired: start over (bounded). */
static pf_err list_pages(struct pf_kube *k, const char *base,
                         struct wait_ctx *w, struct pf_k8s_podset *set,
                         int64_t deadline, char *err)
{
    for (int restart = 0; restart < 10; restart++) {
        char cont[2048] = "", next_cont[2048], path[PF_PATH_MAX * 8];
        bool expired = false;

        set->n = 0;
        for (int page = 0; page < 10000; page++) {
            struct pf_kube_resp r;
            const cJSON *item;
            const char *next;
            pf_err rc;

            if (pf_ms_left(deadline) <= 0)
                return PF_ERR_TIMEOUT;
            snprintf(path, sizeof(path), "%s&limit=500%s%s", base,
                     cont[0] ? "&continue=" : "", cont);
            rc = pf_kube_do(k, "GET", path, NULL, NULL, &r, err);
            if (rc != PF_OK)
                return rc;
            if (r.status == 410) {
                pf_kube_resp_free(&r);
                pf_info("pod list: continue token expired, listing again");
                expired = true;
                break;
            }
            if (r.status != 200 || !r.json) {
                rc = pf_kube_status_err(&r, "GET", base, err);
                pf_kube_resp_free(&r);
                if (rc == PF_ERR_FORBIDDEN)
                    pf_err_prefix(err, "listing peer pods needs get/list/"
                                  "watch on pods in this namespace");
                else if (rc == PF_ERR_USAGE)
                    pf_err_prefix(err, "the API server refused the pod list "
                                  "(check --peer-selector)");
                return rc;
            }
            cJSON_ArrayForEach(item, pf_json_at(r.json, "items")) {
                struct pf_k8s_pod p;
                parse_pod(w, item, &p);
                rc = pf_k8s_podset_put(set, &p, err);
                if (rc != PF_OK) {
                    pf_kube_resp_free(&r);
                    return rc;
                }
            }
            note_rv(w, r.json);
            next = pf_json_str(r.json, "metadata.continue");
            if (!next || !*next) {
                pf_kube_resp_free(&r);
                return PF_OK;
            }
            rc = pf_kube_query_escape(next, next_cont, sizeof(next_cont),
                                      err);
            pf_kube_resp_free(&r);
            if (rc != PF_OK)
                return rc;
            /* A server (or proxy) that hands back the token it was given
             * would have us fetch the same page until the deadline. */
            if (!strcmp(next_cont, cont))
                return pf_fail(err, PF_ERR_API, "pod list: the API server "
                               "answered page %d with the continue token it "
                               "was sent; the list would never end", page + 1);
            memcpy(cont, next_cont, sizeof(cont));
        }
        if (!expired)
            return pf_fail(err, PF_ERR_API, "pod list did not end after "
                           "10000 pages");
    }
    return pf_fail(err, PF_ERR_API, "pod list: continue token expired 10 "
                   "times in a row");
}

/* A complete list replaces w->set; a list cut short (deadline, error)
 * leaves the last complete view, which the PeerTimeout message counts. */
static pf_err list_pods(struct pf_kube *k, const char *base,
                        struct wait_ctx *w, int64_t deadline, char *err)
{
    struct pf_k8s_podset fresh = { 0 };
    pf_err rc = list_pages(k, base, w, &fresh, deadline, err);

    if (rc != PF_OK) {
        pf_k8s_podset_free(&fresh);
        return rc;
    }
    pf_k8s_podset_free(&w->set);
    w->set = fresh;
    return PF_OK;
}

static pf_err wait_for_peers(struct pf_kube *k, const char *ns,
                             const char *selector, struct wait_ctx *w,
                             int64_t deadline, char *err)
{
    char sel[4096], base[PF_PATH_MAX * 5], path[PF_PATH_MAX * 6];
    pf_err rc = pf_kube_query_escape(selector, sel, sizeof(sel), err);

    if (rc != PF_OK)
        return rc;
    snprintf(base, sizeof(base), "/api/v1/namespaces/%s/pods?labelSelector=%s",
             ns, sel);
    for (int relist = 0; relist < MAX_RELISTS; relist++) {
        rc = list_pods(k, base, w, deadline, err);
        if (rc != PF_OK)
            return rc;
        check_done(w);
        if (w->done)
            return w->rc == PF_OK ? PF_OK : pf_fail(err, w->rc, "%s", w->err);
        w->gone = false;
        while (!w->gone) {
            int64_t left = pf_ms_left(deadline);
            long status = 0;
            int64_t started;
            bool short_empty;
            int secs;

            if (left <= 0)
                return PF_ERR_TIMEOUT;
            /* A follower watches one pod: one stream to the deadline keeps
             * its request count constant. */
            secs = left / 1000 < WATCH_SECONDS || w->follower
                       ? (int)(left / 1000) + 1 : WATCH_SECONDS;
            snprintf(path, sizeof(path), "%s&watch=1&resourceVersion=%s"
                     "&allowWatchBookmarks=true&timeoutSeconds=%d", base,
                     w->rv, secs);
            started = pf_now_ms();
            w->events = 0;
            rc = pf_kube_watch(k, path, secs, on_event, w, &status, err);
            /* Asked to stay open for >= 1 s: a stream that ends sooner with
             * nothing in it is a server or proxy that cannot watch. */
            short_empty = rc == PF_OK && status == 200 && w->events == 0 &&
                          pf_now_ms() - started < 1000;
            if (w->done)
                return w->rc == PF_OK ? PF_OK
                                      : pf_fail(err, w->rc, "%s", w->err);
            if (w->rc != PF_OK)
                return pf_fail(err, w->rc, "%s", w->err);
            if (status == 401 && !w->reauth) {
                /* The token rotated: pf_kube_watch re-read it; list again
                 * once with it before calling this fatal. */
                w->reauth = true;
                break;
            }
            /* A failed watch, one the server ended with an ERROR event or
             * one that ended at once and empty, is listed again after a
             * pause, so a server in trouble is not asked again at once,
             * over and over. */
            if (rc != PF_OK || (status != 200 && status != 410) ||
                w->watch_error || short_empty) {
                if (status == 401 || status == 403)
                    return pf_fail(err, PF_ERR_FORBIDDEN, "watching pods in "
                                   "%s: HTTP %ld (needs watch on pods)", ns,
                                   status);
                pf_debug("pod watch ended (%s, HTTP %ld); listing again",
                         rc != PF_OK ? err
                         : w->watch_error ? "ERROR event"
                         : short_empty ? "closed at once, empty" : "status",
                         status);
                w->watch_error = false;
                pf_sleep_ms(left < 1000 ? left : 1000);
                break;
            }
            if (status == 410) {
                pf_debug("pod watch: HTTP 410 for resourceVersion %s, "
                         "listing again", w->rv);
                w->gone = true;
            }
            else
                w->reauth = false;
        }
    }
    return pf_fail(err, PF_ERR_API, "pod watch restarted %d times",
                   MAX_RELISTS);
}

/* Own pod, or a usage error naming what identity is missing. */
static pf_err read_own_pod(struct pf_kube *k, const struct pf_kube_identity *id,
                           cJSON **own, char *err)
{
    char path[PF_PATH_MAX];
    pf_err rc;

    if (!id->pod[0] || !id->ns[0])
        return pf_fail(err, PF_ERR_USAGE, "k8s bootstrap needs the own pod "
                       "and namespace: set POD_NAME and POD_NAMESPACE (downward "
                       "API) or --pod-name and --namespace");
    if (!pf_kube_name_ok(id->pod) || !pf_kube_name_ok(id->ns))
        return pf_fail(err, PF_ERR_USAGE, "pod '%s' / namespace '%s' is not "
                       "a valid Kubernetes name", id->pod, id->ns);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", id->ns,
             id->pod);
    rc = pf_kube_get(k, path, own, err);
    if (rc != PF_OK)
        pf_err_prefix(err, "reading own pod");
    return rc;
}

pf_err pf_discover_k8s(struct pf_run *run, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_kube_given given;
    struct pf_kube_identity id;
    struct pf_kube_opts o;
    struct pf_kube *k = NULL;
    struct wait_ctx w;
    cJSON *own = NULL;
    char selector[1024], watch_sel[1200], prefix[PF_NAME_MAX * 2];
    int64_t deadline = pf_run_deadline(run);
    int64_t t0 = pf_now_ms();
    enum pf_reason why;
    pf_err rc;

    memset(&w, 0, sizeof(w));
    pf_config_kube(cfg, &given);
    pf_kube_identity(&given, &id);
    rc = pf_kube_opts_init(&o, &given, err);
    /* The run's deadline, started before the probe (not now), and the
     * run's cancel: a SIGTERM ends a watch at once. */
    o.deadline = deadline;
    o.cancel = run->cancel;
    if (rc == PF_OK)
        rc = pf_kube_open(&o, &k, err);
    if (rc == PF_OK)
        rc = read_own_pod(k, &id, &own, err);
    if (rc != PF_OK)
        goto out;
    run->peers.bootstrap = PF_BOOT_K8S;
    pf_k8s_group_owner(own, cfg->mode == PF_MODE_DAEMONSET,
                       cfg->peer_selector[0] != '\0', run->peers.owner,
                       sizeof(run->peers.owner));
    if (cfg->mode == PF_MODE_DAEMONSET) {
        rc = pf_discover_daemonset(run, k, &id, own, err);
        goto out;
    }

    rc = pf_k8s_selector(own, cfg->peer_selector, selector, sizeof(selector),
                         err);
    if (rc == PF_OK)
        rc = resolve_world(k, cfg, id.ns, own, &w.world, &w.parallelism,
                           prefix, sizeof(prefix), err);
    if (rc != PF_OK)
        goto out;
    w.own = id.pod;
    w.own_ip = id.pod_ip;
    w.prefix = prefix;
    w.port = cfg->port;
    w.peers = &run->peers;
    parse_pod(&w, own, &w.own_pod);
    w.follower = pf_k8s_pod_rank(&w.own_pod, w.parallelism) > 0 &&
                 pf_k8s_leader_selector(own, selector, w.parallelism,
                                        watch_sel, sizeof(watch_sel));
    pf_info("k8s: pod %s/%s, selector '%s', world %d, %s", id.ns, id.pod,
            selector, w.world, w.follower ? "waiting for rank 0 only"
            : pf_k8s_pod_rank(&w.own_pod, w.parallelism) == 0
                ? "rank 0: listing the group"
                : "no index label: listing the group");

    w.progress = &run->progress;
    w.deadline = deadline;
    pf_progress_begin(&run->progress, w.follower ? "waiting for rank 0"
                                                 : "waiting for pods",
                      pf_now_ms());
    rc = wait_for_peers(k, id.ns, w.follower ? watch_sel : selector, &w,
                        deadline, err);
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
        for (int i = 0; i < w.set.n; i++)
            have += pf_k8s_pod_counts(&w.set.items[i]);
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
                 pf_k8s_hash(selector, pf_k8s_hash(id.ns, 0)));
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
    pf_k8s_podset_free(&w.set);
    cJSON_Delete(own);
    pf_kube_close(k);
    return rc;
}
