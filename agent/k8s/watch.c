/* A watch stream of the raw client (client.h): one JSON event a line,
 * handed to the caller as it arrives, with a tick about once a second. */
#include "client_impl.h"

#include <stdlib.h>
#include <string.h>

#include "../util/clock.h"
#include "../util/log.h"

struct watch_ctx {
    struct buf b;
    pf_kube_event_fn fn;
    void *ctx;
    bool stopped;
    bool bad_line;
};

static size_t on_watch(char *data, size_t size, size_t n, void *user)
{
    struct watch_ctx *w = user;
    size_t len = size * n;
    char *start, *nl;

    if (pf_kc_on_body(data, 1, len, &w->b) != len)
        return 0;
    start = w->b.p;
    while ((nl = memchr(start, '\n', w->b.len - (size_t)(start - w->b.p)))) {
        *nl = '\0';
        if (nl > start) {
            cJSON *ev = cJSON_Parse(start);
            if (!ev) {
                w->bad_line = true;
            } else {
                bool more = w->fn(w->ctx, ev);
                cJSON_Delete(ev);
                if (!more) {
                    w->stopped = true;
                    return 0;
                }
            }
        }
        start = nl + 1;
    }
    w->b.len -= (size_t)(start - w->b.p);
    memmove(w->b.p, start, w->b.len);
    w->b.p[w->b.len] = '\0';
    return len;
}

/* curl calls this about once a second, data or not: the watcher's tick. */
static int on_watch_tick(void *user, curl_off_t dt, curl_off_t dn,
                         curl_off_t ut, curl_off_t un)
{
    struct watch_ctx *w = user;

    (void)dt, (void)dn, (void)ut, (void)un;
    if (w->stopped || w->fn(w->ctx, NULL))
        return 0;
    w->stopped = true;
    return 1;
}

pf_err pf_kube_watch(struct pf_kube *k, const char *path, int timeout_s,
                     pf_kube_event_fn fn, void *ctx, long *status, char *err)
{
    char url[PF_PATH_MAX + PF_NAME_MAX + 64];
    char curl_err[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    struct watch_ctx w = { .fn = fn, .ctx = ctx };
    long timeout_ms = ((long)timeout_s + 10) * 1000;
    CURLcode cc;
    pf_err rc;

    *status = 0;
    if (k->o.deadline) {
        int64_t left = pf_ms_left(k->o.deadline);
        if (left < timeout_ms)
            timeout_ms = left < 1 ? 1 : (long)left;
    }
    rc = pf_kc_setup(k, "GET", path, NULL, NULL, timeout_ms, &hdrs, url,
                     sizeof(url), curl_err, err);
    if (rc != PF_OK) {
        pf_kc_free_headers(hdrs);
        return rc;
    }
    curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, on_watch_tick);
    curl_easy_setopt(k->curl, CURLOPT_XFERINFODATA, &w);
    curl_easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
    cc = curl_easy_perform(k->curl);
    pf_kc_free_headers(hdrs);
    curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, status);
    free(w.b.p);
    if (w.stopped)
        return PF_OK;
    if (cc == CURLE_ABORTED_BY_CALLBACK)
        return pf_fail(err, PF_ERR_API, "watch %s: interrupted", path);
    if (cc == CURLE_OPERATION_TIMEDOUT && *status == 200)
        return PF_OK;             /* our own bound on a quiet stream */
    if (cc != CURLE_OK) {
        if (pf_kc_tls_trust_failure(cc))
            return pf_fail(err, PF_ERR_API,
                           "TLS verification of %s failed (CA file %s): %s",
                           k->o.server,
                           k->o.ca_file[0] ? k->o.ca_file : "system",
                           curl_err[0] ? curl_err : curl_easy_strerror(cc));
        return pf_fail(err, PF_ERR_API, "watch %s: %s", path,
                       curl_err[0] ? curl_err : curl_easy_strerror(cc));
    }
    if (*status == 401 && k->o.token_file[0])
        pf_kc_load_token(k, NULL);      /* next watch uses the rotated token */
    if (w.bad_line)
        pf_debug("watch %s: skipped a line that was not JSON", path);
    return PF_OK;
}
