/* rendezvous, rank 0 joining: accept, challenge and check every HELLO,
 * then answer every member with the peer table.
 *
 * Driven by epoll, so an event costs the connection that has something to
 * say, never the whole group: thousands of ranks join in well under a
 * second. A connection that has not proven membership yet holds a slot
 * (PENDING_BASE plus one per rank) and may send at most HELLO_LIMIT bytes.
 * The listener is drained as fast as connections come, whatever the slots
 * hold: were it to wait, the kernel's listen queue would fill with a
 * flood's connections and drop members' SYNs. Room is made instead:
 * an address holding its share of the slots (SOURCE_BASE plus one per
 * rank) replaces its own oldest connection, and when every slot is taken
 * the oldest one goes. A connection about to go is read first, so a
 * member whose HELLO has arrived joins; one still silent is told BUSY
 * and dials again. A flood from one address thus never touches members
 * from another, and one from everywhere only slows the join.
 * A connection that fails a check is answered with REJECT, closed and
 * counted (a warning at most every WARN_MS), and the rendezvous goes on:
 * nobody who has not proven membership can stop the run. */
#include "rendezvous.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "../util/progress.h"
#include "../util/tcp.h"
#include "rdv_impl.h"

#define PENDING_BASE 256      /* slots for connections yet to say HELLO,
                                 beyond one per rank... */
#define PENDING_MS 10000      /* ...which they must within this */
#define SOURCE_BASE 64        /* slots one address may hold, beyond one per
                                 rank (ranks may share a host) */
#define BACKLOG_MIN 1024      /* listen queue: bursts while rank 0 is busy */
#define HELLO_LIMIT 4096      /* largest frame taken before the table */
#define WARN_MS 1000          /* at most one refusal warning per second */
#define SWEEP_MS 250          /* idle check */
#define EVENTS 128
#define GONE_PER_ROUND 4      /* missing ranks asked about per round */

enum { TAG_LISTEN, TAG_PENDING, TAG_MEMBER };

struct pending {
    struct pf_conn c;                 /* fd -1: the slot is free */
    uint8_t nonce[PF_RDV_NONCE];
    uint8_t src[16];                  /* source address, IPv4 as mapped */
    int64_t since;
    char addr[64];
};

struct root {
    struct rdv *r;
    const struct pf_rdv_cfg *cfg;
    int lfd, ep;
    bool listening;                   /* listener in the epoll set */
    struct pending *pend;             /* nslots slots */
    int nslots, share;                /* share: most slots one address holds */
    int *free_slots, nfree;
    bool *joined;
    int njoined;
    uint8_t (*nonces)[PF_RDV_NONCE];
    int64_t swept;
    int refused;                      /* HELLOs refused (strangers) */
    int dropped;                      /* silent connections dropped for room */
    int quiet;                        /* refusals not logged since warned */
    int64_t warned;
    char last[PF_ERRLEN / 2];         /* the last refusal, for PeerTimeout */
    int64_t gone_next;                /* when missing ranks are asked about */
    int gone_cursor;                  /* the next one asked, 0-based from 1 */
};

/* A connection per member plus what the rest of the agent holds; the
 * slots for unproven connections use what is left (on EMFILE the oldest
 * of them makes room, see accept_some). */
long rdv_root_fds(int world)
{
    return (long)world + 64;
}

static uint64_t tag(int kind, int idx)
{
    return (uint64_t)kind << 32 | (uint32_t)idx;
}

static void watch(struct root *rt, int op, int fd, uint32_t events,
                  uint64_t data)
{
    struct epoll_event ev = { .events = events, .data.u64 = data };

    /* Cannot fail for a valid fd on a set we own; if it did, the
     * connection would sit unheard and time out like a silent peer. */
    if (epoll_ctl(rt->ep, op, fd, &ev))
        pf_debug("rendezvous: epoll_ctl: %s", strerror(errno));
}

static void set_listening(struct root *rt, bool on)
{
    if (rt->listening == on)
        return;
    watch(rt, EPOLL_CTL_MOD, rt->lfd, on ? EPOLLIN : 0, tag(TAG_LISTEN, 0));
    rt->listening = on;
}

/* A slot is free again: a listener paused for want of one resumes. */
static void slot_free(struct root *rt, int slot)
{
    rt->free_slots[rt->nfree++] = slot;
    set_listening(rt, true);
}

static void release(struct root *rt, int slot)
{
    pf_conn_close(&rt->pend[slot].c);   /* the close leaves the epoll set */
    slot_free(rt, slot);
}

/* Close a connection that did not prove membership; counted says it
 * sent something that failed a check (a HELLO rejected). */
static void refuse(struct root *rt, int slot, bool counted, const char *why)
{
    struct pending *p = &rt->pend[slot];
    int64_t now = pf_now_ms();

    if (counted) {
        rt->refused++;
        snprintf(rt->last, sizeof(rt->last), "from %s: %s", p->addr, why);
    }
    if (now - rt->warned >= WARN_MS) {
        if (rt->quiet)
            pf_warn("rendezvous: refused a connection from %s: %s (%d more "
                    "refused since the last warning)", p->addr, why,
                    rt->quiet);
        else
            pf_warn("rendezvous: refused a connection from %s: %s", p->addr,
                    why);
        rt->warned = now;
        rt->quiet = 0;
    } else {
        rt->quiet++;
    }
    release(rt, slot);
}

static void on_pending(struct root *rt, int slot);

/* Make room by closing slot: read it first, so a HELLO that has arrived
 * is answered (the member joins, a stranger is refused); a connection
 * still silent is told BUSY, which sends a member back to dial again. */
static void evict(struct root *rt, int slot, const char *why)
{
    struct pending *p = &rt->pend[slot];

    on_pending(rt, slot);
    if (p->c.fd < 0)
        return;                       /* settled: the slot is free */
    /* A fresh connection's buffer takes it at once: never wait here. */
    (void)pf_wire_send(&p->c, PF_RDV_BUSY, NULL, 0, pf_now_ms(), NULL);
    rt->dropped++;
    refuse(rt, slot, false, why);
}

static pf_err listen_on(const char *bind_addr, int port, int backlog, int *out,
                        char *err)
{
    char where[PF_NAME_MAX + 16];
    int saved, gai, fd = pf_listen_tcp(bind_addr, port, backlog, &saved, &gai);

    snprintf(where, sizeof(where), "%s:%d", bind_addr[0] ? bind_addr : "*",
             port);
    if (fd < 0 && gai)
        return pf_fail(err, PF_ERR_USAGE, "rendezvous address %s: %s", where,
                       gai_strerror(gai));
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

/* An address as 16 bytes, IPv4 as ::ffff:a.b.c.d, so that both
 * spellings of one source count as one. */
static void src_key(const struct sockaddr_storage *ss, uint8_t out[16])
{
    memset(out, 0, 16);
    if (ss->ss_family == AF_INET) {
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    }
}

/* The oldest taken slot, of source src only when src is set; -1 if none.
 * *count: how many slots that source holds. */
static int oldest_of(const struct root *rt, const uint8_t *src, int *count)
{
    int oldest = -1, n = 0;

    for (int i = 0; i < rt->nslots; i++) {
        const struct pending *p = &rt->pend[i];
        if (p->c.fd < 0 || (src && memcmp(p->src, src, sizeof(p->src))))
            continue;
        n++;
        if (oldest < 0 || p->since < rt->pend[oldest].since)
            oldest = i;
    }
    if (count)
        *count = n;
    return oldest;
}

/* A slot for a new connection from src. Room is always made, never
 * waited for: an address holding its share replaces its own oldest
 * connection, so it cannot crowd out another address; past that, when
 * every slot is taken, the oldest connection goes. */
static int take_slot(struct root *rt, const uint8_t src[16])
{
    int mine, own = oldest_of(rt, src, &mine);

    if (mine >= rt->share)
        evict(rt, own, "replaced by a newer connection from the same "
              "address, which held its share of the slots without a HELLO");
    else if (rt->nfree == 0)
        evict(rt, oldest_of(rt, NULL, NULL), "every slot was taken by "
              "connections yet to say HELLO; the oldest made room");
    /* The eviction freed a slot, unless nothing was there to evict. */
    return rt->nfree > 0 ? rt->free_slots[--rt->nfree] : -1;
}

/* Take what the listen queue holds (up to EVENTS at a time; the listener
 * stays readable for the rest), so the kernel never drops a SYN. */
static void accept_some(struct root *rt, int64_t now)
{
    for (int n = 0; n < EVENTS; n++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        uint8_t body[8 + PF_RDV_NONCE], src[16];
        struct pf_wbuf w = { body, 0, sizeof(body), false };
        struct pending *p;
        int slot, fd = accept4(rt->lfd, (struct sockaddr *)&ss, &sl,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            int victim = oldest_of(rt, NULL, NULL);
            if (victim >= 0) {
                /* Out of descriptors: the oldest silent connection gives
                 * its own up, and the queue keeps moving. */
                evict(rt, victim, "rank 0 ran out of file descriptors; the "
                      "oldest connection made room");
                continue;
            }
            /* Members hold them all: pause rather than spin on a listener
             * that stays readable (the sweep resumes it). */
            if (now - rt->warned >= WARN_MS) {
                pf_warn("rendezvous: cannot accept: %s", strerror(errno));
                rt->warned = now;
            }
            set_listening(rt, false);
            return;
        }
        if (fd < 0)
            return;                   /* the queue is empty */
        src_key(&ss, src);
        slot = take_slot(rt, src);
        if (slot < 0) {               /* no slots at all: cannot be */
            close(fd);
            continue;
        }
        p = &rt->pend[slot];
        pf_conn_init(&p->c, fd);
        memcpy(p->src, src, sizeof(p->src));
        /* Nobody has proven membership yet: a HELLO is small, so a stranger
         * cannot make rank 0 buffer more than this per connection. */
        p->c.limit = HELLO_LIMIT;
        p->since = now;
        pf_tcp_peer_addr(&ss, sl, p->addr, sizeof(p->addr));
        pf_tcp_keepalive(fd);
        pf_seal_nonce(p->nonce);
        pf_put_u32(&w, PF_RDV_MAGIC);
        pf_put_u16(&w, PF_RDV_VERSION);
        pf_put_bytes(&w, p->nonce, PF_RDV_NONCE);
        /* A fresh socket's buffer takes it at once: never wait here. */
        if (pf_wire_send(&p->c, PF_RDV_CHALLENGE, body, w.len, now,
                         NULL) != PF_OK) {
            release(rt, slot);
            continue;
        }
        watch(rt, EPOLL_CTL_ADD, fd, EPOLLIN, tag(TAG_PENDING, slot));
        pf_debug("rendezvous: connection from %s", p->addr);
    }
}

/* A member that leaves before the table (its own deadline, a crash)
 * counts as missing again. */
static void member_left(struct root *rt, int rank)
{
    char name[WHO_LEN];

    pf_warn("rendezvous: %s left before every rank had joined",
            rdv_who(rt->r, rank, name));
    pf_conn_close(&rt->r->conns[rank]);
    rt->joined[rank] = false;
    rt->njoined--;
}

/* Members say nothing before the table: EOF, an ABORT or anything else
 * means they gave up. */
static void on_member(struct root *rt, int rank)
{
    struct pf_conn *c = &rt->r->conns[rank];
    struct pf_msg m;
    char msg[PF_ERRLEN];

    if (pf_wire_pump(c, msg) != PF_OK || pf_wire_take(c, &m, msg) != 0)
        member_left(rt, rank);
}

/* A rank claimed twice whose first holder has gone (restarted) is free. */
static bool holder_gone(struct root *rt, int rank)
{
    char msg[PF_ERRLEN];

    if (pf_wire_pump(&rt->r->conns[rank], msg) == PF_OK)
        return false;
    member_left(rt, rank);
    return true;
}

static void on_pending(struct root *rt, int slot)
{
    struct rdv *r = rt->r;
    const struct pf_rdv_cfg *cfg = rt->cfg;
    struct pending *p = &rt->pend[slot];
    struct pf_rdv_view v = { r->boot.world, cfg->run_id, cfg->secret,
                             cfg->secret_len, p->nonce, rt->joined, p->addr,
                             cfg->bind_source ? cfg->expected : NULL };
    char msg[PF_ERRLEN], full[PF_ERRLEN], name[WHO_LEN];
    struct pf_hello h;
    struct pf_msg m;
    pf_err prc = pf_wire_pump(&p->c, msg), rc;
    int t = pf_wire_take(&p->c, &m, msg);

    if (t == 0) {
        if (prc != PF_OK)
            release(rt, slot);        /* closed before saying anything */
        return;
    }
    if (t < 0) {
        refuse(rt, slot, true, msg);
        return;
    }
    if (m.type != PF_RDV_HELLO) {
        refuse(rt, slot, true, "its first message is not a HELLO");
        return;
    }
    rc = pf_rdv_check_hello(&v, m.body, m.len, &h, msg);
    if (rc == PF_ERR_REJECTED && h.taken && holder_gone(rt, h.rank))
        rc = pf_rdv_check_hello(&v, m.body, m.len, &h, msg);
    if (rc != PF_OK) {
        /* The sender learns why (a member with the wrong secret or run id
         * stops at once); the run goes on. */
        if (rc == PF_ERR_REJECTED) {
            snprintf(full, sizeof(full), "rank 0 rejected a peer from %s: %s",
                     p->addr, msg);
            rdv_send_reason(&p->c, PF_RDV_REJECT,
                            pf_reason_name(PF_R_PeerRejected), full,
                            pf_now_ms());
        }
        refuse(rt, slot, true, msg);
        return;
    }
    r->conns[h.rank] = p->c;
    pf_conn_init(&p->c, -1);
    slot_free(rt, slot);
    watch(rt, EPOLL_CTL_MOD, r->conns[h.rank].fd, EPOLLIN | EPOLLRDHUP,
          tag(TAG_MEMBER, h.rank));
    pf_conn_shrink(&r->conns[h.rank]);
    r->facts[h.rank] = h.facts;
    snprintf(r->facts[h.rank].addr, sizeof(r->facts[h.rank].addr), "%s",
             p->addr);
    memcpy(rt->nonces[h.rank], h.nonce, PF_RDV_NONCE);
    rt->joined[h.rank] = true;
    rt->njoined++;
    pf_debug("rendezvous: %s joined (%d of %d)", rdv_who(r, h.rank, name),
             rt->njoined, r->boot.world);
}

/* Idle connections go; a listener paused for want of descriptors tries
 * again. */
static void sweep(struct root *rt, int64_t now)
{
    if (now - rt->swept < SWEEP_MS)
        return;
    rt->swept = now;
    for (int i = 0; i < rt->nslots; i++)
        if (rt->pend[i].c.fd >= 0 && now - rt->pend[i].since > PENDING_MS)
            refuse(rt, i, false, "no HELLO within 10 s");
    set_listening(rt, true);
}

/* The table is sealed per member (net/seal.h): the flag once, then the
 * MAC over the table and flag with that member's nonce. */
static pf_err send_welcomes(struct root *rt, int64_t deadline, char *err)
{
    struct rdv *r = rt->r;
    const struct pf_rdv_cfg *cfg = rt->cfg;
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
    pf_put_u8(&w, cfg->secret ? 1 : 0);
    table_len = w.len;
    if (w.overflow || table_len + PF_RDV_MAC + 1 > PF_WIRE_MAX_FRAME) {
        free(body);
        return pf_fail(err, PF_ERR_USAGE, "the peer table of %d ranks does "
                       "not fit the rendezvous frame limit of %u bytes", world,
                       PF_WIRE_MAX_FRAME);
    }
    for (int i = 1; i < world; i++) {
        pf_err rc;
        w.len = table_len;
        if (cfg->secret) {
            uint8_t mac[PF_RDV_MAC];
            if (!pf_seal_mac(cfg->secret, cfg->secret_len, body, table_len,
                             rt->nonces[i], mac)) {
                free(body);
                return pf_fail(err, PF_ERR_NOMEM, "libcrypto could not sign "
                               "the peer table");
            }
            pf_put_bytes(&w, mac, sizeof(mac));
        }
        rc = pf_wire_send(&r->conns[i], PF_RDV_WELCOME, body, w.len, deadline,
                          msg);
        if (rc != PF_OK) {
            free(body);
            return rdv_broke(r, rc == PF_ERR_TIMEOUT ? PF_ERR_TIMEOUT
                                                     : PF_ERR_LOST,
                             i, err, "sending the peer table to %s failed: %s",
                             rdv_who(r, i, name), msg);
        }
    }
    free(body);
    return PF_OK;
}

static pf_err timed_out(struct root *rt, int64_t start, char *err)
{
    struct rdv *r = rt->r;
    char missing[PF_ERRLEN / 2], why[PF_ERRLEN / 2] = "";
    size_t n = 0;

    rdv_missing_list(r, rt->joined, missing, sizeof(missing));
    /* A member refused for a mismatch (secret, run id) never joins: say
     * so, or the timeout would hide the cause; so does a flood. */
    if (rt->refused)
        n = (size_t)snprintf(why, sizeof(why), "; %d HELLO%s rejected: the "
                             "last %s", rt->refused,
                             rt->refused == 1 ? "" : "s", rt->last);
    if (rt->dropped && n < sizeof(why))
        snprintf(why + n, sizeof(why) - n, "; %d silent connection%s dropped "
                 "to make room", rt->dropped, rt->dropped == 1 ? "" : "s");
    return rdv_broke(r, PF_ERR_TIMEOUT, -1, err, "%s never joined the "
                     "rendezvous on port %d within %.0f s (%d of %d ranks "
                     "joined%s)", missing, rt->cfg->root_port,
                     (double)(pf_now_ms() - start) / 1000.0, rt->njoined,
                     r->boot.world, why);
}

/* A rank stopped before it joined (rendezvous.h, cfg.gone): asked about a
 * few missing ranks a round, from a cursor that goes round the group, so
 * every straggler of a large group is asked in turn and one round holds
 * the loop for a few bounded questions at most. One known gone fails the
 * rendezvous at once (PeerLost), and the ranks already joined are told. */
static pf_err ask_gone(struct root *rt, int64_t now, char *err)
{
    const struct pf_rdv_cfg *cfg = rt->cfg;
    int world = rt->r->boot.world, asked = 0;
    char why[PF_ERRLEN / 2], name[WHO_LEN];

    if (!cfg->gone || world < 2 || now < rt->gone_next)
        return PF_OK;
    for (int n = 0; n < world - 1 && asked < GONE_PER_ROUND; n++) {
        int r = 1 + (rt->gone_cursor + n) % (world - 1);
        if (rt->joined[r])
            continue;
        asked++;
        why[0] = '\0';
        if (cfg->gone(cfg->gone_ctx, r, why, sizeof(why)))
            return rdv_broke(rt->r, PF_ERR_LOST, r, err, "%s stopped before "
                             "it joined the rendezvous: %s",
                             rdv_who(rt->r, r, name), why[0] ? why : "gone");
        rt->gone_cursor = r % (world - 1);
    }
    /* From the end of the round: a slow answer does not make them come
     * back to back. */
    rt->gone_next = pf_now_ms() + (cfg->gone_ms > 0 ? cfg->gone_ms
                                                      : PF_RDV_GONE_MS);
    return PF_OK;
}

static pf_err run_root(struct root *rt, int64_t start, char *err)
{
    struct epoll_event evs[EVENTS];
    const struct pf_rdv_cfg *cfg = rt->cfg;

    while (rt->njoined < rt->r->boot.world) {
        int64_t now = pf_now_ms(), left = cfg->deadline - now;
        int n;

        if (left <= 0)
            return timed_out(rt, start, err);
        if (pf_progress_due(cfg->progress, now)) {
            char missing[PF_ERRLEN - 160];
            rdv_missing_list(rt->r, rt->joined, missing, sizeof(missing));
            pf_progress_say(cfg->progress, now, "%d of %d ranks joined, "
                            "missing %s; %.0f s left", rt->njoined,
                            rt->r->boot.world, missing, (double)left / 1000.0);
        }
        n = epoll_wait(rt->ep, evs, EVENTS, left > SWEEP_MS ? SWEEP_MS
                                                             : (int)left);
        if (n < 0 && errno != EINTR)
            return pf_fail(err, PF_ERR_SYS, "rendezvous epoll_wait: %s",
                           strerror(errno));
        now = pf_now_ms();
        for (int i = 0; i < n; i++) {
            int kind = (int)(evs[i].data.u64 >> 32);
            int idx = (int)(uint32_t)evs[i].data.u64;
            if (kind == TAG_LISTEN)
                accept_some(rt, now);
            else if (kind == TAG_PENDING && rt->pend[idx].c.fd >= 0)
                on_pending(rt, idx);
            else if (kind == TAG_MEMBER && rt->joined[idx])
                on_member(rt, idx);
        }
        sweep(rt, now);
        if (rt->njoined < rt->r->boot.world) {
            pf_err rc = ask_gone(rt, pf_now_ms(), err);
            if (rc != PF_OK)
                return rc;
        }
    }
    return PF_OK;
}

pf_err rdv_root_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
{
    int world = r->boot.world;
    int64_t start = pf_now_ms();
    struct root rt = { .r = r, .cfg = cfg, .lfd = -1, .ep = -1, .njoined = 1,
                       .gone_next = start + (cfg->gone_ms > 0
                                                 ? cfg->gone_ms
                                                 : PF_RDV_GONE_MS) };
    char msg[PF_ERRLEN];
    pf_err rc;

    /* Every member may be connecting at once, with strangers beside them;
     * one address may hold every slot its ranks could need and a margin. */
    rt.nslots = PENDING_BASE + world;
    rt.share = SOURCE_BASE + world;
    rt.pend = calloc((size_t)rt.nslots, sizeof(*rt.pend));
    rt.free_slots = calloc((size_t)rt.nslots, sizeof(int));
    rt.joined = calloc((size_t)world, sizeof(bool));
    rt.nonces = calloc((size_t)world, PF_RDV_NONCE);
    if (!rt.pend || !rt.free_slots || !rt.joined || !rt.nonces) {
        rc = pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
        goto out;
    }
    for (int i = 0; i < rt.nslots; i++) {
        pf_conn_init(&rt.pend[i].c, -1);
        rt.free_slots[rt.nfree++] = rt.nslots - 1 - i;
    }
    rt.joined[0] = true;
    rc = listen_on(cfg->bind_addr, cfg->root_port,
                   world < BACKLOG_MIN ? BACKLOG_MIN
                                       : world > 65535 ? 65535 : world,
                   &rt.lfd, msg);
    /* A usage error here is the port taken or the address wrong:
     * RendezvousPortInUse, a deployment fix, never a verdict on the
     * fabric. */
    if (rc == PF_OK && (rt.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        rc = pf_fail(msg, PF_ERR_SYS, "epoll_create1: %s", strerror(errno));
    if (rc != PF_OK) {
        rdv_record(r->fault, rc, msg);
        rc = pf_fail(err, rc, "%s", msg);
        goto out;
    }
    watch(&rt, EPOLL_CTL_ADD, rt.lfd, EPOLLIN, tag(TAG_LISTEN, 0));
    rt.listening = true;
    pf_info("rendezvous: rank 0 listening on port %d for %d ranks (run %s%s)",
            cfg->root_port, world, cfg->run_id,
            cfg->secret ? ", HMAC" : ", no secret");

    rc = run_root(&rt, start, err);
    if (rc == PF_ERR_SYS)
        rdv_record(r->fault, rc, err);
    if (rc == PF_OK) {
        for (int i = 1; i < world; i++) {
            r->conns[i].limit = 0;    /* members: frames up to the maximum */
            pf_conn_shrink(&r->conns[i]);
        }
        rc = send_welcomes(&rt, cfg->deadline + CTRL_MS, err);
    }
    /* The port stays open for the rest of the run: a rank that comes now
     * (its place taken by an impostor, or restarted) learns why at once. */
    if (rc == PF_OK && rdv_door_open(rt.lfd, cfg, world, &r->door, msg) ==
                           PF_OK)
        rt.lfd = -1;
    else if (rc == PF_OK)
        pf_warn("rendezvous: %s; later claims go unanswered", msg);
    if (rc == PF_OK)
        pf_info("rendezvous: %d ranks joined in %.2f s%s", world,
                (double)(pf_now_ms() - start) / 1000.0,
                rt.refused ? " (strangers refused, see the warnings)" : "");
    if (rt.refused)
        pf_warn("rendezvous: %d HELLO%s refused in all, the last %s",
                rt.refused, rt.refused == 1 ? "" : "s", rt.last);
    if (rt.dropped)
        pf_warn("rendezvous: %d silent connection%s dropped to make room "
                "(a flood of connections on port %d?)", rt.dropped,
                rt.dropped == 1 ? "" : "s", cfg->root_port);
out:
    if (rt.ep >= 0)
        close(rt.ep);
    if (rt.lfd >= 0)
        close(rt.lfd);
    if (rt.pend)
        for (int i = 0; i < rt.nslots; i++)
            pf_conn_close(&rt.pend[i].c);
    free(rt.pend);
    free(rt.free_slots);
    free(rt.joined);
    free(rt.nonces);
    return rc;
}
