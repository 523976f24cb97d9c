/* Pod reads: one pod, the own pod, the owner Job's size, and the wait for
 * a selector's pods: list (paged) + watch (bookmarks), bounded by the
 * deadline; 410 on a continue token or a watch means list again. */
#include "pods.h"

#include <stdio.h>
#include <string.h>

#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"
#include "client.h"

#define WATCH_SECONDS 30
#define MAX_RELISTS 1000

pf_err pf_k8s_pod_get(struct pf_kube *k, const char *ns, const char *name,
                      cJSON **out, char *err)
{
    char path[PF_PATH_MAX];

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    return pf_kube_get(k, path, out, err);
}

pf_err pf_k8s_own_pod(struct pf_kube *k, const struct pf_kube_identity *id,
                      cJSON **own, char *err)
{
    pf_err rc;

    if (!id->pod[0] || !id->ns[0])
        return pf_fail(err, PF_ERR_USAGE, "k8s bootstrap needs the own pod "
                       "and namespace: set POD_NAME and POD_NAMESPACE (downward "
                       "API) or --pod-name and --namespace");
    if (!pf_k8s_name_ok(id->pod) || !pf_k8s_name_ok(id->ns))
        return pf_fail(err, PF_ERR_USAGE, "pod '%s' / namespace '%s' is not "
                       "a valid Kubernetes name", id->pod, id->ns);
    rc = pf_k8s_pod_get(k, id->ns, id->pod, own, err);
    if (rc != PF_OK)
        pf_err_prefix(err, "reading own pod");
    return rc;
}

static int json_int(const cJSON *obj, const char *path)
{
    const cJSON *v = pf_json_at(obj, path);
    return cJSON_IsNumber(v) && v->valuedouble >= 1 ? v->valueint : 0;
}

pf_err pf_k8s_job_size(struct pf_kube *k, const char *ns, const char *job,
                       int *per_job, char *err)
{
    char path[PF_PATH_MAX];
    cJSON *j = NULL;
    pf_err rc;

    *per_job = 0;
    if (!pf_k8s_name_ok(job))
        return pf_fail(err, PF_ERR_API, "owner Job name '%s' is not a "
                       "valid name", job);
    snprintf(path, sizeof(path), "/apis/batch/v1/namespaces/%s/jobs/%s",
             ns, job);
    rc = pf_kube_get(k, path, &j, err);
    if (rc != PF_OK)
        return rc;
    *per_job = json_int(j, "spec.completions");
    if (!*per_job)
        *per_job = json_int(j, "spec.parallelism");
    cJSON_Delete(j);
    return PF_OK;
}

/* ----------------------------------------------------------------- wait */

struct wait_ctx {
    struct pf_k8s_pod_wait *w;
    char rv[64];
    bool gone;                        /* 410: our resourceVersion expired */
    bool reauth;                      /* a watch just got 401 */
    bool watch_error;                 /* an ERROR event other than 410 */
    int events;                       /* events the current watch gave */
    bool done;
    char err[PF_ERRLEN];
    pf_err rc;
};

/* Parse a pod; the own pod's IP may come from the downward API (POD_IP)
 * before the API server shows it. */
static void parse_pod(const struct wait_ctx *c, const cJSON *obj,
                      struct pf_k8s_pod *p)
{
    pf_k8s_pod_parse(obj, p);
    if (!p->ip[0] && c->w->own_ip[0] && !strcmp(p->name, c->w->own))
        snprintf(p->ip, sizeof(p->ip), "%s", c->w->own_ip);
}

static void note_rv(struct wait_ctx *c, const cJSON *obj)
{
    const char *rv = pf_json_str(obj, "metadata.resourceVersion");
    if (rv)
        snprintf(c->rv, sizeof(c->rv), "%s", rv);
}

static void check_done(struct wait_ctx *c)
{
    pf_err rc = PF_OK;

    c->done = c->w->done(c->w->ctx, &c->w->set, &rc, c->err);
    if (rc != PF_OK) {
        c->rc = rc;
        c->done = true;
    }
}

static bool on_event(void *ctx, const cJSON *ev)
{
    struct wait_ctx *c = ctx;
    struct pf_k8s_pod_wait *w = c->w;
    const char *type = pf_json_str(ev, "type");
    const cJSON *obj = pf_json_at(ev, "object");
    struct pf_k8s_pod p;

    if (!ev) {
        if (w->idle)
            w->idle(w->ctx, &w->set);
        return true;
    }
    if (!type || !obj)
        return true;
    c->events++;
    if (!strcmp(type, "ERROR")) {
        const cJSON *code = pf_json_at(obj, "code");
        if (cJSON_IsNumber(code) && code->valueint == 410) {
            pf_debug("pod watch: resourceVersion %s expired (410), listing "
                     "again", c->rv);
            c->gone = true;
        } else {
            c->watch_error = true;
            pf_warn("pod watch: ERROR event: %s",
                    pf_json_str(obj, "message") ? pf_json_str(obj, "message")
                                                : "(no message)");
        }
        return false;
    }
    note_rv(c, obj);
    if (!strcmp(type, "BOOKMARK"))
        return true;
    parse_pod(c, obj, &p);
    if (!p.name[0])
        return true;
    if (!strcmp(type, "DELETED")) {
        pf_k8s_podset_remove(&w->set, p.name);
    } else {
        c->rc = pf_k8s_podset_put(&w->set, &p, c->err);
        if (c->rc != PF_OK)
            return false;
    }
    check_done(c);
    return !c->done;
}

/* List every page into set. A 410 on a continue token means the
 * snapshot expired: start over (bounded). */
static pf_err list_pages(struct pf_kube *k, const char *base,
                         struct wait_ctx *c, struct pf_k8s_podset *set,
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
                parse_pod(c, item, &p);
                rc = pf_k8s_podset_put(set, &p, err);
                if (rc != PF_OK) {
                    pf_kube_resp_free(&r);
                    return rc;
                }
            }
            note_rv(c, r.json);
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

/* A complete list replaces c->set; a list cut short (deadline, error)
 * leaves the last complete view, which the PeerTimeout message counts. */
static pf_err list_pods(struct pf_kube *k, const char *base,
                        struct wait_ctx *c, int64_t deadline, char *err)
{
    struct pf_k8s_podset fresh = { 0 };
    pf_err rc = list_pages(k, base, c, &fresh, deadline, err);

    if (rc != PF_OK) {
        pf_k8s_podset_free(&fresh);
        return rc;
    }
    pf_k8s_podset_free(&c->w->set);
    c->w->set = fresh;
    return PF_OK;
}

static pf_err wait_for(struct pf_kube *k, const char *ns,
                       const char *selector, struct wait_ctx *c,
                       int64_t deadline, char *err)
{
    char sel[4096], base[PF_PATH_MAX * 5], path[PF_PATH_MAX * 6];
    pf_err rc = pf_kube_query_escape(selector, sel, sizeof(sel), err);

    if (rc != PF_OK)
        return rc;
    snprintf(base, sizeof(base), "/api/v1/namespaces/%s/pods?labelSelector=%s",
             ns, sel);
    for (int relist = 0; relist < MAX_RELISTS; relist++) {
        rc = list_pods(k, base, c, deadline, err);
        if (rc != PF_OK)
            return rc;
        check_done(c);
        if (c->done)
            return c->rc == PF_OK ? PF_OK : pf_fail(err, c->rc, "%s", c->err);
        c->gone = false;
        while (!c->gone) {
            int64_t left = pf_ms_left(deadline);
            long status = 0;
            int64_t started;
            bool short_empty;
            int secs;

            if (left <= 0)
                return PF_ERR_TIMEOUT;
            /* One stream to the deadline when asked (a follower watching one
             * pod keeps its request count constant). */
            secs = left / 1000 < WATCH_SECONDS || c->w->one_stream
                       ? (int)(left / 1000) + 1 : WATCH_SECONDS;
            snprintf(path, sizeof(path), "%s&watch=1&resourceVersion=%s"
                     "&allowWatchBookmarks=true&timeoutSeconds=%d", base,
                     c->rv, secs);
            started = pf_now_ms();
            c->events = 0;
            rc = pf_kube_watch(k, path, secs, on_event, c, &status, err);
            /* Asked to stay open for >= 1 s: a stream that ends sooner with
             * nothing in it is a server or proxy that cannot watch. */
            short_empty = rc == PF_OK && status == 200 && c->events == 0 &&
                          pf_now_ms() - started < 1000;
            if (c->done)
                return c->rc == PF_OK ? PF_OK
                                      : pf_fail(err, c->rc, "%s", c->err);
            if (c->rc != PF_OK)
                return pf_fail(err, c->rc, "%s", c->err);
            if (status == 401 && !c->reauth) {
                /* The token rotated: pf_kube_watch re-read it; list again
                 * once with it before calling this fatal. */
                c->reauth = true;
                break;
            }
            /* A failed watch, one the server ended with an ERROR event or
             * one that ended at once and empty, is listed again after a
             * pause, so a server in trouble is not asked again at once,
             * over and over. */
            if (rc != PF_OK || (status != 200 && status != 410) ||
                c->watch_error || short_empty) {
                if (status == 401 || status == 403)
                    return pf_fail(err, PF_ERR_FORBIDDEN, "watching pods in "
                                   "%s: HTTP %ld (needs watch on pods)", ns,
                                   status);
                pf_debug("pod watch ended (%s, HTTP %ld); listing again",
                         rc != PF_OK ? err
                         : c->watch_error ? "ERROR event"
                         : short_empty ? "closed at once, empty" : "status",
                         status);
                c->watch_error = false;
                pf_sleep_ms(left < 1000 ? left : 1000);
                break;
            }
            if (status == 410) {
                pf_debug("pod watch: HTTP 410 for resourceVersion %s, "
                         "listing again", c->rv);
                c->gone = true;
            }
            else
                c->reauth = false;
        }
    }
    return pf_fail(err, PF_ERR_API, "pod watch restarted %d times",
                   MAX_RELISTS);
}

pf_err pf_k8s_pods_wait(struct pf_kube *k, struct pf_k8s_pod_wait *w,
                        char *err)
{
    struct wait_ctx c;

    memset(&c, 0, sizeof(c));
    c.w = w;
    return wait_for(k, w->ns, w->selector, &c, w->deadline, err);
}
