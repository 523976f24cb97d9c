/* rendezvous, rank 0 joining: accept, challenge and check every HELLO,
 * then answer every member with the peer table.
 *
 * Driven by epoll, so an event costs the connection that has something to
 * say, never the whole group: thousands of ranks join in well under a
 * second. A connection that has not proven membership yet holds one of
 * MAX_PENDING slots and may send at most HELLO_LIMIT bytes; when the
 * slots are full, the oldest idle one makes room or the listener waits.
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
#include "../util/crypto.h"
#include "../util/tcp.h"
#include "rdv_impl.h"

#define MAX_PENDING 256       /* connections yet to say HELLO... */
#define PENDING_MS 10000      /* ...which they must within this */
#define EVICT_MS 1000         /* when full, one idle this long makes room */
#define HELLO_LIMIT 4096      /* largest frame taken before the table */
#define WARN_MS 1000          /* at most one refusal warning per second */
#define SWEEP_MS 250          /* idle check */
#define EVENTS 128

enum { TAG_LISTEN, TAG_PENDING, TAG_MEMBER };

struct pending {
    struct pf_conn c;
    uint8_t nonce[PF_RDV_NONCE];
    int64_t since;
    char addr[64];
};

struct root {
    struct rdv *r;
    const struct pf_rdv_cfg *cfg;
    int lfd, ep;
    bool listening;                   /* listener in the epoll set */
    struct pending *pend;             /* MAX_PENDING slots */
    int *free_slots, nfree;
    bool *joined;
    int njoined;
    uint8_t (*nonces)[PF_RDV_NONCE];
    int64_t swept;
    int refused;                      /* HELLOs refused (strangers) */
    int quiet;                        /* refusals not logged since warned */
    int64_t warned;
    char last[PF_ERRLEN / 2];         /* the last refusal, for PeerTimeout */
};

/* A connection per member plus what the rest of the agent holds; the
 * slots for unproven connections use what is left (EMFILE pauses the
 * listener, see accept_some). */
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

/* A free slot, evicting the oldest connection that has been idle for
 * EVICT_MS; -1 when every slot is younger (the listener then waits). */
static int take_slot(struct root *rt, int64_t now)
{
    int oldest = -1;

    if (rt->nfree > 0)
        return rt->free_slots[--rt->nfree];
    for (int i = 0; i < MAX_PENDING; i++)
        if (oldest < 0 || rt->pend[i].since < rt->pend[oldest].since)
            oldest = i;
    if (oldest < 0 || now - rt->pend[oldest].since < EVICT_MS)
        return -1;
    refuse(rt, oldest, false, "no HELLO within 1 s while every slot was "
           "taken");
    return rt->free_slots[--rt->nfree];
}

static void accept_some(struct root *rt, int64_t now)
{
    for (int n = 0; n < EVENTS; n++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        uint8_t body[8 + PF_RDV_NONCE];
        struct pf_wbuf w = { body, 0, sizeof(body), false };
        struct pending *p;
        int slot = take_slot(rt, now), fd;

        if (slot < 0) {
            set_listening(rt, false);     /* the sweep turns it back on */
            return;
        }
        fd = accept4(rt->lfd, (struct sockaddr *)&ss, &sl,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            rt->free_slots[rt->nfree++] = slot;
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: pause rather than spin on a
                 * listener that stays readable. */
                if (now - rt->warned >= WARN_MS) {
                    pf_warn("rendezvous: cannot accept: %s", strerror(errno));
                    rt->warned = now;
                }
                set_listening(rt, false);
            }
            return;
        }
        p = &rt->pend[slot];
        pf_conn_init(&p->c, fd);
        /* Nobody has proven membership yet: a HELLO is small, so a stranger
         * cannot make rank 0 buffer more than this per connection. */
        p->c.limit = HELLO_LIMIT;
        p->since = now;
        rdv_addr_string(&ss, sl, p->addr, sizeof(p->addr));
        pf_tcp_keepalive(fd);
        rdv_fill_nonce(p->nonce);
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

/* Idle connections go; a paused listener resumes once a slot is free or
 * can be made free. */
static void sweep(struct root *rt, int64_t now)
{
    bool room = rt->nfree > 0;

    if (now - rt->swept < SWEEP_MS)
        return;
    rt->swept = now;
    for (int i = 0; i < MAX_PENDING; i++) {
        if (rt->pend[i].c.fd < 0)
            continue;
        if (now - rt->pend[i].since > PENDING_MS) {
            refuse(rt, i, false, "no HELLO within 10 s");
            room = true;
        } else if (now - rt->pend[i].since >= EVICT_MS) {
            room = true;
        }
    }
    if (room)
        set_listening(rt, true);
}

/* The table is signed per member: HMAC(secret, table || its nonce). The
 * HMAC state after the table is computed once and copied per member, so
 * signing costs O(table + world), not O(table x world). */
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
            const struct pf_bytes parts[] = { { body, table_len },
                                              { rt->nonces[i], PF_RDV_NONCE } };
            uint8_t mac[PF_RDV_MAC];
            if (!pf_hmac_sha256(cfg->secret, cfg->secret_len, parts, 2, mac)) {
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

    rdv_missing_list(r, rt->joined, missing, sizeof(missing));
    /* A member refused for a mismatch (secret, run id) never joins: say
     * so, or the timeout would hide the cause. */
    if (rt->refused)
        snprintf(why, sizeof(why), "; %d HELLO%s rejected: the last %s",
                 rt->refused, rt->refused == 1 ? "" : "s", rt->last);
    return rdv_broke(r, PF_ERR_TIMEOUT, -1, err, "%s never joined the "
                     "rendezvous on port %d within %.0f s (%d of %d ranks "
                     "joined%s)", missing, rt->cfg->root_port,
                     (double)(pf_now_ms() - start) / 1000.0, rt->njoined,
                     r->boot.world, why);
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
    }
    return PF_OK;
}

pf_err rdv_root_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
{
    int world = r->boot.world;
    struct root rt = { .r = r, .cfg = cfg, .lfd = -1, .ep = -1, .njoined = 1 };
    int64_t start = pf_now_ms();
    char msg[PF_ERRLEN];
    pf_err rc;

    rt.pend = calloc(MAX_PENDING, sizeof(*rt.pend));
    rt.free_slots = calloc(MAX_PENDING, sizeof(int));
    rt.joined = calloc((size_t)world, sizeof(bool));
    rt.nonces = calloc((size_t)world, PF_RDV_NONCE);
    if (!rt.pend || !rt.free_slots || !rt.joined || !rt.nonces) {
        rc = pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
        goto out;
    }
    for (int i = 0; i < MAX_PENDING; i++) {
        pf_conn_init(&rt.pend[i].c, -1);
        rt.free_slots[rt.nfree++] = MAX_PENDING - 1 - i;
    }
    rt.joined[0] = true;
    rc = listen_on(cfg->bind_addr, cfg->root_port,
                   world < 128 ? 128 : world > 65535 ? 65535 : world, &rt.lfd,
                   msg);
    if (rc == PF_ERR_USAGE) {
        /* The port is taken or the address is wrong: a deployment fix,
         * never a verdict on the fabric. */
        pf_fault_set(r->fault, rc, PF_R_RendezvousPortInUse, msg);
        rc = pf_fail(err, rc, "%s", msg);
        goto out;
    }
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
out:
    if (rt.ep >= 0)
        close(rt.ep);
    if (rt.lfd >= 0)
        close(rt.lfd);
    if (rt.pend)
        for (int i = 0; i < MAX_PENDING; i++)
            pf_conn_close(&rt.pend[i].c);
    free(rt.pend);
    free(rt.free_slots);
    free(rt.joined);
    free(rt.nonces);
    return rc;
}
