/* The Lease lock (lease.h): client-go's tryAcquireOrRenew over pf_kube. */
#include "lease.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"
#include "client.h"
#include "pods.h"

#define API "/apis/coordination.k8s.io/v1/namespaces"

void pf_lease_name(const char *base, const char *a, const char *b, char *out,
                   size_t len)
{
    char raw[3 * PF_NAME_MAX + 8];
    size_t o = 0;
    bool dash = true;                 /* no leading '-' */

    snprintf(raw, sizeof(raw), "%s-%s-%s", base, a && *a ? a : "none",
             b && *b ? b : "none");
    for (const char *s = raw; *s && o + 1 < len && o < PF_K8S_NAME_MAX; s++) {
        char c = (char)tolower((unsigned char)*s);
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.';
        if (!ok) {
            if (dash)
                continue;
            c = '-';
        }
        dash = !ok;
        out[o++] = c;
    }
    while (o > 0 && (out[o - 1] == '-' || out[o - 1] == '.'))
        o--;
    out[o] = '\0';
    /* Truncated: keep it unique with a hash of the whole. */
    if (strlen(raw) > PF_K8S_NAME_MAX - 20 && len > 40) {
        size_t keep = len - 18 < PF_K8S_NAME_MAX - 17 ? len - 18
                                                      : PF_K8S_NAME_MAX - 17;
        if (o > keep)
            o = keep;
        snprintf(out + o, len - o, "-%016" PRIx64, pf_k8s_hash(raw, 0));
    }
}

void pf_lease_microtime(char out[40])
{
    struct timespec ts;
    struct tm tm;
    char base[24];

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 40, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

bool pf_lease_takeable(const char *holder, const char *me, int64_t observed_ms,
                       int duration_s, int64_t now_ms)
{
    if (!holder[0] || !strcmp(holder, me))
        return true;
    if (duration_s > PF_LEASE_HONOUR_MAX_S)
        duration_s = PF_LEASE_HONOUR_MAX_S;
    return observed_ms + (int64_t)duration_s * 1000 <= now_ms;
}

static void path_of(const struct pf_lease *l, bool one, char *out, size_t len)
{
    if (one)
        snprintf(out, len, API "/%s/leases/%s", l->ns, l->name);
    else
        snprintf(out, len, API "/%s/leases", l->ns);
}

/* Take in a Lease object the server returned. */
static void note(struct pf_lease *l, const cJSON *obj, int64_t now_ms)
{
    const char *rv = pf_json_str(obj, "metadata.resourceVersion");
    const char *h = pf_json_str(obj, "spec.holderIdentity");
    const char *at = pf_json_str(obj, "spec.acquireTime");
    const cJSON *d = pf_json_at(obj, "spec.leaseDurationSeconds");
    const cJSON *t = pf_json_at(obj, "spec.leaseTransitions");

    if (!rv || strcmp(rv, l->rv))
        l->observed_ms = now_ms;
    snprintf(l->rv, sizeof(l->rv), "%s", rv ? rv : "");
    snprintf(l->holder, sizeof(l->holder), "%s", h ? h : "");
    snprintf(l->acquire_time, sizeof(l->acquire_time), "%s", at ? at : "");
    l->holder_duration_s = cJSON_IsNumber(d) && d->valueint > 0 ? d->valueint
                                                                : l->duration_s;
    l->transitions = cJSON_IsNumber(t) && t->valueint >= 0 ? t->valueint : 0;
}

static char *record(const struct pf_lease *l, const char *holder, int duration,
                    const char *acquire, int transitions, bool with_rv)
{
    cJSON *o = pf_k8s_object("coordination.k8s.io/v1", "Lease", l->name,
                              l->ns, with_rv ? l->rv : NULL);
    cJSON *spec;
    char now[40];
    char *s;

    pf_lease_microtime(now);
    spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "holderIdentity", holder);
    cJSON_AddNumberToObject(spec, "leaseDurationSeconds", duration);
    cJSON_AddStringToObject(spec, "acquireTime",
                            acquire && *acquire ? acquire : now);
    cJSON_AddStringToObject(spec, "renewTime", now);
    cJSON_AddNumberToObject(spec, "leaseTransitions", transitions);
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static pf_err rbac_hint(pf_err rc, const struct pf_lease *l, const char *verb,
                        char *err)
{
    if (rc == PF_ERR_FORBIDDEN)
        pf_err_prefix(err, "the DaemonSet coordinator needs %s on "
                      "coordination.k8s.io leases in namespace %s", verb,
                      l->ns);
    return rc;
}

/* Write a record (POST to create, PUT to update). *won: the server took
 * it; false on 409 (a rival got there first). */
static pf_err put_record(struct pf_kube *k, struct pf_lease *l, bool create,
                    const char *holder, int duration, const char *acquire,
                    int transitions, int64_t now_ms, bool *won, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    char *body = record(l, holder, duration, acquire, transitions, !create);
    const char *method = create ? "POST" : "PUT";
    pf_err rc;

    *won = false;
    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    path_of(l, !create, path, sizeof(path));
    rc = pf_kube_do(k, method, path, "application/json", body, &r, err);
    cJSON_free(body);
    if (rc != PF_OK)
        return rc;
    if (r.status == 409 || (!create && r.status == 404)) {
        pf_kube_resp_free(&r);
        return PF_OK;
    }
    if (r.status < 200 || r.status > 299 || !r.json) {
        rc = pf_kube_status_err(&r, method, path, err);
        pf_kube_resp_free(&r);
        return rbac_hint(rc, l, create ? "create" : "update", err);
    }
    note(l, r.json, now_ms);
    pf_kube_resp_free(&r);
    *won = true;
    return PF_OK;
}

pf_err pf_lease_try(struct pf_kube *k, struct pf_lease *l, int64_t now_ms,
                    enum pf_lease_state *st, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    bool won = false, ours, from_gone;
    pf_err rc;

    *st = PF_LEASE_RETRY;
    /* Fast path: renew what we hold with the last resourceVersion. */
    if (l->held) {
        rc = put_record(k, l, false, l->identity, l->duration_s, l->acquire_time,
                   l->transitions, now_ms, &won, err);
        if (rc != PF_OK)
            return rc;
        if (won) {
            *st = PF_LEASE_HELD;
            return PF_OK;
        }
        l->held = false;
    }
    path_of(l, true, path, sizeof(path));
    rc = pf_kube_do(k, "GET", path, NULL, NULL, &r, err);
    if (rc != PF_OK)
        return rc;
    if (r.status == 404) {
        pf_kube_resp_free(&r);
        l->rv[0] = '\0';
        rc = put_record(k, l, true, l->identity, l->duration_s, NULL, 0, now_ms,
                   &won, err);
        if (rc == PF_OK && won) {
            l->held = true;
            *st = PF_LEASE_HELD;
        }
        return rc;
    }
    if (r.status != 200 || !r.json) {
        rc = pf_kube_status_err(&r, "GET", path, err);
        pf_kube_resp_free(&r);
        return rbac_hint(rc, l, "get", err);
    }
    note(l, r.json, now_ms);
    pf_kube_resp_free(&r);
    if ((!l->gone[0] || strcmp(l->gone, l->holder)) &&
        !pf_lease_takeable(l->holder, l->identity, l->observed_ms,
                           l->holder_duration_s, now_ms)) {
        *st = PF_LEASE_OTHER;
        return PF_OK;
    }
    /* Ours already (a renewal whose answer was lost), released, or
     * expired: write ourselves in with the resourceVersion just read. */
    ours = !strcmp(l->holder, l->identity);
    from_gone = !ours && l->gone[0] && !strcmp(l->gone, l->holder);
    rc = put_record(k, l, false, l->identity, l->duration_s,
               ours ? l->acquire_time : NULL,
               ours ? l->transitions : l->transitions + 1, now_ms, &won, err);
    if (rc == PF_OK && won) {
        if (from_gone)
            pf_warn("lease %s/%s: taken over from %s, whose pod is gone "
                    "(transition %d)", l->ns, l->name, l->gone,
                    l->transitions);
        else if (!ours)
            pf_info("lease %s/%s: acquired (transition %d)", l->ns, l->name,
                    l->transitions);
        l->held = true;
        *st = PF_LEASE_HELD;
    }
    return rc;
}

pf_err pf_lease_release(struct pf_kube *k, struct pf_lease *l, char *err)
{
    bool won = false;
    pf_err rc;

    if (!l->held)
        return PF_OK;
    l->held = false;
    rc = put_record(k, l, false, "", 1, NULL, l->transitions, pf_now_ms(),
               &won, err);
    if (rc == PF_OK && !won)
        return pf_fail(err, PF_ERR_API, "lease %s/%s changed before it was "
                       "released", l->ns, l->name);
    return rc;
}
