/* Embedded HTTP(S) server: libmicrohttpd for HTTP, GnuTLS for the
 * certificate callback that lets a rotated key pair be served without a
 * restart, and a reaper thread that holds every connection to its
 * deadline and the server to its bounds (see httpd.h). */
#include "httpd.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
/* How often the reaper looks at deadlines: a connection past its deadline
 * lives at most this much longer. */
#define PF_HTTPD_REAP_MS 100
/* A connection is shut down to make room only once it has waited this long
 * for its request's headers, or for the whole request: a client that has
 * just connected is never the one cut. */
#define PF_HTTPD_EVICT_HEAD_MS 250
#define PF_HTTPD_EVICT_AGE_MS 1000
/* Body buffers this large are mapped, not taken from malloc's arenas: their
 * pages are resident only as the bytes arrive, and go back to the kernel
 * when the request ends (malloc would keep them in a thread's arena). */
#define PF_HTTPD_MAP_MIN (64 * 1024)

/* TLS 1.2 and 1.3 only, AEAD suites only (AES-GCM, ChaCha20-Poly1305) with
 * ECDHE, and renegotiation only the safe kind, which the server never
 * starts and libmicrohttpd answers by closing. */
const char pf_httpd_tls_priorities[] =
    "NONE:+VERS-TLS1.3:+VERS-TLS1.2:+AEAD:+ECDHE-RSA:+ECDHE-ECDSA:"
    "+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+SIGN-ALL:+GROUP-ALL:"
    "+COMP-NULL:+CTYPE-ALL:%SAFE_RENEGOTIATION";

/* One open connection, from libmicrohttpd's "started" notice to its
 * "closed" one (the socket is still open then: shut down under conn_mu,
 * it is the connection's own). */
struct pf_conn {
    struct pf_httpd *h;
    int fd;
    struct sockaddr_storage addr;
    int64_t since_ms;          /* the current request's clock: the accept, or
                                  the end of the previous answer */
    size_t buffered;           /* body bytes its request holds */
    bool cut;                  /* shut down by us, waiting for the close */
    struct pf_req_state *st;   /* its request, NULL between requests */
    struct pf_conn *prev, *next;
};

struct pf_req_state {
    struct pf_conn *conn;  /* NULL once the connection has gone */
    char *buf;
    size_t len, cap;       /* cap: Content-Length + 1 */
    bool mapped;           /* buf is an mmap of cap bytes */
    size_t discarded;      /* bytes of an oversize body read and thrown away */
    int too_big;           /* answer 413 once the body is in */
};

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

    /* connections and buffered bytes */
    pthread_mutex_t conn_mu;   /* guards everything below */
    pthread_cond_t reap_cv;    /* CLOCK_MONOTONIC; wakes the reaper to stop */
    pthread_t reaper;
    bool reaper_started, stopping;
    struct pf_conn *conns;
    unsigned nconns;
    size_t buffered;
    unsigned long timed_out, evicted;
    unsigned closed_since_trim;
    int64_t last_trim_ms;
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

/* Opened without blocking and read only when a regular file: a FIFO or a
 * device put in a certificate's place must not hang the handshake that
 * holds the key-pair lock. */
static pf_err read_whole(const char *path, gnutls_datum_t *out, char *msg)
{
    out->data = NULL;
    out->size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) /* a file the operator named: a configuration error */
        return pf_fail(msg, PF_ERR_CONFIG, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return pf_fail(msg, PF_ERR_CONFIG, "%s: not a regular file", path);
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            close(fd);
            return pf_fail(msg, PF_ERR_NOMEM, "%s: out of memory", path);
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(buf);
            close(fd);
            return pf_fail(msg, PF_ERR_IO, "%s: %s", path, strerror(err));
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len < cap)
            continue;
        if (cap >= (size_t)16 << 20) { /* no PEM pair is this big */
            free(buf);
            close(fd);
            return pf_fail(msg, PF_ERR_CONFIG, "%s: larger than 16 MiB", path);
        }
        cap *= 2;
        unsigned char *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    close(fd);
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
    /* libmicrohttpd stores its connection as the session's pointer; ours
     * (which names the server) is that connection's socket context, set in
     * notify_conn. */
    struct MHD_Connection *c = gnutls_session_get_ptr(session);
    const union MHD_ConnectionInfo *ci =
        c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
    struct pf_conn *pc = ci ? ci->socket_context : NULL;
    struct pf_httpd *h = pc ? pc->h : NULL;
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

/* ---- connections: deadlines and room ------------------------------------ */

static void cut_locked(struct pf_httpd *h, struct pf_conn *pc, bool timed_out)
{
    /* The socket is libmicrohttpd's; shutting it down wakes its poll with
     * an end of stream, and it closes the connection as a client's hang-up. */
    (void)shutdown(pc->fd, SHUT_RDWR);
    pc->cut = true;
    if (timed_out)
        h->timed_out++;
    else
        h->evicted++;
}

static bool same_client(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
    return true;
}

/* Under conn_mu: the connection (of client, when given) to cut to make
 * room: the oldest that has not sent its request's headers for
 * PF_HTTPD_EVICT_HEAD_MS (idle, trickling, a handshake that stalls), else
 * the oldest that has waited PF_HTTPD_EVICT_AGE_MS for its request; NULL
 * if none. A client that has just connected is never the one cut. */
static struct pf_conn *oldest_locked(struct pf_httpd *h, const struct pf_conn *self,
                                     const struct sockaddr_storage *client, int64_t now)
{
    struct pf_conn *headless = NULL, *any = NULL;
    for (struct pf_conn *pc = h->conns; pc; pc = pc->next) {
        int64_t age = now - pc->since_ms;
        if (pc == self || pc->cut || age < PF_HTTPD_EVICT_HEAD_MS)
            continue;
        if (client && !same_client(&pc->addr, client))
            continue;
        /* <=: the list is newest first, so of equal times the earliest wins */
        if (!pc->st && (!headless || pc->since_ms <= headless->since_ms))
            headless = pc;
        if (age >= PF_HTTPD_EVICT_AGE_MS && (!any || pc->since_ms <= any->since_ms))
            any = pc;
    }
    return headless ? headless : any;
}

/* Room is made below libmicrohttpd's own limits, which refuse a new
 * connection before we see it: ours are the ones asked for, its are half
 * (per client) and a quarter (in all) above. */
static unsigned hard_ip(unsigned per_ip)
{
    return per_ip + per_ip / 2;
}

static unsigned hard_total(unsigned limit)
{
    return limit + limit / 4;
}

/* Under conn_mu: past a limit, cut the connection waiting longest for its
 * request (the new one, self, never); how many connections of client (or
 * in all) are open and not cut is counted first. */
static void make_room_locked(struct pf_httpd *h, const struct pf_conn *self,
                             const struct sockaddr_storage *client, int64_t now)
{
    unsigned same = 0, live = 0;
    for (struct pf_conn *pc = h->conns; pc; pc = pc->next) {
        if (pc->cut)
            continue;
        live++;
        if (client && same_client(&pc->addr, client))
            same++;
    }
    struct pf_conn *victim = NULL;
    if (client && same > h->o.per_ip_limit)
        victim = oldest_locked(h, self, client, now);
    if (!victim && live > h->o.conn_limit)
        victim = oldest_locked(h, self, NULL, now);
    if (victim) {
        pf_debug("http: %u connections (%u from one client): the one waiting "
                 "%lld ms for its request is closed to make room", live, same,
                 (long long)(now - victim->since_ms));
        cut_locked(h, victim, false);
    }
}

static void notify_conn(void *cls, struct MHD_Connection *c, void **socket_ctx,
                        enum MHD_ConnectionNotificationCode code)
{
    struct pf_httpd *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct pf_conn *pc = calloc(1, sizeof *pc);
        if (!pc || !fi) { /* cannot be held to a deadline: not served */
            free(pc);
            *socket_ctx = NULL;
            if (fi)
                (void)shutdown(fi->connect_fd, SHUT_RDWR);
            return;
        }
        pc->h = h;
        pc->fd = fi->connect_fd;
        if (ai && ai->client_addr)
            memcpy(&pc->addr, ai->client_addr,
                   ai->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                          : sizeof(struct sockaddr_in));
        pthread_mutex_lock(&h->conn_mu);
        pc->since_ms = pf_now_ms();
        pc->next = h->conns;
        if (h->conns)
            h->conns->prev = pc;
        h->conns = pc;
        h->nconns++;
        make_room_locked(h, pc, &pc->addr, pc->since_ms);
        pthread_mutex_unlock(&h->conn_mu);
        *socket_ctx = pc;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct pf_conn *pc = *socket_ctx;
        if (!pc)
            return;
        pthread_mutex_lock(&h->conn_mu);
        if (pc->prev)
            pc->prev->next = pc->next;
        else
            h->conns = pc->next;
        if (pc->next)
            pc->next->prev = pc->prev;
        h->nconns--;
        h->closed_since_trim++;
        if (pc->st) /* its request ends after it: it must not reach back */
            pc->st->conn = NULL;
        pthread_mutex_unlock(&h->conn_mu);
        free(pc);
        *socket_ctx = NULL;
    }
}

/* The reaper: every PF_HTTPD_REAP_MS, connections past their deadline are
 * shut down; once many have closed, freed heap pages go back to the kernel
 * (the server's memory returns to its baseline after a flood). */
static void *reaper_main(void *arg)
{
    struct pf_httpd *h = arg;
    const int64_t budget = (int64_t)h->o.request_timeout_s * 1000;
    pthread_mutex_lock(&h->conn_mu);
    while (!h->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += PF_HTTPD_REAP_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->reap_cv, &h->conn_mu, &ts);
        if (h->stopping)
            break;
        int64_t now = pf_now_ms();
        unsigned live = 0;
        for (struct pf_conn *pc = h->conns; pc; pc = pc->next) {
            if (!pc->cut && now - pc->since_ms > budget) {
                pf_debug("http: a request past its %u s deadline: connection closed",
                         h->o.request_timeout_s);
                cut_locked(h, pc, true);
            }
            live += !pc->cut;
        }
        /* Over a limit with no new connection to notice it (libmicrohttpd
         * refused them at its own): make room here, a few per round. */
        for (int i = 0; i < 16 && live > h->o.conn_limit; i++, live--)
            make_room_locked(h, NULL, NULL, now);
        if (live > h->o.per_ip_limit)
            for (struct pf_conn *pc = h->conns; pc; pc = pc->next)
                if (!pc->cut)
                    make_room_locked(h, NULL, &pc->addr, now);
        if (h->closed_since_trim >= 32 && h->nconns < 8 &&
            now - h->last_trim_ms >= 1000) {
            h->closed_since_trim = 0;
            h->last_trim_ms = now;
            pthread_mutex_unlock(&h->conn_mu);
            malloc_trim(0);
            pthread_mutex_lock(&h->conn_mu);
        }
    }
    pthread_mutex_unlock(&h->conn_mu);
    return NULL;
}

/* ---- requests ---------------------------------------------------------- */

/* An oversize body is read and dropped up to this many bytes, then answered
 * 413: a client still sending would otherwise see its connection reset
 * instead of the status. Beyond it the body is refused unread. */
static size_t discard_limit(const struct pf_httpd *h)
{
    return h->o.max_body > SIZE_MAX / 8 ? SIZE_MAX : 8 * h->o.max_body;
}

/* Count n more body bytes for st. Past max_buffered, the connection holding
 * the most is shut down to make room (its bytes are freed as it closes);
 * past half as much again, this request is the one refused. */
static bool take_bytes(struct pf_httpd *h, struct pf_req_state *st, size_t n)
{
    bool ok = true;
    pthread_mutex_lock(&h->conn_mu);
    if (h->buffered + n > h->o.max_buffered) {
        struct pf_conn *victim = NULL;
        for (struct pf_conn *pc = h->conns; pc; pc = pc->next)
            if (pc != st->conn && !pc->cut && pc->buffered &&
                (!victim || pc->buffered > victim->buffered))
                victim = pc;
        if (victim) {
            pf_debug("http: %zu body bytes held: the connection holding %zu is "
                     "closed to make room", h->buffered, victim->buffered);
            cut_locked(h, victim, false);
        }
        if (h->buffered + n > h->o.max_buffered + h->o.max_buffered / 2)
            ok = false;
    }
    if (ok) {
        h->buffered += n;
        if (st->conn)
            st->conn->buffered += n;
    } else {
        h->evicted++;
    }
    pthread_mutex_unlock(&h->conn_mu);
    return ok;
}

static void req_free(struct pf_httpd *h, struct pf_req_state *st)
{
    pthread_mutex_lock(&h->conn_mu);
    h->buffered -= st->len;
    if (st->conn) {
        st->conn->buffered -= st->len;
        st->conn->st = NULL;
        /* the next request on this connection gets a whole deadline */
        st->conn->since_ms = pf_now_ms();
    }
    pthread_mutex_unlock(&h->conn_mu);
    if (st->mapped)
        munmap(st->buf, st->cap);
    else
        free(st->buf);
    free(st);
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

struct framing {
    unsigned lengths;      /* Content-Length headers */
    bool differ;           /* with different values */
    const char *first;
    const char *te;        /* Transfer-Encoding */
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value)
{
    (void)kind;
    struct framing *f = cls;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (f->lengths++ && strcmp(f->first, value ? value : ""))
            f->differ = true;
        else if (!f->first)
            f->first = value ? value : "";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->te = value ? value : "";
    }
    return MHD_YES;
}

/* The headers are in: refuse what cannot be framed plainly or is too big,
 * before a byte of the body is read. Returns 0 to go on, else a status. */
static int check_framing(struct pf_httpd *h, struct MHD_Connection *c,
                         struct pf_req_state *st, const char **why)
{
    struct framing f = { 0 };
    MHD_get_connection_values(c, MHD_HEADER_KIND, scan_header, &f);
    if (f.differ) {
        *why = "two different Content-Length headers\n";
        return 400;
    }
    if (f.te) {
        /* RFC 9112 6.1: chunked with a length is a smuggling attempt, and a
         * body of unknown length cannot be bounded before it is read. */
        *why = f.lengths ? "Transfer-Encoding and Content-Length together\n"
               : "send the body with a Content-Length (chunked bodies are not "
                 "accepted)\n";
        return f.lengths ? 400 : 411;
    }
    if (!f.lengths)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(f.first, &end, 10);
    if (errno || end == f.first || *end || v > discard_limit(h)) {
        *why = "request body too large\n";
        return 413;
    }
    if (v > h->o.max_body) {
        st->too_big = 1;
    } else if (v) {
        st->cap = (size_t)v + 1;
    }
    return 0;
}

static bool body_alloc(struct pf_req_state *st)
{
    if (st->cap >= PF_HTTPD_MAP_MIN) {
        void *p = mmap(NULL, st->cap, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return false;
        st->buf = p;
        st->mapped = true;
    } else {
        st->buf = malloc(st->cap);
    }
    return st->buf != NULL;
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
        st = calloc(1, sizeof *st);
        if (!st)
            return MHD_NO;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        pthread_mutex_lock(&h->conn_mu);
        st->conn = ci ? ci->socket_context : NULL;
        if (st->conn)
            st->conn->st = st;
        pthread_mutex_unlock(&h->conn_mu);
        *con_cls = st; /* freed in on_completed, whatever happens next */
        const char *why = NULL;
        int status = check_framing(h, c, st, &why);
        if (status) {
            pf_debug("http: %s %s: %d %s", method, url, status, why);
            return send_text(c, status, why);
        }
        return MHD_YES;
    }
    if (*upload_len) {
        size_t n = *upload_len;
        *upload_len = 0;
        if (st->too_big) {
            st->discarded += n;
            return MHD_YES;
        }
        /* Content-Length bounds what MHD hands over; a body longer than it
         * would be the next request's bytes, which MHD never passes here. */
        if (!st->cap || n > st->cap - 1 - st->len)
            return MHD_NO;
        if (!st->buf && !body_alloc(st))
            return MHD_NO;
        if (!take_bytes(h, st, n)) {
            pf_debug("http: %s %s: the server's body bytes are spent: connection "
                     "closed", method, url);
            return MHD_NO;
        }
        memcpy(st->buf + st->len, upload, n);
        st->len += n;
        st->buf[st->len] = '\0';
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
    (void)c;
    (void)code;
    struct pf_req_state *st = *con_cls;
    if (st) {
        req_free(cls, st);
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
    pthread_mutex_destroy(&h->conn_mu);
    pthread_cond_destroy(&h->reap_cv);
    free(h);
}

static void reaper_stop(struct pf_httpd *h)
{
    if (!h->reaper_started)
        return;
    pthread_mutex_lock(&h->conn_mu);
    h->stopping = true;
    pthread_cond_broadcast(&h->reap_cv);
    pthread_mutex_unlock(&h->conn_mu);
    pthread_join(h->reaper, NULL);
    h->reaper_started = false;
}

/* Every connection is a descriptor: raise the soft limit to what the
 * connection limit needs, or serve fewer connections than asked. */
static void fit_fd_limit(struct pf_httpd *h)
{
    struct rlimit rl;
    const rlim_t need = (rlim_t)hard_total(h->o.conn_limit) + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
    if (want > rl.rlim_cur) {
        rl.rlim_cur = want;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        (void)getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < need) {
        unsigned fit = rl.rlim_cur > 64 + 20 ? (unsigned)((rl.rlim_cur - 64) * 4 / 5) : 16;
        pf_warn("http server: %u connections asked, %u fit the open-file limit (%llu)",
                h->o.conn_limit, fit, (unsigned long long)rl.rlim_cur);
        h->o.conn_limit = fit;
        if (h->o.per_ip_limit > fit)
            h->o.per_ip_limit = fit;
    }
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
    pthread_condattr_t ca;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->conn_mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->reap_cv, &ca);
    pthread_condattr_destroy(&ca);
    h->o = *o;
    if (!h->o.max_body)
        h->o.max_body = 64 * 1024;
    if (!h->o.max_buffered) {
        h->o.max_buffered = (size_t)16 << 20;
        if (h->o.max_body <= SIZE_MAX / 2 && 2 * h->o.max_body > h->o.max_buffered)
            h->o.max_buffered = 2 * h->o.max_body;
    }
    if (!h->o.threads)
        h->o.threads = 2;
    if (!h->o.request_timeout_s)
        h->o.request_timeout_s = 10;
    if (!h->o.conn_limit)
        h->o.conn_limit = 1024;
    if (!h->o.per_ip_limit)
        h->o.per_ip_limit = 128;
    if (h->o.per_ip_limit > h->o.conn_limit)
        h->o.per_ip_limit = h->o.conn_limit;
    /* libmicrohttpd splits the limit between its threads */
    if (h->o.conn_limit < h->o.threads)
        h->o.conn_limit = h->o.threads;
    fit_fd_limit(h);
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

    if (pthread_create(&h->reaper, NULL, reaper_main, h) != 0) {
        close(fd);
        e = pf_fail(msg, PF_ERR_SYS, "http server: cannot start a thread");
        goto fail;
    }
    h->reaper_started = true;

    /* ITC: MHD_stop_daemon wakes its threads at once instead of waiting
     * for their poll to time out (seconds with many connections open). */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    if (tls)
        flags |= MHD_USE_TLS;
    /* The logger first, so MHD's own start-up complaints reach it too. */
    struct MHD_OptionItem opts[] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, h },
        { MHD_OPTION_LISTEN_SOCKET, fd, NULL },
        { MHD_OPTION_THREAD_POOL_SIZE, h->o.threads, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, h->o.request_timeout_s, NULL },
        { MHD_OPTION_CONNECTION_LIMIT, hard_total(h->o.conn_limit), NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, hard_ip(h->o.per_ip_limit), NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, 32 * 1024, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_conn, h },
        { tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0, (void *)cert_cb },
        { tls ? MHD_OPTION_HTTPS_PRIORITIES : MHD_OPTION_END, 0,
          (void *)pf_httpd_tls_priorities },
        { MHD_OPTION_END, 0, NULL },
    };
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
                            MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!h->d) {
        close(fd);
        e = pf_fail(msg, PF_ERR_SYS, "http server: libmicrohttpd did not start on port %d%s",
                    h->port, tls ? " (TLS)" : "");
        goto fail;
    }
    *out = h;
    return PF_OK;
fail:
    reaper_stop(h);
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

void pf_httpd_stats(struct pf_httpd *h, struct pf_httpd_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!h)
        return;
    pthread_mutex_lock(&h->conn_mu);
    out->conns = h->nconns;
    out->buffered = h->buffered;
    out->timed_out = h->timed_out;
    out->evicted = h->evicted;
    pthread_mutex_unlock(&h->conn_mu);
}

void pf_httpd_stop(struct pf_httpd *h)
{
    if (!h)
        return;
    reaper_stop(h);
    if (h->d)
        MHD_stop_daemon(h->d); /* joins its threads and closes the socket */
    httpd_free(h);
}
