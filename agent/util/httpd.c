/* Embedded HTTP(S) server: libmicrohttpd for HTTP, GnuTLS for the
 * certificate callback that lets a rotated key pair be served without a
 * restart (see httpd.h). */
#include "httpd.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "clock.h"
#include "log.h"
#include "tcp.h"

/* A retired pair may still be referenced by a handshake that picked it
 * just before a rotation; it is freed once it has been retired this long,
 * far past any handshake (connections time out much sooner). */
#define PF_HTTPD_RETIRE_MS (10 * 60 * 1000)
#define PF_HTTPD_RECHECK_MS 1000

struct pf_keypair {
    gnutls_pcert_st *pcerts;
    unsigned n_pcerts;
    gnutls_privkey_t key;
    int64_t retired_at;        /* pf_now_ms() when replaced; 0 = current */
    struct pf_keypair *next;   /* retired list */
};

struct pf_file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct pf_httpd {
    struct MHD_Daemon *d;
    int port;
    struct pf_httpd_opts o;
    char *cert_path, *key_path;
    pthread_mutex_t mu;        /* guards everything below */
    struct pf_keypair *cur;
    struct pf_keypair *retired;
    struct pf_file_id cert_id, key_id; /* of the last pair tried, loaded or not */
    int64_t next_check_ms;
    unsigned generation;
};

/* ---- key pairs --------------------------------------------------------- */

static void keypair_free(struct pf_keypair *kp)
{
    if (!kp)
        return;
    for (unsigned i = 0; i < kp->n_pcerts; i++)
        gnutls_pcert_deinit(&kp->pcerts[i]);
    free(kp->pcerts);
    if (kp->key)
        gnutls_privkey_deinit(kp->key);
    free(kp);
}

static pf_err read_whole(const char *path, gnutls_datum_t *out, char *msg)
{
    out->data = NULL;
    out->size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) /* a file the operator named: a configuration error */
        return pf_fail(msg, PF_ERR_CONFIG, "%s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return pf_fail(msg, PF_ERR_NOMEM, "%s: out of memory", path);
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (len < cap)
            break;
        if (cap >= (size_t)16 << 20) { /* no PEM pair is this big */
            free(buf);
            fclose(f);
            return pf_fail(msg, PF_ERR_CONFIG, "%s: larger than 16 MiB", path);
        }
        cap *= 2;
        unsigned char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int rerr = ferror(f);
    fclose(f);
    if (rerr) {
        free(buf);
        return pf_fail(msg, PF_ERR_IO, "%s: read error", path);
    }
    out->data = buf;
    out->size = (unsigned)len;
    return PF_OK;
}

static int file_id(const char *path, struct pf_file_id *id)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime = st.st_mtim;
    return 0;
}

static int file_id_eq(const struct pf_file_id *a, const struct pf_file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Key id of a public key, for checking that the key matches the cert. */
static int key_id(gnutls_pubkey_t pub, unsigned char *id, size_t *len)
{
    return gnutls_pubkey_get_key_id(pub, 0, id, len);
}

static pf_err keypair_load(const char *cert_path, const char *key_path,
                           struct pf_keypair **out, char *msg)
{
    *out = NULL;
    gnutls_datum_t cd, kd;
    pf_err e = read_whole(cert_path, &cd, msg);
    if (e)
        return e;
    e = read_whole(key_path, &kd, msg);
    if (e) {
        free(cd.data);
        return e;
    }
    struct pf_keypair *kp = calloc(1, sizeof *kp);
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    gnutls_pubkey_t pub = NULL;
    if (!kp) {
        e = pf_fail(msg, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    int rc = gnutls_x509_crt_list_import2(&crts, &n, &cd, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0 || n == 0) {
        e = pf_fail(msg, PF_ERR_CONFIG, "%s: no PEM certificate (%s)", cert_path,
                    rc < 0 ? gnutls_strerror(rc) : "empty");
        goto out;
    }
    kp->pcerts = calloc(n, sizeof *kp->pcerts);
    if (!kp->pcerts) {
        e = pf_fail(msg, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    unsigned got = n;
    rc = gnutls_pcert_import_x509_list(kp->pcerts, crts, &got, 0);
    if (rc < 0) {
        e = pf_fail(msg, PF_ERR_CONFIG, "%s: %s", cert_path, gnutls_strerror(rc));
        goto out;
    }
    kp->n_pcerts = got;
    if ((rc = gnutls_privkey_init(&kp->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(kp->key, &kd, GNUTLS_X509_FMT_PEM,
                                             NULL, 0)) < 0) {
        e = pf_fail(msg, PF_ERR_CONFIG, "%s: no PEM private key (%s)", key_path,
                    gnutls_strerror(rc));
        goto out;
    }
    /* A rotation writes two files: between the writes they do not match. */
    unsigned char a[64], b[64];
    size_t al = sizeof a, bl = sizeof b;
    if (gnutls_pubkey_init(&pub) < 0 ||
        gnutls_pubkey_import_privkey(pub, kp->key, 0, 0) < 0 ||
        key_id(pub, a, &al) < 0 || key_id(kp->pcerts[0].pubkey, b, &bl) < 0 ||
        al != bl || memcmp(a, b, al) != 0) {
        e = pf_fail(msg, PF_ERR_CONFIG, "%s does not match the certificate in %s",
                    key_path, cert_path);
        goto out;
    }
    *out = kp;
    kp = NULL;
    e = PF_OK;
out:
    if (pub)
        gnutls_pubkey_deinit(pub);
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    keypair_free(kp);
    gnutls_memset(kd.data, 0, kd.size); /* key material: do not leave it in the heap */
    free(kd.data);
    free(cd.data);
    return e;
}

/* Under h->mu: re-read the pair when either file changed, at most once per
 * PF_HTTPD_RECHECK_MS; free long-retired pairs. */
static void maybe_reload_locked(struct pf_httpd *h)
{
    int64_t now = pf_now_ms();
    if (now < h->next_check_ms)
        return;
    h->next_check_ms = now + PF_HTTPD_RECHECK_MS;

    struct pf_keypair **pp = &h->retired;
    while (*pp) {
        if (now - (*pp)->retired_at > PF_HTTPD_RETIRE_MS) {
            struct pf_keypair *dead = *pp;
            *pp = dead->next;
            keypair_free(dead);
        } else {
            pp = &(*pp)->next;
        }
    }

    struct pf_file_id c, k;
    if (file_id(h->cert_path, &c) != 0 || file_id(h->key_path, &k) != 0)
        return; /* mid-swap: keep serving the old pair */
    if (file_id_eq(&c, &h->cert_id) && file_id_eq(&k, &h->key_id))
        return; /* nothing new since the last try: no re-read, no repeated warning */
    h->cert_id = c;
    h->key_id = k;
    char msg[PF_ERRLEN];
    struct pf_keypair *kp;
    if (keypair_load(h->cert_path, h->key_path, &kp, msg) != PF_OK) {
        /* tried again when either file changes: the second may be on its way */
        pf_warn("https: keeping the current certificate: %s", msg);
        return;
    }
    h->cur->retired_at = now;
    h->cur->next = h->retired;
    h->retired = h->cur;
    h->cur = kp;
    h->generation++;
    pf_info("https: certificate reloaded from %s", h->cert_path);
}

static int cert_cb(gnutls_session_t session, const gnutls_datum_t *req_ca_dn,
                   int nreqs, const gnutls_pk_algorithm_t *algos, int nalgos,
                   gnutls_pcert_st **pcert, unsigned int *pcert_len,
                   gnutls_privkey_t *key)
{
    (void)req_ca_dn;
    (void)nreqs;
    (void)algos;
    (void)nalgos;
    /* libmicrohttpd stores its connection as the session's pointer; our
     * server is that connection's socket context (set in notify_conn). */
    struct MHD_Connection *c = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *ci =
        c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct pf_httpd *h = ci ? ci->socket_context : NULL;
    if (!h)
        return -1;
    pthread_mutex_lock(&h->mu);
    maybe_reload_locked(h);
    *pcert = h->cur->pcerts;
    *pcert_len = h->cur->n_pcerts;
    *key = h->cur->key;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static void notify_conn(void *cls, struct MHD_Connection *c, void **socket_ctx,
                        enum MHD_ConnectionNotificationCode code)
{
    (void)c;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        *socket_ctx = cls;
}

/* ---- requests ---------------------------------------------------------- */

struct pf_req_state {
    char *buf;
    size_t len, cap;
    size_t discarded;   /* bytes of an oversize body read and thrown away */
    int too_big;        /* answer 413 once the body is in */
};

/* An oversize body is read and dropped up to this many bytes, then answered
 * 413: a client still sending would otherwise see its connection reset
 * instead of the status. Beyond it the connection is closed. */
static size_t discard_limit(const struct pf_httpd *h)
{
    return h->o.max_body > SIZE_MAX / 8 ? SIZE_MAX : 8 * h->o.max_body;
}

static enum MHD_Result send_resp(struct MHD_Connection *c, int status,
                                 const char *ctype, char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *text)
{
    char *b = strdup(text);
    if (!b)
        return MHD_NO;
    return send_resp(c, status, "text/plain", b, strlen(b));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls)
{
    (void)version;
    struct pf_httpd *h = cls;
    struct pf_req_state *st = *con_cls;
    if (!st) {
        /* Headers only: refuse an announced oversize body before reading it. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        int too_big = 0;
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(cl, &end, 10);
            if (errno || end == cl || v > discard_limit(h))
                return send_text(c, 413, "request body too large\n");
            too_big = v > h->o.max_body;
        }
        st = calloc(1, sizeof *st);
        if (!st)
            return MHD_NO;
        st->too_big = too_big;
        *con_cls = st;
        return MHD_YES;
    }
    if (*upload_len) {
        if (!st->too_big && *upload_len > h->o.max_body - st->len) {
            st->too_big = 1; /* a chunked body grew past the bound */
            free(st->buf);
            st->buf = NULL;
            st->discarded = st->len;
            st->len = st->cap = 0;
        }
        if (st->too_big) {
            st->discarded += *upload_len;
            *upload_len = 0;
            if (st->discarded > discard_limit(h)) {
                pf_debug("http: %s %s: body past %zu bytes, connection closed", method,
                         url, discard_limit(h));
                return MHD_NO;
            }
            return MHD_YES;
        }
        if (st->len + *upload_len + 1 > st->cap) {
            size_t ncap = st->cap ? st->cap : 4096;
            while (ncap < st->len + *upload_len + 1)
                ncap *= 2;
            char *nb = realloc(st->buf, ncap);
            if (!nb)
                return MHD_NO;
            st->buf = nb;
            st->cap = ncap;
        }
        memcpy(st->buf + st->len, upload, *upload_len);
        st->len += *upload_len;
        st->buf[st->len] = '\0';
        *upload_len = 0;
        return MHD_YES;
    }
    if (st->too_big)
        return send_text(c, 413, "request body too large\n");
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_TYPE);
    struct pf_http_req req = {
        .method = method,
        .url = url,
        .content_type = ct ? ct : "",
        .body = st->buf ? st->buf : "",
        .body_len = st->len,
    };
    struct pf_http_resp resp = { .status = 200, .content_type = "text/plain" };
    h->o.handler(h->o.ctx, &req, &resp);
    if (!resp.body) {
        resp.body = strdup("");
        resp.body_len = 0;
        if (!resp.body)
            return MHD_NO;
    }
    return send_resp(c, resp.status, resp.content_type ? resp.content_type : "text/plain",
                     resp.body, resp.body_len);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    (void)cls;
    (void)c;
    (void)code;
    struct pf_req_state *st = *con_cls;
    if (st) {
        free(st->buf);
        free(st);
        *con_cls = NULL;
    }
}

/* libmicrohttpd's printf-style messages (clang checks the format). */
static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    pf_debug("http: %s", line); /* client errors (bad TLS, resets) are routine */
}

/* ---- lifecycle --------------------------------------------------------- */

static void httpd_free(struct pf_httpd *h)
{
    if (!h)
        return;
    keypair_free(h->cur);
    while (h->retired) {
        struct pf_keypair *n = h->retired->next;
        keypair_free(h->retired);
        h->retired = n;
    }
    free(h->cert_path);
    free(h->key_path);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

pf_err pf_httpd_start(const struct pf_httpd_opts *o, struct pf_httpd **out, char *msg)
{
    *out = NULL;
    if (!o->handler)
        return pf_fail(msg, PF_ERR_USAGE, "http server: no handler");
    if (o->port < 0 || o->port > 65535)
        return pf_fail(msg, PF_ERR_USAGE, "http server: port %d out of range 0-65535",
                       o->port);
    if (!o->tls_cert != !o->tls_key)
        return pf_fail(msg, PF_ERR_USAGE,
                       "https: a certificate needs a key and a key needs a certificate");
    struct pf_httpd *h = calloc(1, sizeof *h);
    if (!h)
        return pf_fail(msg, PF_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&h->mu, NULL);
    h->o = *o;
    if (!h->o.max_body)
        h->o.max_body = 64 * 1024;
    if (!h->o.threads)
        h->o.threads = 2;
    if (!h->o.conn_timeout_s)
        h->o.conn_timeout_s = 10;
    if (!h->o.conn_limit)
        h->o.conn_limit = 256;
    const int tls = o->tls_cert != NULL;
    pf_err e;
    if (tls) {
        h->cert_path = strdup(o->tls_cert);
        h->key_path = strdup(o->tls_key);
        if (!h->cert_path || !h->key_path) {
            e = pf_fail(msg, PF_ERR_NOMEM, "out of memory");
            goto fail;
        }
        /* a missing file is named by keypair_load below */
        (void)file_id(h->cert_path, &h->cert_id);
        (void)file_id(h->key_path, &h->key_id);
        if ((e = keypair_load(h->cert_path, h->key_path, &h->cur, msg)) != PF_OK) {
            pf_err_prefix(msg, "https");
            goto fail;
        }
        h->generation = 1;
        h->next_check_ms = pf_now_ms() + PF_HTTPD_RECHECK_MS;
    }

    int serr = 0, gai = 0;
    const char *addr = o->bind_addr ? o->bind_addr : "";
    int fd = pf_listen_tcp(addr, o->port, 128, &serr, &gai);
    if (fd < 0) {
        e = pf_fail(msg, PF_ERR_IO, "http server: cannot listen on %s%s%s:%d: %s",
                    *addr ? "[" : "", *addr ? addr : "*", *addr ? "]" : "", o->port,
                    serr ? strerror(serr) : gai_strerror(gai));
        goto fail;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        e = pf_fail(msg, PF_ERR_SYS, "http server: getsockname: %s", strerror(errno));
        close(fd);
        goto fail;
    }
    h->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);

    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (tls)
        flags |= MHD_USE_TLS;
    /* The logger first, so MHD's own start-up complaints reach it too.
     * The last two options are TLS only: without TLS the list ends before
     * them. */
    h->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
        MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_THREAD_POOL_SIZE, h->o.threads,
        MHD_OPTION_CONNECTION_TIMEOUT, h->o.conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, h->o.conn_limit,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        tls ? MHD_OPTION_NOTIFY_CONNECTION : MHD_OPTION_END, notify_conn, h,
        MHD_OPTION_HTTPS_CERT_CALLBACK, cert_cb,
        MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        e = pf_fail(msg, PF_ERR_SYS, "http server: libmicrohttpd did not start on port %d%s",
                    h->port, tls ? " (TLS)" : "");
        goto fail;
    }
    *out = h;
    return PF_OK;
fail:
    httpd_free(h);
    return e;
}

int pf_httpd_port(const struct pf_httpd *h)
{
    return h ? h->port : 0;
}

unsigned pf_httpd_cert_generation(struct pf_httpd *h)
{
    if (!h)
        return 0;
    pthread_mutex_lock(&h->mu);
    unsigned g = h->generation;
    pthread_mutex_unlock(&h->mu);
    return g;
}

void pf_httpd_stop(struct pf_httpd *h)
{
    if (!h)
        return;
    if (h->d)
        MHD_stop_daemon(h->d); /* joins its threads and closes the socket */
    httpd_free(h);
}
