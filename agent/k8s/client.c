/* The raw client over libcurl: the token, one request with its retries,
 * a watch stream. */
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/json.h"
#include "../util/log.h"
#include "../util/sanitize.h"
#include "../util/version.h"
#include "backoff.h"

#define TOKEN_MAX (64 * 1024)
#define TOKEN_REREAD_MS 60000
#define BODY_MAX ((size_t)256 << 20)

struct pf_kube {
    struct pf_kube_opts o;
    CURL *curl;
    char *token;                      /* NUL-terminated, wiped on close */
    int64_t token_read_ms;
    uint64_t rng;
};

struct buf {
    char *p;
    size_t len, cap;
    bool overflow;
};


pf_err pf_kube_query_escape(const char *in, char *out, size_t len, char *err)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool plain = isalnum(*p) || *p == '-' || *p == '_' || *p == '.' ||
                     *p == '~';
        if (o + (plain ? 1 : 3) >= len)
            return pf_fail(err, PF_ERR_USAGE, "query value too long: %.64s",
                           in);
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (len == 0)
        return pf_fail(err, PF_ERR_USAGE, "no room for query value");
    out[o] = '\0';
    return PF_OK;
}

static void wipe(char *p, size_t n)
{
    volatile char *v = p;
    while (n--)
        *v++ = 0;
}

static pf_err load_token(struct pf_kube *k, char *err)
{
    char *data = NULL, why[PF_ERRLEN] = "";
    size_t len = 0;
    pf_err rc;

    if (!k->o.token_file[0])
        return PF_OK;
    /* why starts with the path: "<path>: not a regular file (a FIFO)" */
    rc = pf_read_file(k->o.token_file, TOKEN_MAX, &data, &len, why);
    if (rc != PF_OK)
        return pf_fail(err, rc, "cannot read token file %s", why);
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' ||
                       data[len - 1] == ' '))
        data[--len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)data[i] < 0x21 || (unsigned char)data[i] > 0x7e) {
            wipe(data, len);
            free(data);
            return pf_fail(err, PF_ERR_USAGE,
                           "token file %s holds a character not allowed in "
                           "an HTTP header", k->o.token_file);
        }
    }
    if (k->token) {
        wipe(k->token, strlen(k->token));
        free(k->token);
    }
    k->token = data;
    k->token_read_ms = pf_now_ms();
    return PF_OK;
}

void pf_kube_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

pf_err pf_kube_open(const struct pf_kube_opts *o, struct pf_kube **out,
                    char *err)
{
    struct pf_kube *k = calloc(1, sizeof(*k));
    pf_err rc;

    *out = NULL;
    if (!k)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    k->o = *o;
    if (k->o.max_attempts < 1)
        k->o.max_attempts = 1;
    k->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
             (uint64_t)pf_now_ms();
    rc = load_token(k, err);
    if (rc != PF_OK) {
        free(k);
        return rc;
    }
    k->curl = curl_easy_init();
    if (!k->curl) {
        pf_kube_close(k);
        return pf_fail(err, PF_ERR_SYS, "curl_easy_init failed");
    }
    *out = k;
    return PF_OK;
}

void pf_kube_close(struct pf_kube *k)
{
    if (!k)
        return;
    if (k->curl)
        curl_easy_cleanup(k->curl);
    if (k->token) {
        wipe(k->token, strlen(k->token));
        free(k->token);
    }
    free(k);
}

void pf_kube_resp_free(struct pf_kube_resp *r)
{
    if (r->json)
        cJSON_Delete(r->json);
    memset(r, 0, sizeof(*r));
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
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
static pf_err setup(struct pf_kube *k, const char *method, const char *path,
                    const char *ctype, const char *body, long timeout_ms,
                    struct curl_slist **hdrs, char *url, size_t url_len,
                    char *curl_err, char *err)
{
    CURL *c = k->curl;
    int n;

    if (k->token && pf_now_ms() - k->token_read_ms >= TOKEN_REREAD_MS) {
        pf_err rc = load_token(k, err);
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
        wipe(h, strlen(h));
        free(h);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    return PF_OK;
}

static void free_headers(struct curl_slist *h)
{
    for (struct curl_slist *p = h; p; p = p->next)
        wipe(p->data, strlen(p->data));
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

static bool tls_trust_failure(CURLcode cc)
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
        rc = setup(k, method, path, ctype, body, attempt_timeout(k), &hdrs,
                   url, sizeof(url), curl_err, err);
        if (rc != PF_OK) {
            free_headers(hdrs);
            return rc;
        }
        curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(k->curl, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(k->curl, CURLOPT_HEADERDATA, &retry_after);
        cc = curl_easy_perform(k->curl);
        free_headers(hdrs);
        curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, NULL);
        if (cc == CURLE_OK)
            curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &status);

        if (cc != CURLE_OK) {
            free(b.p);
            if (cc == CURLE_ABORTED_BY_CALLBACK)
                return pf_fail(err, PF_ERR_API, "%s %s: interrupted", method,
                               path);
            if (tls_trust_failure(cc))
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
                rc = load_token(k, err);
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

/* ---------------------------------------------------------------- watch */

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

    if (on_body(data, 1, len, &w->b) != len)
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
    rc = setup(k, "GET", path, NULL, NULL, timeout_ms, &hdrs, url,
               sizeof(url), curl_err, err);
    if (rc != PF_OK) {
        free_headers(hdrs);
        return rc;
    }
    curl_easy_setopt(k->curl, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(k->curl, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(k->curl, CURLOPT_XFERINFOFUNCTION, on_watch_tick);
    curl_easy_setopt(k->curl, CURLOPT_XFERINFODATA, &w);
    curl_easy_setopt(k->curl, CURLOPT_NOPROGRESS, 0L);
    cc = curl_easy_perform(k->curl);
    free_headers(hdrs);
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
        if (tls_trust_failure(cc))
            return pf_fail(err, PF_ERR_API,
                           "TLS verification of %s failed (CA file %s): %s",
                           k->o.server,
                           k->o.ca_file[0] ? k->o.ca_file : "system",
                           curl_err[0] ? curl_err : curl_easy_strerror(cc));
        return pf_fail(err, PF_ERR_API, "watch %s: %s", path,
                       curl_err[0] ? curl_err : curl_easy_strerror(cc));
    }
    if (*status == 401 && k->o.token_file[0])
        load_token(k, NULL);      /* next watch uses the rotated token */
    if (w.bad_line)
        pf_debug("watch %s: skipped a line that was not JSON", path);
    return PF_OK;
}
