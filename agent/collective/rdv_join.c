/* rendezvous, joining: rank 0 accepts, challenges and checks every HELLO
 * and answers with the peer table; the others dial rank 0 (retrying until
 * the deadline) and prove membership. The protocol is in rendezvous.h. */
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
#include "rdv_impl.h"

#define MAX_PENDING 64        /* accepted connections yet to say HELLO... */
#define PENDING_MS 10000      /* ...which they must within this */
#define HELLO_LIMIT 4096      /* largest frame taken before HELLO */
#define DIAL_MS 3000          /* one connect attempt */
#define BACKOFF_MAX_MS 1000

static void fill_nonce(uint8_t out[PF_RDV_NONCE])
{
    if (getrandom(out, PF_RDV_NONCE, GRND_NONBLOCK) == PF_RDV_NONCE)
        return;
    /* Entropy pool not ready (early boot): time and pid still differ per
     * connection, which is what freshness needs. */
    struct { double t; pid_t pid; const void *p; } seed = {
        pf_now_s(), getpid(), out
    };
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
    /* A frame cut inside the version is malformed, not another version. */
    if (rb.bad)
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed HELLO (%zu bytes)",
                       len);
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
        return pf_fail(err, saved == EADDRINUSE || saved == EACCES ||
                                saved == EADDRNOTAVAIL ? PF_ERR_USAGE
                                                       : PF_ERR_IO,
                       "rank 0 cannot listen on %s: %s%s", where,
                       strerror(saved),
                       saved == EADDRINUSE ? " (another process holds the "
                                             "port: pick one with --port)"
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
            return rdv_broke(r, rc == PF_ERR_TIMEOUT ? PF_ERR_TIMEOUT : PF_ERR_LOST,
                             i, err, "sending the peer table to %s failed: %s",
                             rdv_who(r, i, name), msg);
        }
    }
    free(body);
    return PF_OK;
}

static pf_err join_fail(struct pf_fault *fault, pf_err code, char *err,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static pf_err join_fail(struct pf_fault *fault, pf_err code, char *err,
                        const char *fmt, ...)
{
    char msg[PF_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rdv_record(fault, code, msg);
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
        rdv_send_reason(&p->c, PF_RDV_REJECT,
                        pf_reason_name(PF_R_PeerRejected), full);
        pf_conn_close(&p->c);
        return rdv_broke(r, PF_ERR_REJECTED, -1, err, "%s", full);
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
    pf_debug("rendezvous: %s joined (%d of %d)", rdv_who(r, h.rank, name),
             *njoined, r->boot.world);
    return PF_OK;
}

pf_err rdv_root_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
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
    if (rc == PF_ERR_USAGE) {
        /* The port is taken or the address is wrong: a deployment fix,
         * never a verdict on the fabric. */
        pf_fault_set(r->fault, rc, PF_R_RendezvousPortInUse, msg);
        rc = pf_fail(err, rc, "%s", msg);
        goto out;
    }
    if (rc != PF_OK) {
        rc = join_fail(r->fault, rc, err, "%s", msg);
        goto out;
    }
    pf_info("rendezvous: rank 0 listening on port %d for %d ranks (run %s)",
            cfg->root_port, world, cfg->run_id);

    while (njoined < world) {
        int64_t now = pf_now_ms(), left = cfg->deadline - now;
        int n = 0;

        if (left <= 0) {
            char missing[PF_ERRLEN - 160];
            rdv_missing_list(r, joined, missing, sizeof(missing));
            rc = rdv_broke(r, PF_ERR_TIMEOUT, -1, err, "%s never joined the "
                           "rendezvous on port %d within %.0f s (%d of %d ranks "
                           "joined)", missing, cfg->root_port,
                           (double)(now - start) / 1000.0, njoined, world);
            goto out;
        }
        if (pf_progress_due(cfg->progress, now)) {
            char missing[PF_ERRLEN - 160];
            rdv_missing_list(r, joined, missing, sizeof(missing));
            pf_progress_say(cfg->progress, now, "%d of %d ranks joined, "
                            "missing %s; %.0f s left", njoined, world,
                            missing, (double)left / 1000.0);
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
            rc = join_fail(r->fault, PF_ERR_SYS, err, "rendezvous poll: %s",
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
                        rdv_who(r, i, name));
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

        fd = socket(ai->ai_family,
                    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
        ms = (int)(pf_ms_left(deadline) < DIAL_MS ? pf_ms_left(deadline)
                                                  : DIAL_MS);
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
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "malformed peer "
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
            return join_fail(cfg->fault, PF_ERR_REJECTED, err, "the peer table "
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
        return join_fail(cfg->fault, PF_ERR_TIMEOUT, err, "connected to %s but "
                         "no rendezvous challenge came before the deadline "
                         "(is something else listening there?)", root);
    if (rc != PF_OK)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "%s: %s", root, msg);
    rb = (struct pf_rbuf){ m.body, m.len, 0, false };
    if (m.type != PF_RDV_CHALLENGE || pf_get_u32(&rb) != PF_RDV_MAGIC)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "%s does not speak "
                         "the efa-preflight rendezvous", root);
    h.version = pf_get_u16(&rb);
    pf_get_bytes(&rb, challenge, sizeof(challenge));
    if (rb.bad)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "malformed "
                         "challenge from %s", root);
    if (h.version != PF_RDV_VERSION)
        return join_fail(cfg->fault, PF_ERR_REJECTED, err, "rank 0 at %s "
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
        return join_fail(cfg->fault, PF_ERR_TIMEOUT, err, "rank 0 at %s "
                         "accepted rank %d but did not complete the rendezvous "
                         "before the deadline (another rank never joined)",
                         root, cfg->rank);
    if (rc == PF_ERR_LOST)
        return join_fail(cfg->fault, PF_ERR_LOST, err, "rank 0 at %s closed "
                         "the connection during the rendezvous", root);
    if (rc != PF_OK)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "%s: %s", root, msg);
    switch (m.type) {
    case PF_RDV_WELCOME:
        return read_table(r, cfg, &m, h.nonce, root, err);
    case PF_RDV_REJECT:
        rdv_read_reason(&m, reason, msg);
        return join_fail(cfg->fault, PF_ERR_REJECTED, err, "%s", msg);
    case PF_RDV_ABORT:
        rdv_read_reason(&m, reason, msg);
        return join_fail(cfg->fault, pf_rdv_reason_err(reason), err,
                         "rank 0 at %s gave up: %s", root, msg);
    default:
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "unexpected message "
                         "type %u from rank 0 at %s", m.type, root);
    }
}

pf_err rdv_peer_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
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
            return join_fail(cfg->fault, PF_ERR_TIMEOUT, err, "rank 0 at %s "
                             "never answered within %.0f s (last error: %s)",
                             root, (double)(pf_now_ms() - start) / 1000.0,
                             last);
        if (pf_progress_due(cfg->progress, pf_now_ms()))
            pf_progress_say(cfg->progress, pf_now_ms(), "rank 0 at %s not "
                            "reached yet (%s); %.0f s left", root, last,
                            (double)left / 1000.0);
        if (dial(cfg, cfg->deadline, &fd, last) != PF_OK) {
            pf_sleep_ms(backoff < left ? backoff : left);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                   : backoff * 2;
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

