#include "kubeapi.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "sanitize.h"
#include "version.h"

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

/* -------------------------------------------------------------- helpers */

pf_err pf_kube_server_url(const char *host, const char *port, char *out,
                          size_t len, char *err)
{
    int n;

    if (!host || !*host)
        return pf_fail(err, PF_ERR_USAGE, "API server host is empty");
    if (strchr(host, ':') && host[0] != '[')
        n = snprintf(out, len, "https://[%s]:%s", host,
                     port && *port ? port : "443");
    else
        n = snprintf(out, len, "https://%s:%s", host,
                     port && *port ? port : "443");
    if (n < 0 || (size_t)n >= len)
        return pf_fail(err, PF_ERR_USAGE, "API server address too long");
    return PF_OK;
}

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

bool pf_kube_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > PF_K8S_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
              c == '-' || c == '.'))
            return false;
        /* DNS-1123: every dot-separated part starts and ends with an
         * alphanumeric, as the API server checks ("a..b", "a-.b" fail). */
        if (c == '.' && i > 0 && i + 1 < n &&
            (s[i - 1] == '.' || s[i - 1] == '-' || s[i + 1] == '-'))
            return false;
    }
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

int64_t pf_kube_retry_after_ms(const char *value)
{
    char *end;
    long v;

    if (!value)
        return -1;
    while (*value == ' ' || *value == '\t')
        value++;
    if (!isdigit((unsigned char)*value))
        return -1;
    errno = 0;
    v = strtol(value, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end || v < 0)
        return -1;
    /* A longer wait than an hour is still a request to wait, not to
     * retry at the backoff pace: clamp it (the caller caps it again). */
    if (errno == ERANGE || v > 3600)
        v = 3600;
    return (int64_t)v * 1000;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

int64_t pf_kube_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms,
                           uint64_t *rng)
{
    int64_t d = base_ms;

    for (int i = 1; i < attempt && d < cap_ms; i++)
        d *= 2;
    if (d > cap_ms)
        d = cap_ms;
    if (d < 2)
        return d;
    /* Jitter into [d/2, d] so agents started together do not retry in
     * lockstep against a busy API server. */
    return d / 2 + (int64_t)(xorshift(rng) % (uint64_t)(d / 2 + 1));
}

static bool label_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

bool pf_label_value_ok(const char *v)
{
    return v && (*v == '\0' || label_name_ok(v, strlen(v)));
}

bool pf_label_key_ok(const char *k)
{
    const char *slash = k ? strchr(k, '/') : NULL;
    char prefix[254];
    size_t plen;

    if (!k)
        return false;
    if (!slash)
        return label_name_ok(k, strlen(k));
    plen = (size_t)(slash - k);
    if (plen == 0 || plen > PF_K8S_NAME_MAX)
        return false;
    memcpy(prefix, k, plen);
    prefix[plen] = '\0';
    return pf_kube_name_ok(prefix) && label_name_ok(slash + 1,
                                                    strlen(slash + 1));
}

const cJSON *pf_json_at(const cJSON *obj, const char *path)
{
    char key[128];
    const char *p = path;

    while (obj && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        obj = cJSON_GetObjectItemCaseSensitive(obj, key);
        p = dot ? dot + 1 : p + n;
    }
    return obj;
}

const char *pf_json_str(const cJSON *obj, const char *path)
{
    const cJSON *v = pf_json_at(obj, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* --------------------------------------------------------------- config */

static const char *pick(const char *cfg_value, const char *env_name)
{
    const char *e;

    if (cfg_value && *cfg_value)
        return cfg_value;
    e = getenv(env_name);
    return e ? e : "";
}

void pf_kube_identity(const struct pf_kube_given *g,
                      struct pf_kube_identity *id)
{
    memset(id, 0, sizeof(*id));
    snprintf(id->pod, sizeof(id->pod), "%s", pick(g->pod, "POD_NAME"));
    snprintf(id->ns, sizeof(id->ns), "%s", pick(g->ns, "POD_NAMESPACE"));
    snprintf(id->node, sizeof(id->node), "%s", pick(g->node, "NODE_NAME"));
    snprintf(id->pod_ip, sizeof(id->pod_ip), "%s", pick(g->pod_ip, "POD_IP"));
    if (!id->ns[0]) {
        char line[PF_NAME_MAX];
        if (pf_read_line(PF_KUBE_SA_DIR "/namespace", line, sizeof(line),
                         NULL) == PF_OK)
            snprintf(id->ns, sizeof(id->ns), "%s", line);
    }
    /* From the environment: names, but nothing has checked them yet. */
    pf_sanitize_inplace(id->pod, sizeof(id->pod));
    pf_sanitize_inplace(id->ns, sizeof(id->ns));
    pf_sanitize_inplace(id->node, sizeof(id->node));
    pf_sanitize_inplace(id->pod_ip, sizeof(id->pod_ip));
}

pf_err pf_kube_opts_init(struct pf_kube_opts *o, const struct pf_kube_given *g,
                         char *err)
{
    const char *api = g->api_server ? g->api_server : "";
    const char *token = g->token_file ? g->token_file : "";
    const char *ca = g->ca_file ? g->ca_file : "";

    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = 5000;
    o->request_timeout_ms = 20000;
    o->max_attempts = 6;
    o->backoff_base_ms = 250;
    o->backoff_cap_ms = 8000;

    if (api[0]) {
        size_t n = strlen(api);
        if (strncmp(api, "https://", 8) != 0)
            return pf_fail(err, PF_ERR_USAGE,
                           "--api-server '%s' must start with https:// "
                           "(TLS is always verified)", api);
        while (n > 8 && api[n - 1] == '/')
            n--;
        if (n >= sizeof(o->server))
            return pf_fail(err, PF_ERR_USAGE, "--api-server is too long");
        memcpy(o->server, api, n);
        o->server[n] = '\0';
    } else {
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        if (!host || !*host)
            return pf_fail(err, PF_ERR_USAGE,
                           "no API server: KUBERNETES_SERVICE_HOST is unset "
                           "(not in a pod?) and --api-server was not given");
        if (pf_kube_server_url(host, port, o->server, sizeof(o->server),
                               err) != PF_OK)
            return PF_ERR_USAGE;
    }

    if (token[0])
        snprintf(o->token_file, sizeof(o->token_file), "%s", token);
    else if (!api[0] || access(PF_KUBE_SA_DIR "/token", R_OK) == 0)
        snprintf(o->token_file, sizeof(o->token_file), "%s",
                 PF_KUBE_SA_DIR "/token");

    if (ca[0])
        snprintf(o->ca_file, sizeof(o->ca_file), "%s", ca);
    else if (!api[0] || access(PF_KUBE_SA_DIR "/ca.crt", R_OK) == 0)
        snprintf(o->ca_file, sizeof(o->ca_file), "%s",
                 PF_KUBE_SA_DIR "/ca.crt");

    if (o->ca_file[0] && access(o->ca_file, R_OK) != 0)
        return pf_fail(err, PF_ERR_USAGE, "CA file %s is not readable",
                       o->ca_file);
    if (g->timeout_s > 0)
        o->deadline = pf_deadline_in((int64_t)g->timeout_s * 1000);
    return PF_OK;
}

/* --------------------------------------------------------------- client */

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

cJSON *pf_kube_object(const char *api_version, const char *kind,
                      const char *name, const char *ns, const char *rv)
{
    cJSON *o = cJSON_CreateObject(), *md;

    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", kind);
    md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ns);
    if (rv)
        cJSON_AddStringToObject(md, "resourceVersion", rv);
    return o;
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
        wait = pf_kube_backoff_ms(attempt, k->o.backoff_base_ms,
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

static void configmap_path(const char *ns, const char *name, char *out,
                           size_t len)
{
    if (name)
        snprintf(out, len, "/api/v1/namespaces/%s/configmaps/%s", ns, name);
    else
        snprintf(out, len, "/api/v1/namespaces/%s/configmaps", ns);
}

pf_err pf_kube_configmap_read(struct pf_kube *k, const char *ns,
                              const char *name, cJSON **out, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    pf_err rc;

    *out = NULL;
    configmap_path(ns, name, path, sizeof(path));
    if ((rc = pf_kube_do(k, "GET", path, NULL, NULL, &r, err)) != PF_OK)
        return rc;
    if (r.status == 404) {
        pf_kube_resp_free(&r);
        return PF_OK;
    }
    if (r.status != 200 || !r.json) {
        rc = pf_kube_status_err(&r, "GET", path, err);
        pf_kube_resp_free(&r);
        return rc;
    }
    *out = r.json;
    r.json = NULL;
    pf_kube_resp_free(&r);
    return PF_OK;
}

pf_err pf_kube_configmap_write(struct pf_kube *k, const char *ns,
                               const char *name, const char *rv, cJSON *data,
                               const char *managed_by, bool *won, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    cJSON *o = pf_kube_object("v1", "ConfigMap", name, ns, rv);
    const char *method = rv ? "PUT" : "POST";
    char *body = NULL;
    pf_err rc;

    *won = false;
    if (o) {
        if (managed_by) {
            cJSON *labels = cJSON_AddObjectToObject(
                cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
            if (labels)
                cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by",
                                        managed_by);
        }
        cJSON_AddItemToObject(o, "data", data);
        body = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    } else {
        cJSON_Delete(data);
    }
    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    configmap_path(ns, rv ? name : NULL, path, sizeof(path));
    rc = pf_kube_do(k, method, path, "application/json", body, &r, err);
    cJSON_free(body);
    if (rc != PF_OK)
        return rc;
    if (r.status == 409 || (rv && r.status == 404)) {
        pf_kube_resp_free(&r);
        return PF_OK;
    }
    if (r.status < 200 || r.status > 299) {
        rc = pf_kube_status_err(&r, method, path, err);
        pf_kube_resp_free(&r);
        return rc;
    }
    pf_kube_resp_free(&r);
    *won = true;
    return PF_OK;
}
