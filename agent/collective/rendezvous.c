#include "rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "../util/sha256.h"

#define MAX_PENDING 64        /* accepted connections that have not said HELLO */
#define HELLO_LIMIT 4096      /* largest frame taken before HELLO */
#define PENDING_MS 10000      /* ... and must within this */
#define CTRL_MS 2000          /* small control sends: challenge, reject, abort */
#define DIAL_MS 3000          /* one connect attempt */
#define BACKOFF_MAX_MS 1000
#define ATTRIBUTE_MS 500      /* abort: wait this long for a cause elsewhere */
/* Wire reason of an ABORT from a rank that gave up on its own. Not a
 * reason anyone reports (hence not CamelCase): receivers report PeerLost
 * (pf_rdv_reason_err). */
#define ABORT_OWN "gave-up"
#define OP_GATHER 1
#define OP_BCAST 2
#define DATA_HEAD 5           /* u8 op + u32 seq */
#define WHO_LEN 600

struct rdv {
    struct pf_boot boot;
    struct pf_conn *conns;            /* rank 0: by rank; others: [0] */
    bool *bye;                        /* rank 0: peer closed in order */
    struct pf_rdv_facts *facts;       /* world entries */
    uint32_t seq;                     /* collective calls so far */
    pf_err broken;                    /* sticky failure */
    char broken_msg[PF_ERRLEN];
    struct pf_coll *coll;
    uint8_t *scratch;
    size_t scratch_cap;
};

static const struct pf_boot_ops rdv_ops;

/* ------------------------------------------------------------- helpers */

static const char *reason_of(pf_err code)
{
    switch (code) {
    case PF_ERR_TIMEOUT: return "PeerTimeout";
    case PF_ERR_REJECTED: return "PeerRejected";
    case PF_ERR_LOST: return "PeerLost";
    case PF_ERR_PROTOCOL: return "PeerProtocolError";
    default: return "RendezvousFailed";
    }
}

pf_err pf_rdv_reason_err(const char *reason)
{
    if (!strcmp(reason, "PeerTimeout"))
        return PF_ERR_TIMEOUT;
    if (!strcmp(reason, "PeerRejected"))
        return PF_ERR_REJECTED;
    if (!strcmp(reason, "PeerProtocolError"))
        return PF_ERR_PROTOCOL;
    return PF_ERR_LOST;
}

/* The first failure a rank detects is the one its report carries. */
static pf_err record(struct pf_coll *coll, pf_err code, const char *msg)
{
    if (coll && !coll->reason[0]) {
        snprintf(coll->reason, sizeof(coll->reason), "%s", reason_of(code));
        snprintf(coll->errmsg, sizeof(coll->errmsg), "%s", msg);
        coll->err = code;
    }
    return code;
}

static const char *who(const struct rdv *r, int rank, char *buf)
{
    const struct pf_rdv_facts *f = &r->facts[rank];

    if (f->hostname[0] && f->addr[0] && strcmp(f->hostname, f->addr))
        snprintf(buf, WHO_LEN, "rank %d (%s, %s)", rank, f->hostname, f->addr);
    else if (f->hostname[0] || f->addr[0])
        snprintf(buf, WHO_LEN, "rank %d (%s)", rank,
                 f->addr[0] ? f->addr : f->hostname);
    else
        snprintf(buf, WHO_LEN, "rank %d", rank);
    return buf;
}

static void fill_nonce(uint8_t out[PF_RDV_NONCE])
{
    if (getrandom(out, PF_RDV_NONCE, GRND_NONBLOCK) == PF_RDV_NONCE)
        return;
    /* Entropy pool not ready (early boot): time and pid still differ per
     * connection, which is what freshness needs. */
    struct { double t; pid_t pid; const void *p; } seed = { pf_now_s(), getpid(), out };
    uint8_t d[PF_SHA256_LEN];
    pf_sha256(&seed, sizeof(seed), d);
    memcpy(out, d, PF_RDV_NONCE);
}

static void tune_socket(int fd)
{
    int one = 1, idle = 5, intvl = 2, cnt = 3;

    /* Keepalive finds a peer whose host vanished (no FIN) in ~11 s. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static void addr_string(const struct sockaddr *sa, socklen_t len, char *out,
                        size_t cap)
{
    char host[NI_MAXHOST];

    if (getnameinfo(sa, len, host, sizeof(host), NULL, 0, NI_NUMERICHOST)) {
        snprintf(out, cap, "?");
        return;
    }
    /* IPv4 peers of a dual-stack listener show up as ::ffff:a.b.c.d. */
    snprintf(out, cap, "%s", strncmp(host, "::ffff:", 7) ? host : host + 7);
}

static uint8_t *scratch(struct rdv *r, size_t len)
{
    if (len > r->scratch_cap) {
        uint8_t *p = realloc(r->scratch, len);
        if (!p)
            return NULL;
        r->scratch = p;
        r->scratch_cap = len;
    }
    return r->scratch;
}

static pf_err send_reason(struct pf_conn *c, uint8_t type, const char *reason,
                          const char *msg)
{
    uint8_t body[64 + PF_ERRLEN];
    struct pf_wbuf w = { body, 0, sizeof(body), false };

    pf_put_str(&w, reason);
    pf_put_str(&w, msg);
    if (w.overflow)
        return PF_ERR_USAGE;
    return pf_wire_send(c, type, body, w.len, pf_deadline_in(CTRL_MS), NULL);
}

static void read_reason(const struct pf_msg *m, char reason[48],
                        char msg[PF_ERRLEN])
{
    struct pf_rbuf rb = { m->body, m->len, 0, false };

    pf_get_str(&rb, reason, 48);
    pf_get_str(&rb, msg, PF_ERRLEN);
    if (rb.bad) {
        snprintf(reason, 48, "PeerLost");
        snprintf(msg, PF_ERRLEN, "(malformed abort message)");
    }
}

/* Rank 0: tell every connected peer but skip why the run stops. */
static void spread_abort(struct rdv *r, int skip, const char *reason,
                         const char *msg)
{
    if (r->boot.rank != 0)
        return;
    for (int i = 1; i < r->boot.world; i++)
        if (i != skip && r->conns[i].fd >= 0 && !r->bye[i])
            send_reason(&r->conns[i], PF_RDV_ABORT, reason, msg);
}

/* A failure after the join: sticky, recorded, and spread by rank 0 under
 * the wire reason (reason_of(code) unless relaying a peer's own). */
static pf_err stop(struct rdv *r, pf_err code, const char *wire, int culprit,
                   char *err)
{
    r->broken = code;
    record(r->coll, code, r->broken_msg);
    spread_abort(r, culprit, wire ? wire : reason_of(code), r->broken_msg);
    return pf_fail(err, code, "%s", r->broken_msg);
}

static pf_err broke(struct rdv *r, pf_err code, int culprit, char *err,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static pf_err broke(struct rdv *r, pf_err code, int culprit, char *err,
                    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->broken_msg, sizeof(r->broken_msg), fmt, ap);
    va_end(ap);
    return stop(r, code, NULL, culprit, err);
}

static pf_err from_abort(struct rdv *r, const struct pf_msg *m, int from,
                         char *err)
{
    char reason[48], msg[PF_ERRLEN], name[WHO_LEN];

    read_reason(m, reason, msg);
    if (r->boot.rank == 0)
        snprintf(r->broken_msg, sizeof(r->broken_msg), "%s gave up: %s",
                 who(r, from, name), msg);
    else   /* rank 0 relays: keep its words, they name the rank at fault */
        snprintf(r->broken_msg, sizeof(r->broken_msg), "%s", msg);
    return stop(r, pf_rdv_reason_err(reason), reason, from, err);
}

/* ------------------------------------------------------------- HELLO */

pf_err pf_rdv_hello_encode(const struct pf_hello *h, const uint8_t *secret,
                           size_t secret_len,
                           const uint8_t challenge[PF_RDV_NONCE],
                           struct pf_wbuf *w, char *err)
{
    pf_put_u32(w, h->magic);
    pf_put_u16(w, h->version);
    pf_put_u32(w, (uint32_t)h->rank);
    pf_put_u32(w, (uint32_t)h->world);
    pf_put_str(w, h->run_id);
    pf_put_str(w, h->facts.hostname);
    pf_put_str(w, h->facts.instance_type);
    pf_put_u32(w, (uint32_t)h->facts.efa_count);
    pf_put_u32(w, (uint32_t)h->facts.gpu_count);
    pf_put_bytes(w, h->nonce, PF_RDV_NONCE);
    pf_put_u8(w, secret ? 1 : 0);
    if (secret && !w->overflow) {
        struct pf_hmac hm;
        uint8_t mac[PF_RDV_MAC];
        pf_hmac_init(&hm, secret, secret_len);
        pf_hmac_update(&hm, w->p, w->len);
        pf_hmac_update(&hm, challenge, PF_RDV_NONCE);
        pf_hmac_final(&hm, mac);
        pf_put_bytes(w, mac, sizeof(mac));
    }
    if (w->overflow)
        return pf_fail(err, PF_ERR_USAGE, "HELLO does not fit in %zu bytes",
                       w->cap);
    return PF_OK;
}

pf_err pf_rdv_check_hello(const struct pf_rdv_view *v, const uint8_t *body,
                          size_t len, struct pf_hello *h, char *err)
{
    struct pf_rbuf rb = { body, len, 0, false };
    size_t signed_len;
    const char *host;

    memset(h, 0, sizeof(*h));
    h->magic = pf_get_u32(&rb);
    if (rb.bad || h->magic != PF_RDV_MAGIC)
        return pf_fail(err, PF_ERR_PROTOCOL, "not an efa-preflight HELLO "
                       "(magic 0x%08x)", h->magic);
    h->version = pf_get_u16(&rb);
    h->rank = (int)pf_get_u32(&rb);
    h->world = (int)pf_get_u32(&rb);
    pf_get_str(&rb, h->run_id, sizeof(h->run_id));
    pf_get_str(&rb, h->facts.hostname, sizeof(h->facts.hostname));
    pf_get_str(&rb, h->facts.instance_type, sizeof(h->facts.instance_type));
    h->facts.efa_count = (int)pf_get_u32(&rb);
    h->facts.gpu_count = (int)pf_get_u32(&rb);
    pf_get_bytes(&rb, h->nonce, PF_RDV_NONCE);
    h->has_mac = pf_get_u8(&rb) != 0;
    signed_len = rb.off;
    if (h->has_mac)
        pf_get_bytes(&rb, h->mac, PF_RDV_MAC);
    if (h->version != PF_RDV_VERSION)
        return pf_fail(err, PF_ERR_REJECTED, "a peer speaks rendezvous "
                       "protocol version %u, rank 0 speaks %u (mixed agent "
                       "versions)", h->version, PF_RDV_VERSION);
    if (rb.bad || rb.off != len)
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed HELLO (%zu bytes)",
                       len);
    host = h->facts.hostname[0] ? h->facts.hostname : "?";

    /* Authenticate before believing anything else the peer claims. */
    if (v->secret && !h->has_mac)
        return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s sent no HMAC but "
                       "rank 0 has a secret (--secret-file missing on that "
                       "rank?)", h->rank, host);
    if (!v->secret && h->has_mac)
        return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s signed its HELLO "
                       "but rank 0 has no secret (--secret-file missing on "
                       "rank 0?)", h->rank, host);
    if (v->secret) {
        struct pf_hmac hm;
        uint8_t mac[PF_RDV_MAC];
        pf_hmac_init(&hm, v->secret, v->secret_len);
        pf_hmac_update(&hm, body, signed_len);
        pf_hmac_update(&hm, v->challenge, PF_RDV_NONCE);
        pf_hmac_final(&hm, mac);
        if (!pf_digest_equal(mac, h->mac, PF_RDV_MAC))
            return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s: HELLO HMAC "
                           "does not match (its secret differs from rank 0's)",
                           h->rank, host);
    }
    if (strcmp(h->run_id, v->run_id))
        return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s belongs to run "
                       "'%s', rank 0 to run '%s'", h->rank, host, h->run_id,
                       v->run_id);
    if (h->world != v->world)
        return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s expects %d ranks, "
                       "rank 0 expects %d", h->rank, host, h->world, v->world);
    if (h->rank < 1 || h->rank >= v->world)
        return pf_fail(err, PF_ERR_REJECTED, "a peer on %s claims rank %d, "
                       "outside 1..%d", host, h->rank, v->world - 1);
    if (v->joined[h->rank])
        return pf_fail(err, PF_ERR_REJECTED, "rank %d is claimed twice, "
                       "again by %s", h->rank, host);
    return PF_OK;
}

/* ------------------------------------------------------------- rank 0 */

struct pending {
    struct pf_conn c;
    uint8_t nonce[PF_RDV_NONCE];
    int64_t since;
    char addr[64];
};

static pf_err listen_on(const char *bind_addr, int port, int *out, char *err)
{
    struct addrinfo hints = { 0 }, *res = NULL, *ai;
    char portstr[16], where[PF_NAME_MAX + 16];
    int rc, fd = -1, saved = 0;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    snprintf(where, sizeof(where), "%s:%d", bind_addr[0] ? bind_addr : "*",
             port);
    rc = getaddrinfo(bind_addr[0] ? bind_addr : NULL, portstr, &hints, &res);
    if (rc)
        return pf_fail(err, PF_ERR_USAGE, "rendezvous address %s: %s", where,
                       gai_strerror(rc));
    /* Prefer a dual-stack IPv6 socket when binding to any address. */
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (ai = res; ai && fd < 0; ai = ai->ai_next) {
            int one = 1, zero = 0;
            if (!bind_addr[0] && (pass == 0) != (ai->ai_family == AF_INET6))
                continue;
            if (bind_addr[0] && pass == 1)
                break;
            fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                saved = errno;
                continue;
            }
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (ai->ai_family == AF_INET6)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
            if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
                saved = errno;
                close(fd);
                fd = -1;
            }
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return pf_fail(err, PF_ERR_IO, "rank 0 cannot listen on %s: %s%s",
                       where, strerror(saved),
                       saved == EADDRINUSE ? " (another run on this port?)"
                                           : "");
    *out = fd;
    return PF_OK;
}

static void drop_pending(struct pending *p, const char *why)
{
    if (why)
        pf_warn("rendezvous: ignoring connection from %s: %s", p->addr, why);
    pf_conn_close(&p->c);
}

static void accept_new(int lfd, struct pending *pend, int64_t now)
{
    for (int n = 0; n < MAX_PENDING; n++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        uint8_t body[8 + PF_RDV_NONCE];
        struct pf_wbuf w = { body, 0, sizeof(body), false };
        struct pending *slot = NULL;
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        for (int i = 0; i < MAX_PENDING; i++) {
            if (pend[i].c.fd < 0) {
                slot = &pend[i];
                break;
            }
            if (!slot || pend[i].since < slot->since)
                slot = &pend[i];
        }
        if (slot->c.fd >= 0)
            drop_pending(slot, "too many connections waiting for HELLO");
        pf_conn_init(&slot->c, fd);
        /* Nobody has proven membership yet: a HELLO is small, so a stranger
         * cannot make rank 0 buffer megabytes per connection. */
        slot->c.limit = HELLO_LIMIT;
        slot->since = now;
        addr_string((struct sockaddr *)&ss, sl, slot->addr, sizeof(slot->addr));
        tune_socket(fd);
        fill_nonce(slot->nonce);
        pf_put_u32(&w, PF_RDV_MAGIC);
        pf_put_u16(&w, PF_RDV_VERSION);
        pf_put_bytes(&w, slot->nonce, PF_RDV_NONCE);
        if (pf_wire_send(&slot->c, PF_RDV_CHALLENGE, body, w.len,
                         pf_deadline_in(CTRL_MS), NULL) != PF_OK)
            drop_pending(slot, NULL);
        pf_debug("rendezvous: connection from %s", slot->addr);
    }
}

static void missing_list(const struct rdv *r, const bool *joined, char *out,
                         size_t cap)
{
    char name[WHO_LEN];
    size_t len = 0;
    int shown = 0, missing = 0;

    out[0] = '\0';
    for (int i = 1; i < r->boot.world; i++) {
        if (joined[i])
            continue;
        missing++;
        if (shown < 8 && len + 1 < cap) {
            int n = snprintf(out + len, cap - len, "%s%s", shown ? ", " : "",
                             who(r, i, name));
            if (n > 0)
                len += (size_t)n < cap - len ? (size_t)n : cap - len - 1;
            shown++;
        }
    }
    if (missing > shown && len + 1 < cap)
        snprintf(out + len, cap - len, " and %d more", missing - shown);
}

static pf_err send_welcomes(struct rdv *r, const uint8_t *secret,
                            size_t secret_len,
                            const uint8_t (*nonces)[PF_RDV_NONCE],
                            int64_t deadline, char *err)
{
    int world = r->boot.world;
    size_t cap = 16 + (size_t)world * (3 * PF_NAME_MAX + 16) + 1 + PF_RDV_MAC;
    uint8_t *body = malloc(cap);
    struct pf_wbuf w = { body, 0, cap, false };
    char name[WHO_LEN], msg[PF_ERRLEN];
    size_t table_len;

    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the peer table");
    pf_put_u32(&w, (uint32_t)world);
    for (int i = 0; i < world; i++) {
        pf_put_str(&w, r->facts[i].addr);
        pf_put_str(&w, r->facts[i].hostname);
        pf_put_str(&w, r->facts[i].instance_type);
        pf_put_u32(&w, (uint32_t)r->facts[i].efa_count);
        pf_put_u32(&w, (uint32_t)r->facts[i].gpu_count);
    }
    pf_put_u8(&w, secret ? 1 : 0);
    table_len = w.len;
    for (int i = 1; i < world; i++) {
        pf_err rc;
        w.len = table_len;
        if (secret) {
            /* Signed per peer: HMAC(secret, table || that peer's nonce). */
            struct pf_hmac hm;
            uint8_t mac[PF_RDV_MAC];
            pf_hmac_init(&hm, secret, secret_len);
            pf_hmac_update(&hm, body, table_len);
            pf_hmac_update(&hm, nonces[i], PF_RDV_NONCE);
            pf_hmac_final(&hm, mac);
            pf_put_bytes(&w, mac, sizeof(mac));
        }
        if (w.overflow) {
            free(body);
            return pf_fail(err, PF_ERR_USAGE, "peer table does not fit in %zu "
                           "bytes", cap);
        }
        rc = pf_wire_send(&r->conns[i], PF_RDV_WELCOME, body, w.len, deadline,
                          msg);
        if (rc != PF_OK) {
            free(body);
            return broke(r, rc == PF_ERR_TIMEOUT ? PF_ERR_TIMEOUT : PF_ERR_LOST,
                         i, err, "sending the peer table to %s failed: %s",
                         who(r, i, name), msg);
        }
    }
    free(body);
    return PF_OK;
}

static pf_err join_fail(struct pf_coll *coll, pf_err code, char *err,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static pf_err join_fail(struct pf_coll *coll, pf_err code, char *err,
                        const char *fmt, ...)
{
    char msg[PF_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    record(coll, code, msg);
    return pf_fail(err, code, "%s", msg);
}

/* Take a HELLO from a pending connection; returns non-OK only when the whole
 * rendezvous must stop (a rejected peer). */
static pf_err take_hello(struct rdv *r, const struct pf_rdv_cfg *cfg,
                         struct pending *p, bool *joined, int *njoined,
                         uint8_t (*nonces)[PF_RDV_NONCE], int64_t now,
                         char *err)
{
    struct pf_rdv_view v = { r->boot.world, cfg->run_id, cfg->secret,
                             cfg->secret_len, p->nonce, joined };
    char msg[PF_ERRLEN], full[PF_ERRLEN], name[WHO_LEN];
    struct pf_hello h;
    struct pf_msg m;
    pf_err prc = pf_wire_pump(&p->c, msg);
    int t = pf_wire_take(&p->c, &m, msg);

    if (t == 0) {
        if (prc != PF_OK)
            drop_pending(p, NULL);    /* closed before saying anything */
        else if (now - p->since > PENDING_MS)
            drop_pending(p, "no HELLO within 10 s");
        return PF_OK;
    }
    if (t < 0) {
        drop_pending(p, msg);
        return PF_OK;
    }
    if (m.type != PF_RDV_HELLO) {
        drop_pending(p, "its first message is not a HELLO");
        return PF_OK;
    }
    switch (pf_rdv_check_hello(&v, m.body, m.len, &h, msg)) {
    case PF_OK:
        break;
    case PF_ERR_REJECTED:
        snprintf(full, sizeof(full), "rank 0 rejected a peer from %s: %s",
                 p->addr, msg);
        send_reason(&p->c, PF_RDV_REJECT, "PeerRejected", full);
        pf_conn_close(&p->c);
        return broke(r, PF_ERR_REJECTED, -1, err, "%s", full);
    default:
        drop_pending(p, msg);
        return PF_OK;
    }
    r->conns[h.rank] = p->c;
    r->conns[h.rank].limit = 0;
    pf_conn_init(&p->c, -1);
    r->facts[h.rank] = h.facts;
    snprintf(r->facts[h.rank].addr, sizeof(r->facts[h.rank].addr), "%s",
             p->addr);
    memcpy(nonces[h.rank], h.nonce, PF_RDV_NONCE);
    joined[h.rank] = true;
    (*njoined)++;
    pf_debug("rendezvous: %s joined (%d of %d)", who(r, h.rank, name),
             *njoined, r->boot.world);
    return PF_OK;
}

static pf_err root_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
{
    int world = r->boot.world, lfd = -1, njoined = 1;
    struct pending *pend = calloc(MAX_PENDING, sizeof(*pend));
    bool *joined = calloc((size_t)world, sizeof(bool));
    uint8_t (*nonces)[PF_RDV_NONCE] = calloc((size_t)world, PF_RDV_NONCE);
    struct pollfd *pfds = calloc((size_t)(1 + MAX_PENDING + world),
                                 sizeof(*pfds));
    int64_t start = pf_now_ms();
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc = PF_OK;

    if (!pend || !joined || !nonces || !pfds) {
        rc = pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
        goto out;
    }
    for (int i = 0; i < MAX_PENDING; i++)
        pf_conn_init(&pend[i].c, -1);
    joined[0] = true;
    rc = listen_on(cfg->bind_addr, cfg->root_port, &lfd, msg);
    if (rc != PF_OK) {
        rc = join_fail(r->coll, rc, err, "%s", msg);
        goto out;
    }
    pf_info("rendezvous: rank 0 listening on port %d for %d ranks (run %s)",
            cfg->root_port, world, cfg->run_id);

    while (njoined < world) {
        int64_t now = pf_now_ms(), left = cfg->deadline - now;
        int n = 0;

        if (left <= 0) {
            char missing[PF_ERRLEN - 160];
            missing_list(r, joined, missing, sizeof(missing));
            rc = broke(r, PF_ERR_TIMEOUT, -1, err, "%s never joined the "
                       "rendezvous on port %d within %.0f s (%d of %d ranks "
                       "joined)", missing, cfg->root_port,
                       (double)(now - start) / 1000.0, njoined, world);
            goto out;
        }
        pfds[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
        for (int i = 0; i < MAX_PENDING; i++)
            if (pend[i].c.fd >= 0)
                pfds[n++] = (struct pollfd){ .fd = pend[i].c.fd,
                                             .events = POLLIN };
        for (int i = 1; i < world; i++)
            if (joined[i])
                pfds[n++] = (struct pollfd){ .fd = r->conns[i].fd,
                                             .events = POLLIN };
        if (poll(pfds, (nfds_t)n, left > 500 ? 500 : (int)left) < 0 &&
            errno != EINTR) {
            rc = join_fail(r->coll, PF_ERR_SYS, err, "rendezvous poll: %s",
                           strerror(errno));
            goto out;
        }
        now = pf_now_ms();
        if (pfds[0].revents)
            accept_new(lfd, pend, now);
        for (int i = 0; i < MAX_PENDING; i++) {
            if (pend[i].c.fd < 0)
                continue;
            rc = take_hello(r, cfg, &pend[i], joined, &njoined, nonces, now,
                            err);
            if (rc != PF_OK)
                goto out;
        }
        /* A joined rank that gives up before the table (its own deadline)
         * counts as missing again. */
        for (int i = 1; i < world; i++) {
            struct pf_msg m;
            if (!joined[i])
                continue;
            if (pf_wire_pump(&r->conns[i], msg) != PF_OK ||
                pf_wire_has(&r->conns[i], PF_RDV_ABORT, &m)) {
                pf_warn("rendezvous: %s left before every rank had joined",
                        who(r, i, name));
                pf_conn_close(&r->conns[i]);
                joined[i] = false;
                njoined--;
            }
        }
    }
    rc = send_welcomes(r, cfg->secret, cfg->secret_len, nonces,
                       cfg->deadline + CTRL_MS, err);
    if (rc == PF_OK)
        pf_info("rendezvous: %d ranks joined in %.2f s", world,
                (double)(pf_now_ms() - start) / 1000.0);
out:
    if (lfd >= 0)
        close(lfd);
    if (pend)
        for (int i = 0; i < MAX_PENDING; i++)
            pf_conn_close(&pend[i].c);
    free(pend);
    free(joined);
    free(nonces);
    free(pfds);
    return rc;
}

/* ------------------------------------------------------------- peers */

static pf_err dial(const struct pf_rdv_cfg *cfg, int64_t deadline, int *out,
                   char *msg)
{
    struct addrinfo hints = { 0 }, *res = NULL, *ai;
    char portstr[16];
    int rc, fd = -1;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", cfg->root_port);
    rc = getaddrinfo(cfg->root_host, portstr, &hints, &res);
    if (rc)
        return pf_fail(msg, PF_ERR_IO, "%s", gai_strerror(rc));
    snprintf(msg, PF_ERRLEN, "no usable address");
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        struct pollfd p;
        int soerr = 0, ms;
        socklen_t sl = sizeof(soerr);

        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(msg, PF_ERRLEN, "socket: %s", strerror(errno));
            continue;
        }
        if (cfg->bind_addr[0]) {
            struct addrinfo bh = { 0 }, *b = NULL;
            bh.ai_family = ai->ai_family;
            bh.ai_socktype = SOCK_STREAM;
            bh.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
            if (getaddrinfo(cfg->bind_addr, NULL, &bh, &b) == 0) {
                if (bind(fd, b->ai_addr, b->ai_addrlen))
                    snprintf(msg, PF_ERRLEN, "bind %s: %s", cfg->bind_addr,
                             strerror(errno));
                freeaddrinfo(b);
            }
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno != EINPROGRESS) {
            snprintf(msg, PF_ERRLEN, "%s", strerror(errno));
            close(fd);
            fd = -1;
            continue;
        }
        ms = (int)(pf_ms_left(deadline) < DIAL_MS ? pf_ms_left(deadline) : DIAL_MS);
        p = (struct pollfd){ .fd = fd, .events = POLLOUT };
        if (ms <= 0 || poll(&p, 1, ms) <= 0) {
            snprintf(msg, PF_ERRLEN, "connect timed out");
            soerr = -1;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
            snprintf(msg, PF_ERRLEN, "%s", strerror(soerr ? soerr : errno));
            soerr = -1;
        }
        if (soerr) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return PF_ERR_IO;
    *out = fd;
    return PF_OK;
}

static pf_err read_table(struct rdv *r, const struct pf_rdv_cfg *cfg,
                         const struct pf_msg *m, const uint8_t *nonce,
                         const char *root, char *err)
{
    struct pf_rbuf rb = { m->body, m->len, 0, false };
    struct pf_rdv_facts *f = calloc((size_t)cfg->world, sizeof(*f));
    uint8_t mac[PF_RDV_MAC], want[PF_RDV_MAC];
    size_t table_len;
    bool has_mac;
    int world;

    if (!f)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the peer table");
    world = (int)pf_get_u32(&rb);
    for (int i = 0; i < world && i < cfg->world && !rb.bad; i++) {
        pf_get_str(&rb, f[i].addr, sizeof(f[i].addr));
        pf_get_str(&rb, f[i].hostname, sizeof(f[i].hostname));
        pf_get_str(&rb, f[i].instance_type, sizeof(f[i].instance_type));
        f[i].efa_count = (int)pf_get_u32(&rb);
        f[i].gpu_count = (int)pf_get_u32(&rb);
    }
    has_mac = pf_get_u8(&rb) != 0;
    table_len = rb.off;
    if (has_mac)
        pf_get_bytes(&rb, mac, sizeof(mac));
    if (world != cfg->world || rb.bad || rb.off != m->len) {
        free(f);
        return join_fail(cfg->coll, PF_ERR_PROTOCOL, err, "malformed peer "
                         "table from rank 0 at %s", root);
    }
    if (cfg->secret) {
        struct pf_hmac hm;
        pf_hmac_init(&hm, cfg->secret, cfg->secret_len);
        pf_hmac_update(&hm, m->body, table_len);
        pf_hmac_update(&hm, nonce, PF_RDV_NONCE);
        pf_hmac_final(&hm, want);
        if (!has_mac || !pf_digest_equal(mac, want, PF_RDV_MAC)) {
            free(f);
            return join_fail(cfg->coll, PF_ERR_REJECTED, err, "the peer table "
                             "from rank 0 at %s is not signed with this "
                             "rank's secret", root);
        }
    }
    memcpy(r->facts, f, (size_t)world * sizeof(*f));
    free(f);
    return PF_OK;
}

/* One HELLO exchange on a fresh connection. *retry asks for another dial
 * (rank 0 closed before its challenge: a previous run shutting down). */
static pf_err hello_exchange(struct rdv *r, const struct pf_rdv_cfg *cfg,
                             const char *root, bool *retry, char *last,
                             char *err)
{
    struct pf_conn *c = &r->conns[0];
    uint8_t body[1024 + 4 * PF_NAME_MAX], challenge[PF_RDV_NONCE];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    struct pf_rbuf rb;
    struct pf_hello h;
    struct pf_msg m;
    char msg[PF_ERRLEN], reason[48];
    pf_err rc;

    *retry = false;
    rc = pf_wire_recv(c, &m, cfg->deadline, msg);
    if (rc == PF_ERR_LOST) {
        snprintf(last, PF_ERRLEN, "rank 0 closed the connection before its "
                 "challenge");
        *retry = true;
        return rc;
    }
    if (rc == PF_ERR_TIMEOUT)
        return join_fail(cfg->coll, PF_ERR_TIMEOUT, err, "connected to %s but "
                         "no rendezvous challenge came before the deadline "
                         "(is something else listening there?)", root);
    if (rc != PF_OK)
        return join_fail(cfg->coll, PF_ERR_PROTOCOL, err, "%s: %s", root, msg);
    rb = (struct pf_rbuf){ m.body, m.len, 0, false };
    if (m.type != PF_RDV_CHALLENGE || pf_get_u32(&rb) != PF_RDV_MAGIC)
        return join_fail(cfg->coll, PF_ERR_PROTOCOL, err, "%s does not speak "
                         "the efa-preflight rendezvous", root);
    h.version = pf_get_u16(&rb);
    pf_get_bytes(&rb, challenge, sizeof(challenge));
    if (rb.bad)
        return join_fail(cfg->coll, PF_ERR_PROTOCOL, err, "malformed "
                         "challenge from %s", root);
    if (h.version != PF_RDV_VERSION)
        return join_fail(cfg->coll, PF_ERR_REJECTED, err, "rank 0 at %s "
                         "speaks rendezvous protocol version %u, this rank %u",
                         root, h.version, PF_RDV_VERSION);

    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = cfg->rank;
    h.world = cfg->world;
    snprintf(h.run_id, sizeof(h.run_id), "%s", cfg->run_id);
    h.facts = cfg->self;
    fill_nonce(h.nonce);
    rc = pf_rdv_hello_encode(&h, cfg->secret, cfg->secret_len, challenge, &w,
                             err);
    if (rc != PF_OK)
        return rc;
    if (pf_wire_send(c, PF_RDV_HELLO, body, w.len, cfg->deadline, msg) !=
        PF_OK) {
        snprintf(last, PF_ERRLEN, "sending HELLO failed: %s", msg);
        *retry = true;
        return PF_ERR_LOST;
    }

    rc = pf_wire_recv(c, &m, cfg->deadline, msg);
    if (rc == PF_ERR_TIMEOUT)
        return join_fail(cfg->coll, PF_ERR_TIMEOUT, err, "rank 0 at %s "
                         "accepted rank %d but did not complete the rendezvous "
                         "before the deadline (another rank never joined)",
                         root, cfg->rank);
    if (rc == PF_ERR_LOST)
        return join_fail(cfg->coll, PF_ERR_LOST, err, "rank 0 at %s closed "
                         "the connection during the rendezvous", root);
    if (rc != PF_OK)
        return join_fail(cfg->coll, PF_ERR_PROTOCOL, err, "%s: %s", root, msg);
    switch (m.type) {
    case PF_RDV_WELCOME:
        return read_table(r, cfg, &m, h.nonce, root, err);
    case PF_RDV_REJECT:
        read_reason(&m, reason, msg);
        return join_fail(cfg->coll, PF_ERR_REJECTED, err, "%s", msg);
    case PF_RDV_ABORT:
        read_reason(&m, reason, msg);
        return join_fail(cfg->coll, pf_rdv_reason_err(reason), err,
                         "rank 0 at %s gave up: %s", root, msg);
    default:
        return join_fail(cfg->coll, PF_ERR_PROTOCOL, err, "unexpected message "
                         "type %u from rank 0 at %s", m.type, root);
    }
}

static pf_err peer_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
{
    char last[PF_ERRLEN] = "no attempt made", root[PF_NAME_MAX + 16];
    int64_t backoff = 50, start = pf_now_ms();

    snprintf(root, sizeof(root), "%s:%d", cfg->root_host, cfg->root_port);
    for (;;) {
        int64_t left = pf_ms_left(cfg->deadline);
        bool retry = false;
        int fd = -1;
        pf_err rc;

        if (left <= 0)
            return join_fail(cfg->coll, PF_ERR_TIMEOUT, err, "rank 0 at %s "
                             "never answered within %.0f s (last error: %s)",
                             root, (double)(pf_now_ms() - start) / 1000.0,
                             last);
        if (dial(cfg, cfg->deadline, &fd, last) != PF_OK) {
            pf_sleep_ms(backoff < left ? backoff : left);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        tune_socket(fd);
        pf_conn_init(&r->conns[0], fd);
        rc = hello_exchange(r, cfg, root, &retry, last, err);
        if (rc == PF_OK) {
            pf_info("rendezvous: rank %d joined rank 0 at %s", cfg->rank, root);
            return PF_OK;
        }
        pf_conn_close(&r->conns[0]);
        if (!retry)
            return rc;
        pf_sleep_ms(backoff < left ? backoff : left);
    }
}

/* ------------------------------------------------------------- ops */

static struct rdv *impl(struct pf_boot *b) { return b->impl; }

static pf_err send_data(struct rdv *r, int to, uint8_t op, const void *p,
                        size_t len, int64_t deadline, char *err)
{
    uint8_t *body = scratch(r, DATA_HEAD + len);
    struct pf_wbuf w;
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc;

    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for a %zu-byte message",
                       len);
    w = (struct pf_wbuf){ body, 0, DATA_HEAD + len, false };
    pf_put_u8(&w, op);
    pf_put_u32(&w, r->seq);
    pf_put_bytes(&w, p, len);
    rc = pf_wire_send(&r->conns[to], PF_RDV_DATA, body, w.len, deadline, msg);
    if (rc == PF_OK)
        return PF_OK;
    return broke(r, rc == PF_ERR_TIMEOUT ? PF_ERR_TIMEOUT : PF_ERR_LOST, to,
                 err, "%s: sending %s #%u failed: %s", who(r, to, name),
                 op == OP_GATHER ? "allgather" : "bcast", r->seq, msg);
}

/* Check a DATA frame from rank `from` against the op in progress and copy
 * its payload (len bytes) to dst. */
static pf_err take_data(struct rdv *r, int from, const struct pf_msg *m,
                        uint8_t op, void *dst, size_t len, char *err)
{
    struct pf_rbuf rb = { m->body, m->len, 0, false };
    char name[WHO_LEN];
    uint8_t got_op;
    uint32_t seq;

    if (m->type == PF_RDV_ABORT)
        return from_abort(r, m, from, err);
    if (m->type == PF_RDV_BYE)
        return broke(r, PF_ERR_LOST, from, err, "%s closed the group while "
                     "others still ran collective call #%u", who(r, from, name),
                     r->seq);
    got_op = pf_get_u8(&rb);
    seq = pf_get_u32(&rb);
    if (m->type != PF_RDV_DATA || rb.bad || got_op != op || seq != r->seq ||
        m->len - DATA_HEAD != len)
        return broke(r, PF_ERR_PROTOCOL, from, err, "%s is out of step: "
                     "expected %s #%u of %zu bytes, got message type %u op %u "
                     "#%u of %zu bytes", who(r, from, name),
                     op == OP_GATHER ? "allgather" : "bcast", r->seq, len,
                     m->type, got_op, seq,
                     m->len >= DATA_HEAD ? m->len - DATA_HEAD : 0);
    if (len)
        memcpy(dst, m->body + DATA_HEAD, len);
    return PF_OK;
}

/* Rank 0: wait for a DATA frame from `only` (or every peer when only < 0),
 * watching every connection so a dead or aborting rank ends the wait. */
static pf_err root_collect(struct rdv *r, uint8_t op, int only, uint8_t *dst,
                           size_t len, int64_t deadline, char *err)
{
    int world = r->boot.world, need = only >= 0 ? 1 : world - 1;
    bool *got = calloc((size_t)world, sizeof(bool));
    struct pollfd *pfds = calloc((size_t)world, sizeof(*pfds));
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc = PF_OK;

    if (!got || !pfds) {
        rc = pf_fail(err, PF_ERR_NOMEM, "no memory");
        goto out;
    }
    for (;;) {
        int n = 0;
        int64_t left;

        for (int i = 1; i < world && need > 0; i++) {
            struct pf_msg m;
            int t;
            if (got[i] || (only >= 0 && i != only))
                continue;
            if (r->conns[i].fd < 0) {
                rc = broke(r, PF_ERR_LOST, i, err, "%s already closed the "
                           "group", who(r, i, name));
                goto out;
            }
            t = pf_wire_take(&r->conns[i], &m, msg);
            if (t < 0) {
                rc = broke(r, PF_ERR_PROTOCOL, i, err, "%s: %s",
                           who(r, i, name), msg);
                goto out;
            }
            if (t == 0)
                continue;
            rc = take_data(r, i, &m, op, only >= 0 ? dst : dst + (size_t)i * len,
                           len, err);
            if (rc != PF_OK)
                goto out;
            got[i] = true;
            need--;
        }
        if (need == 0)
            break;
        left = pf_ms_left(deadline);
        if (left <= 0) {
            char missing[PF_ERRLEN - 160];
            bool *done = got;
            if (only >= 0) {
                for (int i = 1; i < world; i++)
                    got[i] = i != only;
            }
            missing_list(r, done, missing, sizeof(missing));
            rc = broke(r, PF_ERR_TIMEOUT, -1, err, "%s did not reach %s #%u "
                       "before the deadline", missing,
                       op == OP_GATHER ? "allgather" : "bcast", r->seq);
            goto out;
        }
        for (int i = 1; i < world; i++)
            if (r->conns[i].fd >= 0)
                pfds[n++] = (struct pollfd){ .fd = r->conns[i].fd,
                                             .events = POLLIN };
        if (poll(pfds, (nfds_t)n, left > 1000 ? 1000 : (int)left) < 0 &&
            errno != EINTR) {
            rc = pf_fail(err, PF_ERR_SYS, "poll: %s", strerror(errno));
            goto out;
        }
        for (int i = 1; i < world; i++) {
            struct pf_msg m;
            if (r->conns[i].fd < 0)
                continue;
            if (pf_wire_pump(&r->conns[i], msg) != PF_OK &&
                !pf_wire_has(&r->conns[i], PF_RDV_DATA, &m)) {
                if (pf_wire_has(&r->conns[i], PF_RDV_ABORT, &m)) {
                    rc = from_abort(r, &m, i, err);
                    goto out;
                }
                rc = broke(r, PF_ERR_LOST, i, err, "%s closed its connection "
                           "(exited or was killed) during %s #%u",
                           who(r, i, name),
                           op == OP_GATHER ? "allgather" : "bcast", r->seq);
                goto out;
            }
            if (pf_wire_has(&r->conns[i], PF_RDV_ABORT, &m) &&
                (got[i] || (only >= 0 && i != only))) {
                rc = from_abort(r, &m, i, err);
                goto out;
            }
        }
    }
out:
    free(got);
    free(pfds);
    return rc;
}

/* Any rank but 0: the next frame from rank 0 must be this op's DATA. */
static pf_err peer_receive(struct rdv *r, uint8_t op, void *dst, size_t len,
                           int64_t deadline, char *err)
{
    struct pf_msg m;
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc = pf_wire_recv(&r->conns[0], &m, deadline, msg);

    if (rc == PF_ERR_TIMEOUT)
        return broke(r, PF_ERR_TIMEOUT, -1, err, "%s did not complete %s #%u "
                     "before the deadline", who(r, 0, name),
                     op == OP_GATHER ? "allgather" : "bcast", r->seq);
    if (rc == PF_ERR_LOST)
        return broke(r, PF_ERR_LOST, -1, err, "%s closed its connection "
                     "(exited or was killed) during %s #%u", who(r, 0, name),
                     op == OP_GATHER ? "allgather" : "bcast", r->seq);
    if (rc != PF_OK)
        return broke(r, PF_ERR_PROTOCOL, -1, err, "%s: %s", who(r, 0, name),
                     msg);
    return take_data(r, 0, &m, op, dst, len, err);
}

static pf_err check_usable(struct rdv *r, size_t total, char *err)
{
    if (r->broken != PF_OK)
        return pf_fail(err, r->broken, "%s", r->broken_msg);
    if (total + DATA_HEAD + 1 > PF_WIRE_MAX_FRAME)
        return pf_fail(err, PF_ERR_USAGE, "a collective message of %zu bytes "
                       "exceeds the rendezvous limit of %u bytes", total,
                       PF_WIRE_MAX_FRAME - DATA_HEAD - 1);
    return PF_OK;
}

static pf_err rdv_allgather(struct pf_boot *b, const void *mine, size_t len,
                            void *all, int64_t deadline, char *err)
{
    struct rdv *r = impl(b);
    size_t total = (size_t)b->world * len;
    pf_err rc = check_usable(r, total, err);

    if (rc != PF_OK)
        return rc;
    if (len)
        memcpy((uint8_t *)all + (size_t)b->rank * len, mine, len);
    if (b->world == 1)
        return PF_OK;
    r->seq++;
    if (b->rank != 0) {
        rc = send_data(r, 0, OP_GATHER, mine, len, deadline, err);
        return rc != PF_OK ? rc
                           : peer_receive(r, OP_GATHER, all, total, deadline, err);
    }
    rc = root_collect(r, OP_GATHER, -1, all, len, deadline, err);
    for (int i = 1; i < b->world && rc == PF_OK; i++)
        rc = send_data(r, i, OP_GATHER, all, total, deadline, err);
    return rc;
}

static pf_err rdv_bcast(struct pf_boot *b, void *buf, size_t len, int root,
                        int64_t deadline, char *err)
{
    struct rdv *r = impl(b);
    pf_err rc = check_usable(r, len, err);

    if (rc != PF_OK)
        return rc;
    if (root < 0 || root >= b->world)
        return pf_fail(err, PF_ERR_USAGE, "bcast root %d is outside 0..%d",
                       root, b->world - 1);
    if (b->world == 1)
        return PF_OK;
    r->seq++;
    if (b->rank != 0) {
        if (b->rank == root)
            return send_data(r, 0, OP_BCAST, buf, len, deadline, err);
        return peer_receive(r, OP_BCAST, buf, len, deadline, err);
    }
    if (root != 0)
        rc = root_collect(r, OP_BCAST, root, buf, len, deadline, err);
    for (int i = 1; i < b->world && rc == PF_OK; i++)
        if (i != root)
            rc = send_data(r, i, OP_BCAST, buf, len, deadline, err);
    return rc;
}

static pf_err rdv_barrier(struct pf_boot *b, int64_t deadline, char *err)
{
    uint8_t none = 0;  /* not NULL: no arithmetic on null pointers below */
    return rdv_allgather(b, &none, 0, &none, deadline, err);
}

/* Non-blocking look at every connection: EOF without BYE, or an ABORT.
 * deaths_only ignores ranks that gave up on their own (ABORT gave-up):
 * while this rank is aborting for its own reason, only a dead peer may
 * take the blame. */
static pf_err poll_conns(struct rdv *r, bool deaths_only, char *err)
{
    struct pf_boot *b = &r->boot;
    int first = b->rank == 0 ? 1 : 0, last = b->rank == 0 ? b->world : 1;
    char msg[PF_ERRLEN], name[WHO_LEN];

    if (r->broken != PF_OK)
        return pf_fail(err, r->broken, "%s", r->broken_msg);
    for (int i = first; i < last; i++) {
        struct pf_conn *c = &r->conns[i];
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        struct pf_msg m;
        bool closed = false;

        if (c->fd < 0 || (b->rank == 0 && r->bye[i]))
            continue;
        if (poll(&p, 1, 0) > 0)
            closed = pf_wire_pump(c, msg) != PF_OK;
        if (pf_wire_has(c, PF_RDV_ABORT, &m)) {
            char reason[48], text[PF_ERRLEN];
            read_reason(&m, reason, text);
            if (deaths_only && !strcmp(reason, ABORT_OWN))
                continue;
            return from_abort(r, &m, i, err);
        }
        if (pf_wire_has(c, PF_RDV_BYE, &m)) {
            if (b->rank == 0)
                r->bye[i] = true;
            continue;
        }
        if (closed)
            return broke(r, PF_ERR_LOST, i, err, "%s closed its connection "
                         "(exited or was killed)", who(r, i, name));
    }
    return PF_OK;
}

static pf_err rdv_poll(struct pf_boot *b, char *err)
{
    return poll_conns(impl(b), false, err);
}

static void rdv_abort(struct pf_boot *b, const char *why)
{
    struct rdv *r = impl(b);
    char msg[PF_ERRLEN], name[WHO_LEN];

    if (r->broken != PF_OK)
        return;
    /* A fabric error is often a peer that died: give the control
     * connections a moment to say which, so every rank reports the rank at
     * fault rather than its own symptom (poll records and spreads it). */
    for (int64_t until = pf_deadline_in(ATTRIBUTE_MS); pf_ms_left(until) > 0;) {
        if (poll_conns(r, true, NULL) != PF_OK)
            return;
        pf_sleep_ms(10);
    }
    snprintf(msg, sizeof(msg), "%s gave up: %s", who(r, b->rank, name), why);
    r->broken = PF_ERR_LOST;
    snprintf(r->broken_msg, sizeof(r->broken_msg), "%s", msg);
    if (b->rank == 0)
        spread_abort(r, -1, ABORT_OWN, msg);
    else if (r->conns[0].fd >= 0)
        send_reason(&r->conns[0], PF_RDV_ABORT, ABORT_OWN, msg);
}

static void rdv_close(struct pf_boot *b)
{
    struct rdv *r;
    int n;

    if (!b)
        return;
    r = impl(b);
    n = b->rank == 0 ? b->world : 1;
    for (int i = 0; i < n; i++) {
        if (r->conns[i].fd < 0)
            continue;
        /* An orderly goodbye, so nobody mistakes this close for a crash. */
        if (r->broken == PF_OK)
            pf_wire_send(&r->conns[i], PF_RDV_BYE, NULL, 0,
                         pf_deadline_in(CTRL_MS), NULL);
        pf_conn_close(&r->conns[i]);
    }
    free(r->conns);
    free(r->bye);
    free(r->facts);
    free(r->scratch);
    free(r);
}

static const struct pf_boot_ops rdv_ops = {
    .allgather = rdv_allgather,
    .bcast = rdv_bcast,
    .barrier = rdv_barrier,
    .poll = rdv_poll,
    .abort = rdv_abort,
    .close = rdv_close,
};

pf_err pf_rdv_open(const struct pf_rdv_cfg *cfg, struct pf_boot **out,
                   struct pf_rdv_facts *table, char *err)
{
    struct rdv *r;
    pf_err rc;

    *out = NULL;
    if (cfg->world < 1 || cfg->world > PF_MAX_RANKS || cfg->rank < 0 ||
        cfg->rank >= cfg->world)
        return pf_fail(err, PF_ERR_USAGE, "rank %d of %d ranks is outside "
                       "0..%d", cfg->rank, cfg->world, PF_MAX_RANKS - 1);
    if (cfg->world > 1 && (cfg->root_port < 1 || cfg->root_port > 65535))
        return pf_fail(err, PF_ERR_USAGE, "rendezvous port %d is outside "
                       "1..65535", cfg->root_port);
    r = calloc(1, sizeof(*r));
    if (!r)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
    r->conns = calloc((size_t)cfg->world, sizeof(*r->conns));
    r->bye = calloc((size_t)cfg->world, sizeof(bool));
    r->facts = calloc((size_t)cfg->world, sizeof(*r->facts));
    if (!r->conns || !r->bye || !r->facts) {
        free(r->conns);
        free(r->bye);
        free(r->facts);
        free(r);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
    }
    r->boot.ops = &rdv_ops;
    r->boot.rank = cfg->rank;
    r->boot.world = cfg->world;
    r->boot.impl = r;
    r->coll = cfg->coll;
    for (int i = 0; i < cfg->world; i++) {
        const struct pf_peer *e = cfg->expected ? &cfg->expected[i] : NULL;
        pf_conn_init(&r->conns[i], -1);
        if (!e)
            continue;
        /* Until HELLO says otherwise, a rank is named as discovery saw it
         * (pod name in k8s), so a rank that never comes is named too. */
        snprintf(r->facts[i].addr, sizeof(r->facts[i].addr), "%s", e->host);
        snprintf(r->facts[i].hostname, sizeof(r->facts[i].hostname), "%s",
                 e->pod[0] ? e->pod : e->node);
    }
    r->facts[cfg->rank] = cfg->self;
    if (cfg->expected)
        snprintf(r->facts[cfg->rank].addr, sizeof(r->facts[0].addr), "%s",
                 cfg->expected[cfg->rank].host);
    if (cfg->rank != 0)
        snprintf(r->facts[0].addr, sizeof(r->facts[0].addr), "%s",
                 cfg->root_host);

    if (cfg->world == 1)
        rc = PF_OK;
    else if (cfg->rank == 0)
        rc = root_join(r, cfg, err);
    else
        rc = peer_join(r, cfg, err);
    if (rc != PF_OK) {
        r->broken = rc;               /* no BYE: the others must see it */
        rdv_close(&r->boot);
        return rc;
    }
    if (table)
        memcpy(table, r->facts, (size_t)cfg->world * sizeof(*table));
    *out = &r->boot;
    return PF_OK;
}
