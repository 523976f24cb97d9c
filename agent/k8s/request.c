/* One request of the raw client (client.h): set up, sent, retried on
 * transport errors, 429 and 5xx with capped backoff and Retry-After, its
 * answer read back. */
#include "client_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"
#include "../util/sanitize.h"
#include "../util/version.h"
#include "backoff.h"

size_t pf_kc_on_body(char *data, size_t size, size_t n, void *user)
{
    struct buf *b = user;
    size_t len = size * n;

    if (b->len + len + 1 > BODY_MAX) {
        b->overflow = true;
        return 0;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        char *p;
        while (cap < b->len + len + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    int64_t *retry_after = user;
    size_t len = size * n;
    char line[128];

    if (len > 12 && len < sizeof(line) && !strncasecmp(data, "Retry-After:", 12)) {
        memcpy(line, data + 12, len - 12);
        line[len - 12] = '\0';
        *retry_after = pf_kube_retry_after_ms(line);
    }
    return len;
}

static bool cancelled(const struct pf_kube *k)
{
    return k->o.cancel && atomic_load(k->o.cancel);
}

/* libcurl calls this about once a second, and more often while bytes
 * move: non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK). */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return cancelled(user) ? 1 : 0;
}

/* A backoff that a cancel ends at once. */
static void backoff_sleep(const struct pf_kube *k, int64_t ms)
{
    int64_t until = pf_deadline_in(ms);

    for (int i = 0; i < 100000 && !cancelled(k); i++) {
        int64_t left = pf_ms_left(until);
        if (left <= 0)
            break;
        pf_sleep_ms(left < 100 ? left : 100);
    }
}

/* Set the options every request shares. The Authorization header is built
 * here, handed to curl, and wiped by the caller. */
pf_err pf_kc_setup(struct pf_kube *k, const char *method, const char *path,
                   const char *ctype, const char *body, long timeout_ms,
                   struct curl_slist **hdrs, char *url, size_t url_len,
                   char *curl_err, char *err)
{
    CURL *c = k->curl;
    int n;

    if (k->token && pf_now_ms() - k->token_read_ms >= TOKEN_REREAD_MS) {
        pf_err rc = pf_kc_load_token(k, err);
        if (rc != PF_OK)
            return rc;
    }
    n = snprintf(url, url_len, "%s%s", k->o.server, path);
    if (n < 0 || (size_t)n >= url_len)
        return pf_fail(err, PF_ERR_USAGE, "request path too long: %.80s", path);

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_VERBOSE, 0L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (k->o.ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, k->o.ca_file);
    /* Both bounded by the time left (attempt_timeout): no attempt
     * outlives the deadline. */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     k->o.connect_timeout_ms < timeout_ms
                         ? k->o.connect_timeout_ms : timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (k->o.cancel) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, k);
    }
    curl_easy_setopt(c, CURLOPT_USERAGENT, "efa-preflight/" PF_VERSION);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    }

    *hdrs = curl_slist_append(NULL, "Accept: application/json");
    if (ctype) {
        char h[128];
        snprintf(h, sizeof(h), "Content-Type: %s", ctype);
        *hdrs = curl_slist_append(*hdrs, h);
    }
    if (k->token && k->token[0]) {
        size_t len = strlen(k->token) + 32;
        char *h = malloc(len);
        if (!h)
            return pf_fail(err, PF_ERR_NOMEM, "out of memory");
        snprintf(h, len, "Authorization: Bearer %s", k->token);
        *hdrs = curl_slist_append(*hdrs, h);
        pf_kc_wipe(h, strlen(h));
        free(h);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    return PF_OK;
}

void pf_kc_free_headers(struct curl_slist *h)
{
    for (struct curl_slist *p = h; p; p = p->next)
        pf_kc_wipe(p->data, strlen(p->data));
    curl_slist_free_all(h);
}

static bool transport_retryable(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

bool pf_kc_tls_trust_failure(CURLcode cc)
{
    return cc == CURLE_PEER_FAILED_VERIFICATION ||
           cc == CURLE_SSL_CACERT_BADFILE || cc == CURLE_SSL_ISSUER_ERROR ||
           cc == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

static void fill_message(struct pf_kube_resp *r, const char *body)
{
    const char *m;

    if (r->json) {
        m = pf_json_str(r->json, "message");
        if (m) {
            pf_sanitize(r->message, sizeof(r->message), m);
            return;
        }
    }
    /* The server's (or a proxy's) words go into errors, checks and
     * logs: sanitised, bounded. */
    if (body) {
        snprintf(r->message, sizeof(r->message), "%.200s", body);
        pf_sanitize_inplace(r->message, sizeof(r->message));
    }
}

static long attempt_timeout(const struct pf_kube *k)
{
    long t = k->o.request_timeout_ms;

    if (k->o.deadline) {
        int64_t left = pf_ms_left(k->o.deadline);
        if (left < t)
            t = left < 1 ? 1 : (long)left;
    }
    return t;
}

pf_err pf_kube_do(struct pf_kube *k, const char *method, const char *path,
                  const char *ctype, const char *body,
                  struct pf_kube_resp *resp, char *err)
{
    char url[PF_PATH_MAX + PF_NAME_MAX + 64];
    char curl_err[CURL_ERROR_SIZE];
    bool reread_done = false;
    pf_err rc = PF_OK;

    memset(resp, 0, sizeof(*resp));
    for (int attempt = 1; attempt <= k->o.max_attempts; attempt++) {
        struct curl_slist *hdrs = NULL;
        struct buf b = { 0 };
        int64_t retry_after = -1, wait;
        CURLcode cc;
        long status = 0;

        curl_err[0] = '\0';
        if (cancelled(k))
            return pf_fail(err, PF_ERR_API, "%s %s: interrupted", method,
                           path);
        rc = pf_kc_setup(k, method, path, ctype, body, attempt_timeout(k),
                         &hdrs, url, sizeof(url), curl_err, err);
        if (rc != PF_OK) {
            pf_kc_free_headers(hdrs);
            return rc;
        }
        curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, pf_kc_on_body);
        curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(k->curl, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(k->curl, CURLOPT_HEADERDATA, &retry_after);
        cc = curl_easy_perform(k->curl);
        pf_kc_free_headers(hdrs);
        curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, NULL);
        if (cc == CURLE_OK)
            curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);

        if (cc != CURLE_OK) {
            free(b.p);
            if (cc == CURLE_ABORTED_BY_CALLBACK)
                return pf_fail(err, PF_ERR_API, "%s %s: interrupted", method,
                               path);
            if (pf_kc_tls_trust_failure(cc))
                return pf_fail(err, PF_ERR_API,
                               "TLS verification of %s failed (CA file %s): "
                               "%s", k->o.server,
                               k->o.ca_file[0] ? k->o.ca_file : "system",
                               curl_err[0] ? curl_err : curl_easy_strerror(cc));
            rc = pf_fail(err, PF_ERR_API, "%s %s: %s (attempt %d of %d)",
                         method, path,
                         curl_err[0] ? curl_err : curl_easy_strerror(cc),
                         attempt, k->o.max_attempts);
            if (b.overflow || !transport_retryable(cc))
                return rc;
        } else {
            resp->status = status;
            resp->json = b.p ? cJSON_Parse(b.p) : NULL;
            fill_message(resp, b.p);
            free(b.p);
            if (status == 401 && !reread_done && k->o.token_file[0]) {
                /* A bound token may have rotated under us: re-read once. */
                reread_done = true;
                pf_kube_resp_free(resp);
                rc = pf_kc_load_token(k, err);
                if (rc != PF_OK)
                    return rc;
                attempt--;
                continue;
            }
            if (status != 429 && status < 500)
                return PF_OK;
            if (attempt == k->o.max_attempts)
                return PF_OK;     /* the caller reports the status */
            pf_debug("%s %s: HTTP %ld, retrying", method, path, status);
            rc = pf_fail(err, PF_ERR_API, "%s %s: HTTP %ld%s%s%s (attempt %d "
                         "of %d)", method, path, status,
                         resp->message[0] ? " (" : "", resp->message,
                         resp->message[0] ? ")" : "", attempt,
                         k->o.max_attempts);
            pf_kube_resp_free(resp);
        }
        if (attempt == k->o.max_attempts)
            break;
        wait = pf_k8s_backoff_ms(attempt, k->o.backoff_base_ms,
                                  k->o.backoff_cap_ms, &k->rng);
        if (retry_after >= 0)
            wait = retry_after > k->o.backoff_cap_ms * 4
                       ? k->o.backoff_cap_ms * 4 : retry_after;
        if (k->o.deadline && pf_ms_left(k->o.deadline) < wait) {
            pf_err_prefix(err, "deadline reached while retrying");
            return rc;
        }
        backoff_sleep(k, wait);
    }
    return rc;
}

pf_err pf_kube_status_err(const struct pf_kube_resp *r, const char *method,
                          const char *path, char *err)
{
    pf_err code = PF_ERR_API;

    if (r->status == 401)
        code = PF_ERR_UNAUTHORIZED;
    else if (r->status == 403)
        code = PF_ERR_FORBIDDEN;
    else if (r->status == 404)
        code = PF_ERR_NOTFOUND;
    else if (r->status == 400 || r->status == 422)
        code = PF_ERR_USAGE;     /* the request itself is wrong: retry won't help */
    return pf_fail(err, code, "%s %s: HTTP %ld%s%s%s", method, path,
                   r->status, r->message[0] ? " (" : "", r->message,
                   r->message[0] ? ")" : "");
}

pf_err pf_kube_get(struct pf_kube *k, const char *path, cJSON **out,
                   char *err)
{
    struct pf_kube_resp r;
    pf_err rc;

    *out = NULL;
    rc = pf_kube_do(k, "GET", path, NULL, NULL, &r, err);
    if (rc != PF_OK)
        return rc;
    if (r.status < 200 || r.status > 299) {
        rc = pf_kube_status_err(&r, "GET", path, err);
        pf_kube_resp_free(&r);
        return rc;
    }
    if (!r.json) {
        pf_kube_resp_free(&r);
        return pf_fail(err, PF_ERR_PROTOCOL, "GET %s: body is not JSON",
                       path);
    }
    *out = r.json;
    r.json = NULL;
    return PF_OK;
}
