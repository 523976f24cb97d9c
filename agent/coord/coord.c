/* The DaemonSet coordinator's loop and the agent's registration (coord.h).
 *
 * The coordinator keeps a view of its pool from the API server (pending
 * Nodes of its instance type and zone, the agent pod on each) and the agents
 * connected to it. It cuts groups when nothing more is to be expected: no
 * registration for QUIET_MS and no pending node of the pool whose agent is
 * still starting; or after gather_ms; or when a waiting agent's patience is
 * about to end. It then assigns every waiting agent (itself included) at
 * once, releases the Lease and goes on to validate with its own group; an
 * agent arriving later finds the Lease free and coordinates the next round.
 * So an agent waits through one or two coordinators, not one per group. */
#include "coord.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/clock.h"
#include "../k8s/pods.h"
#include "../util/log.h"
#include "../util/progress.h"
#include "coord_net.h"
#include "groups.h"

#define CHALLENGE_MS 3000     /* a connection must register within this */
#define CTRL_MS 2000          /* one small frame's send */
#define HEARTBEAT_MS 1000
#define SILENCE_MS 5000       /* an agent hears nothing this long: gone */
#define QUIET_MS 2000         /* no change this long: cut the groups */
#define VIEW_MS 2000          /* refresh the pool view this often */
#define VIEW_MIN_MS 300       /* ... and never more often */
#define FLUSH_MARGIN_MS 2000  /* cut before an agent stops waiting */
#define MAX_GREETINGS 256     /* connections not yet registered */
#define REGISTER_LIMIT 2048
#define LOOP_MAX 10000000

struct member {
    char node[PF_NAME_MAX], pod[PF_NAME_MAX], ip[64];
    int64_t wait_until;
    uint8_t nonce[PF_CO_NONCE];
    struct pf_conn c;                 /* fd -1: the coordinator itself */
};

struct greeting {
    struct pf_conn c;
    uint8_t challenge[PF_CO_NONCE];
    char addr[64];
    int64_t since;
    bool registered;                  /* REGISTER read, awaiting a view */
    struct pf_co_register reg;
};

struct co {
    struct pf_co_pool *p;
    struct pf_lease *l;
    int lfd;
    struct member *m;
    int nm, mcap;                     /* members, and room for them */
    struct greeting *g;
    int ng;
    struct pf_k8s_pool_node *v;
    int nv;
    int64_t view_ms;
    int64_t last_change;
    int coming;
};

/* ----------------------------------------------------------------- view */

static pf_err take_view(struct co *c, char *err)
{
    struct pf_k8s_pool_node *v = NULL;
    int n = 0;
    pf_err rc = pf_k8s_pool_view(&c->p->pool, &v, &n, err);

    if (rc != PF_OK)
        return rc;
    free(c->v);
    c->v = v;
    c->nv = n;
    c->view_ms = pf_now_ms();
    return PF_OK;
}

static const struct pf_k8s_pool_node *view_node(const struct co *c,
                                                const char *name)
{
    for (int i = 0; i < c->nv; i++)
        if (!strcmp(c->v[i].name, name))
            return &c->v[i];
    return NULL;
}

static int member_of(const struct co *c, const char *node)
{
    for (int i = 0; i < c->nm; i++)
        if (!strcmp(c->m[i].node, node))
            return i;
    return -1;
}

/* Pending nodes of the pool whose agent may still register. */
static int count_coming(const struct co *c)
{
    int n = 0;

    for (int i = 0; i < c->nv; i++)
        if (c->v[i].agent != PF_K8S_AGENT_UP && member_of(c, c->v[i].name) < 0)
            n++;
    return n;
}

/* ------------------------------------------------------------- members */

static void send_reject(struct pf_conn *conn, const char *reason,
                        const char *msg)
{
    uint8_t body[PF_ERRLEN + 64];
    struct pf_wbuf w = { body, 0, sizeof(body), false };

    pf_put_str(&w, reason);
    pf_put_str(&w, msg);
    if (!w.overflow)
        pf_wire_send(conn, PF_CO_REJECT, body, w.len, pf_deadline_in(CTRL_MS),
                     NULL);
}

static void drop_member(struct co *c, int i, const char *why)
{
    pf_info("coordinator: agent on %s (%s) left: %s", c->m[i].node,
            c->m[i].ip, why);
    pf_conn_close(&c->m[i].c);
    c->m[i] = c->m[--c->nm];
    c->last_change = pf_now_ms();
}

static pf_err add_member(struct co *c, const char *node, const char *pod,
                         const char *ip, int64_t wait_until,
                         const uint8_t *nonce, int fd_owner_idx, char *err)
{
    int i = member_of(c, node);
    struct member *m;

    if (i >= 0) {                     /* re-registered: the old one is stale */
        pf_conn_close(&c->m[i].c);
        c->m[i] = c->m[--c->nm];
    }
    if (c->nm >= c->mcap) {           /* doubling: a 1000-node group */
        int cap = c->mcap ? c->mcap * 2 : 16;
        m = realloc(c->m, (size_t)cap * sizeof(*m));
        if (!m)
            return pf_fail(err, PF_ERR_NOMEM, "out of memory");
        c->m = m;
        c->mcap = cap;
    }
    m = &c->m[c->nm++];
    memset(m, 0, sizeof(*m));
    snprintf(m->node, sizeof(m->node), "%s", node);
    snprintf(m->pod, sizeof(m->pod), "%s", pod);
    snprintf(m->ip, sizeof(m->ip), "%s", ip);
    m->wait_until = wait_until;
    if (nonce)
        memcpy(m->nonce, nonce, PF_CO_NONCE);
    if (fd_owner_idx >= 0) {
        m->c = c->g[fd_owner_idx].c;  /* the connection moves over */
        pf_conn_init(&c->g[fd_owner_idx].c, -1);
    } else {
        pf_conn_init(&m->c, -1);
    }
    c->last_change = pf_now_ms();
    return PF_OK;
}

static void drop_greeting(struct co *c, int i)
{
    pf_conn_close(&c->g[i].c);
    c->g[i] = c->g[--c->ng];
}

static void accept_new(struct co *c)
{
    for (int n = 0; n < 64; n++) {
        uint8_t body[8 + PF_CO_NONCE];
        struct pf_wbuf w = { body, 0, sizeof(body), false };
        struct greeting *g;
        char addr[64];
        int fd = pf_co_accept(c->lfd, addr, sizeof(addr));

        if (fd < 0)
            return;
        if (c->ng == MAX_GREETINGS) {
            int oldest = 0;
            for (int i = 1; i < c->ng; i++)
                if (c->g[i].since < c->g[oldest].since)
                    oldest = i;
            pf_warn("coordinator: dropping %s: too many connections waiting "
                    "to register", c->g[oldest].addr);
            drop_greeting(c, oldest);
        }
        g = &c->g[c->ng++];
        memset(g, 0, sizeof(*g));
        pf_conn_init(&g->c, fd);
        /* A stranger cannot make us buffer more than a registration. */
        g->c.limit = REGISTER_LIMIT;
        g->since = pf_now_ms();
        snprintf(g->addr, sizeof(g->addr), "%s", addr);
        pf_seal_nonce(g->challenge);
        pf_put_u32(&w, PF_CO_MAGIC);
        pf_put_u16(&w, PF_CO_VERSION);
        pf_put_bytes(&w, g->challenge, PF_CO_NONCE);
        if (pf_wire_send(&g->c, PF_CO_CHALLENGE, body, w.len,
                         pf_deadline_in(CTRL_MS), NULL) != PF_OK)
            drop_greeting(c, c->ng - 1);
    }
}

/* Is this registration an agent of our pool? 1 yes, 0 not in the view
 * (yet), -1 no (why says so). */
static int admit(const struct co *c, const struct greeting *g, char *why,
                 size_t len)
{
    const struct pf_co_register *r = &g->reg;
    const struct pf_k8s_pool_node *v = view_node(c, r->node);

    if (!v) {
        snprintf(why, len, "node %s is not a %s-pending node of instance "
                 "type %s in zone %s", r->node, c->p->cfg->label_prefix,
                 c->p->pool.type[0] ? c->p->pool.type : "(none)",
                 c->p->pool.zone[0] ? c->p->pool.zone : "(none)");
        return 0;
    }
    if (!v->pod[0]) {
        snprintf(why, len, "the API server shows no live agent pod on node "
                 "%s", r->node);
        return 0;
    }
    if (strcmp(v->pod, r->pod)) {
        snprintf(why, len, "pod %s is not the agent pod on node %s (the API "
                 "server shows %s)", r->pod, r->node, v->pod);
        return 0;
    }
    if (strcmp(v->ip, g->addr)) {
        snprintf(why, len, "registration for pod %s came from %s, but the "
                 "pod's address is %s", r->pod, g->addr, v->ip);
        return -1;
    }
    return 1;
}

/* Read what the greetings sent; admit, park or refuse them. */
static pf_err serve_greetings(struct co *c, int64_t now, bool *want_view,
                              char *err)
{
    for (int i = 0; i < c->ng;) {
        struct greeting *g = &c->g[i];
        char msg[PF_ERRLEN], why[PF_ERRLEN];
        struct pf_msg m;
        int ok, got;

        if (!g->registered) {
            if (pf_wire_pump(&g->c, msg) != PF_OK) {
                drop_greeting(c, i);
                continue;
            }
            got = pf_wire_take(&g->c, &m, msg);
            if (got < 0 || (got == 1 && m.type != PF_CO_REGISTER)) {
                pf_warn("coordinator: dropping %s: not a registration", g->addr);
                drop_greeting(c, i);
                continue;
            }
            if (got == 0) {
                if (now - g->since > CHALLENGE_MS)
                    drop_greeting(c, i);
                else
                    i++;
                continue;
            }
            pf_err rc = pf_co_register_decode(m.body, m.len, c->p->secret,
                                              c->p->secret_len, g->challenge,
                                              &g->reg, msg);
            if (rc != PF_OK) {
                pf_warn("coordinator: refusing %s: %s", g->addr, msg);
                if (rc == PF_ERR_REJECTED)
                    send_reject(&g->c, pf_reason_name(PF_R_PeerRejected), msg);
                drop_greeting(c, i);
                continue;
            }
            g->registered = true;
            g->since = now;
        }
        ok = admit(c, g, why, sizeof(why));
        /* Unknown to a view older than the registration: look again. */
        if (ok == 0 && c->view_ms <= g->since) {
            *want_view = true;
            i++;
            continue;
        }
        if (ok <= 0) {
            pf_warn("coordinator: refusing %s: %s", g->addr, why);
            send_reject(&g->c, pf_reason_name(PF_R_PeerRejected), why);
            drop_greeting(c, i);
            continue;
        }
        pf_err rc = add_member(c, g->reg.node, g->reg.pod, g->addr,
                               now + g->reg.wait_ms, g->reg.nonce, i, err);
        if (rc != PF_OK)
            return rc;
        pf_info("coordinator: agent on %s (%s) registered, %d waiting",
                g->reg.node, g->addr, c->nm);
        c->g[i] = c->g[--c->ng];
    }
    return PF_OK;
}

static void serve_members(struct co *c, bool heartbeat)
{
    for (int i = 0; i < c->nm;) {
        struct member *m = &c->m[i];
        char msg[PF_ERRLEN];

        if (m->c.fd < 0) {
            i++;
            continue;
        }
        if (pf_wire_pump(&m->c, msg) != PF_OK) {
            drop_member(c, i, "connection closed");
            continue;
        }
        if (heartbeat) {
            uint8_t body[4];
            struct pf_wbuf w = { body, 0, sizeof(body), false };
            pf_put_u32(&w, (uint32_t)c->nm);
            if (pf_wire_send(&m->c, PF_CO_WAIT, body, w.len,
                             pf_deadline_in(CTRL_MS), msg) != PF_OK) {
                drop_member(c, i, msg);
                continue;
            }
        }
        i++;
    }
}

/* ---------------------------------------------------------------- flush */

static pf_err flush(struct co *c, struct pf_co_assign *out, char *err)
{
    struct pf_k8s_topo *t = calloc((size_t)c->nm, sizeof(*t));
    int *gid = calloc((size_t)c->nm, sizeof(int));
    int *rank = calloc((size_t)c->nm, sizeof(int));
    struct pf_co_assign a = { 0 };
    int ngroups;
    pf_err rc = PF_OK;

    if (!t || !gid || !rank) {
        rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < c->nm; i++) {
        const struct pf_k8s_pool_node *v = view_node(c, c->m[i].node);
        t[i].node = c->m[i].node;
        for (int l = 0; l < 3; l++)
            t[i].layer[l] = v ? v->layer[l] : "";
    }
    ngroups = pf_k8s_topo_groups(t, c->nm, c->p->cfg->group_size, gid, rank);
    if (ngroups < 0) {
        rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    pf_info("coordinator: %d agent(s) of %s in %s: %d group(s) of up to %d",
            c->nm, c->p->pool.type[0] ? c->p->pool.type : "?",
            c->p->pool.zone[0] ? c->p->pool.zone : "?", ngroups,
            c->p->cfg->group_size);
    for (int gi = 0; gi < ngroups; gi++) {
        uint64_t h = pf_k8s_hash(c->p->pool.type,
                                 pf_k8s_hash(c->p->pool.zone, 0));
        int world = 0;

        for (int i = 0; i < c->nm; i++)
            world += gid[i] == gi;
        a.e = calloc((size_t)world, sizeof(*a.e));
        if (!a.e) {
            rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
            goto out;
        }
        a.world = world;
        h = pf_k8s_hash(c->l->identity, h);
        for (int i = 0; i < c->nm; i++) {
            struct pf_co_entry *e = &a.e[rank[i]];
            if (gid[i] != gi)
                continue;
            snprintf(e->host, sizeof(e->host), "%s", c->m[i].ip);
            snprintf(e->pod, sizeof(e->pod), "%s", c->m[i].pod);
            snprintf(e->node, sizeof(e->node), "%s", c->m[i].node);
        }
        for (int r = 0; r < world; r++)
            h = pf_k8s_hash(a.e[r].node, h);
        snprintf(a.run_id, sizeof(a.run_id), "ds-%016" PRIx64, h);
        for (int i = 0; i < c->nm; i++) {
            uint8_t *body;
            size_t len;
            char msg[PF_ERRLEN];

            if (gid[i] != gi)
                continue;
            a.rank = rank[i];
            if (c->m[i].c.fd < 0) {   /* our own group */
                *out = a;
                out->e = calloc((size_t)world, sizeof(*out->e));
                if (!out->e) {
                    rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
                    goto out;
                }
                memcpy(out->e, a.e, (size_t)world * sizeof(*a.e));
                continue;
            }
            if (pf_co_assign_encode(&a, c->p->secret, c->p->secret_len,
                                    c->m[i].nonce, &body, &len, msg) != PF_OK) {
                pf_warn("coordinator: could not assign %s: %s", c->m[i].node,
                        msg);
                continue;
            }
            /* A member that vanished now leaves a hole its group reports
             * as PeerTimeout: nothing better can be done this late. */
            if (pf_wire_send(&c->m[i].c, PF_CO_ASSIGN, body, len,
                             pf_deadline_in(CTRL_MS), msg) != PF_OK)
                pf_warn("coordinator: could not assign %s: %s", c->m[i].node,
                        msg);
            free(body);
        }
        pf_info("coordinator: group %d: %d node(s) from %s, run %s", gi + 1,
                world, a.e[0].node, a.run_id);
        pf_co_assign_free(&a);
    }
out:
    pf_co_assign_free(&a);
    free(t);
    free(gid);
    free(rank);
    return rc;
}

/* Cut now? Says why in why. */
static bool should_flush(struct co *c, int64_t now, int64_t start, char *why,
                         size_t len)
{
    int64_t earliest = INT64_MAX;

    for (int i = 0; i < c->nm; i++)
        if (c->m[i].wait_until < earliest)
            earliest = c->m[i].wait_until;
    if (earliest - now <= FLUSH_MARGIN_MS) {
        snprintf(why, len, "an agent stops waiting in %.1f s",
                 (double)(earliest - now) / 1000.0);
        return true;
    }
    if (now - start >= c->p->gather_ms) {
        snprintf(why, len, "gathered for %.1f s, %d agent(s) still starting",
                 (double)(now - start) / 1000.0, c->coming);
        return true;
    }
    if (c->coming == 0 && now - c->last_change >= QUIET_MS) {
        snprintf(why, len, "no pending node left to wait for");
        return true;
    }
    return false;
}

static void close_all(struct co *c)
{
    for (int i = 0; i < c->nm; i++)
        pf_conn_close(&c->m[i].c);
    for (int i = 0; i < c->ng; i++)
        pf_conn_close(&c->g[i].c);
    free(c->m);
    free(c->g);
    free(c->v);
    if (c->lfd >= 0) {
        struct pf_conn tmp;
        pf_conn_init(&tmp, c->lfd);
        pf_conn_close(&tmp);
    }
}

pf_err pf_co_coordinate(struct pf_co_pool *p, struct pf_lease *l,
                        int64_t wait_until, struct pf_co_assign *out,
                        bool *done, char *err)
{
    struct co c = { .p = p, .l = l, .lfd = -1 };
    int64_t start = pf_now_ms(), renew_period = l->duration_s * 1000 / 3;
    int64_t renew_at = start + renew_period, last_renew = start;
    int64_t beat_at = start + HEARTBEAT_MS;
    char msg[PF_ERRLEN], why[256];
    pf_err rc;

    *done = false;
    memset(out, 0, sizeof(*out));
    c.g = calloc(MAX_GREETINGS, sizeof(*c.g));
    if (!c.g)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    rc = pf_co_listen(p->cfg->bind_addr, p->port, &c.lfd, err);
    if (rc == PF_OK)
        rc = take_view(&c, err);
    if (rc == PF_OK)
        rc = add_member(&c, p->pool.node, p->pod, p->pod_ip, wait_until,
                        NULL, -1, err);
    if (rc != PF_OK) {
        pf_lease_release(p->pool.k, l, msg);
        close_all(&c);
        return rc;
    }
    pf_info("coordinator: %s holds lease %s/%s, listening on port %d",
            p->pod, l->ns, l->name, p->port);
    c.coming = count_coming(&c);
    c.last_change = start;

    for (long iter = 0; iter < LOOP_MAX; iter++) {
        int64_t now = pf_now_ms();
        struct pollfd *pfd;
        bool want_view = false;
        int n = 0, coming;

        if (now >= renew_at) {
            enum pf_lease_state st;
            rc = pf_lease_try(p->pool.k, l, now, &st, msg);
            if (rc == PF_OK && st == PF_LEASE_HELD) {
                last_renew = now;
                renew_at = now + renew_period;
            } else if (rc == PF_OK || now - last_renew > renew_period * 2) {
                pf_warn("coordinator: lost lease %s/%s%s%s; the agents "
                        "waiting here register again", l->ns, l->name,
                        rc != PF_OK ? ": " : "", rc != PF_OK ? msg : "");
                l->held = false;
                close_all(&c);
                return PF_OK;
            } else {
                pf_warn("coordinator: renewing lease %s/%s: %s", l->ns,
                        l->name, msg);
                renew_at = now + 1000;
            }
        }
        if (now - c.view_ms >= VIEW_MS && take_view(&c, msg) != PF_OK)
            pf_warn("coordinator: pool view: %s", msg);
        coming = count_coming(&c);
        if (coming != c.coming) {
            c.coming = coming;
            c.last_change = now;
        }
        if (should_flush(&c, now, start, why, sizeof(why))) {
            pf_info("coordinator: cutting groups: %s", why);
            rc = flush(&c, out, err);
            if (pf_lease_release(p->pool.k, l, msg) != PF_OK)
                pf_warn("coordinator: releasing lease %s/%s: %s", l->ns,
                        l->name, msg);
            close_all(&c);
            *done = rc == PF_OK;
            return rc;
        }

        pfd = calloc((size_t)(1 + c.ng + c.nm), sizeof(*pfd));
        if (!pfd) {
            close_all(&c);
            return pf_fail(err, PF_ERR_NOMEM, "out of memory");
        }
        pfd[n++] = (struct pollfd){ .fd = c.lfd, .events = POLLIN };
        for (int i = 0; i < c.ng; i++)
            if (!c.g[i].registered)
                pfd[n++] = (struct pollfd){ .fd = c.g[i].c.fd, .events = POLLIN };
        for (int i = 0; i < c.nm; i++)
            if (c.m[i].c.fd >= 0)
                pfd[n++] = (struct pollfd){ .fd = c.m[i].c.fd, .events = POLLIN };
        poll(pfd, (nfds_t)n, 200);
        free(pfd);

        now = pf_now_ms();
        accept_new(&c);
        rc = serve_greetings(&c, now, &want_view, err);
        if (rc != PF_OK) {
            pf_lease_release(p->pool.k, l, msg);
            close_all(&c);
            return rc;
        }
        if (want_view && now - c.view_ms >= VIEW_MIN_MS) {
            if (take_view(&c, msg) != PF_OK)
                pf_warn("coordinator: pool view: %s", msg);
            else
                rc = serve_greetings(&c, now, &want_view, err);
            if (rc != PF_OK) {
                pf_lease_release(p->pool.k, l, msg);
                close_all(&c);
                return rc;
            }
        }
        serve_members(&c, now >= beat_at);
        if (now >= beat_at)
            beat_at = now + HEARTBEAT_MS;
        if (pf_progress_due(p->progress, now))
            pf_progress_say(p->progress, now, "coordinating: %d agent(s) "
                            "registered, %d more node(s) expected", c.nm,
                            c.coming);
    }
    pf_lease_release(p->pool.k, l, msg);
    close_all(&c);
    return pf_fail(err, PF_ERR_API, "coordinator loop did not end");
}

/* --------------------------------------------------------------- member */

pf_err pf_co_join(struct pf_co_pool *p, const char *host, int64_t wait_until,
                  struct pf_co_assign *out, bool *done, char *err)
{
    struct pf_conn conn;
    struct pf_co_register reg = { 0 };
    uint8_t body[1024], challenge[PF_CO_NONCE];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    struct pf_rbuf rb;
    struct pf_msg m;
    char msg[PF_ERRLEN];
    int64_t now = pf_now_ms(), heard;
    int fd = -1;
    pf_err rc;

    *done = false;
    memset(out, 0, sizeof(*out));
    rc = pf_co_dial(host, p->port, p->pod_ip,
                    now + 3000 < wait_until ? now + 3000 : wait_until, &fd,
                    msg);
    if (rc != PF_OK)
        return pf_fail(err, PF_ERR_LOST, "coordinator %s:%d: %s", host,
                       p->port, msg);
    pf_conn_init(&conn, fd);
    rc = pf_wire_recv(&conn, &m, pf_deadline_in(CHALLENGE_MS), msg);
    if (rc != PF_OK) {
        pf_conn_close(&conn);
        return pf_fail(err, PF_ERR_LOST, "coordinator %s:%d sent no "
                       "challenge: %s", host, p->port, msg);
    }
    rb = (struct pf_rbuf){ m.body, m.len, 0, false };
    if (m.type != PF_CO_CHALLENGE || pf_get_u32(&rb) != PF_CO_MAGIC ||
        pf_get_u16(&rb) != PF_CO_VERSION) {
        pf_conn_close(&conn);
        return pf_fail(err, PF_ERR_LOST, "%s:%d is not an efa-preflight "
                       "coordinator of this version", host, p->port);
    }
    pf_get_bytes(&rb, challenge, sizeof(challenge));
    snprintf(reg.node, sizeof(reg.node), "%s", p->pool.node);
    snprintf(reg.pod, sizeof(reg.pod), "%s", p->pod);
    now = pf_now_ms();
    reg.wait_ms = wait_until > now ? (uint32_t)(wait_until - now) : 0;
    pf_seal_nonce(reg.nonce);
    rc = pf_co_register_encode(&reg, p->secret, p->secret_len, challenge, &w,
                               err);
    if (rc == PF_OK)
        rc = pf_wire_send(&conn, PF_CO_REGISTER, body, w.len,
                          pf_deadline_in(CTRL_MS), msg) == PF_OK
                 ? PF_OK
                 : pf_fail(err, PF_ERR_LOST, "registering with %s: %s", host,
                           msg);
    heard = pf_now_ms();
    for (long iter = 0; rc == PF_OK && iter < LOOP_MAX; iter++) {
        int64_t until = heard + SILENCE_MS < wait_until ? heard + SILENCE_MS
                                                        : wait_until;
        char reason[48];

        rc = pf_wire_recv(&conn, &m, until, msg);
        if (rc == PF_ERR_TIMEOUT) {
            rc = pf_fail(err, PF_ERR_LOST, pf_now_ms() >= wait_until
                         ? "no group from coordinator %s before this agent's "
                           "wait ended"
                         : "coordinator %s went silent", host);
            break;
        }
        if (rc != PF_OK) {
            rc = pf_fail(err, PF_ERR_LOST, "coordinator %s: %s", host, msg);
            break;
        }
        heard = pf_now_ms();
        if (m.type == PF_CO_WAIT) {
            rb = (struct pf_rbuf){ m.body, m.len, 0, false };
            uint32_t registered = pf_get_u32(&rb);
            if (!rb.bad && pf_progress_due(p->progress, heard))
                pf_progress_say(p->progress, heard, "registered with "
                                "coordinator %s, %u agent(s) there so far",
                                host, registered);
            continue;
        }
        if (m.type == PF_CO_ASSIGN) {
            rc = pf_co_assign_decode(m.body, m.len, p->secret, p->secret_len,
                                     reg.nonce, out, err);
            if (rc == PF_OK)
                *done = true;
            else
                pf_err_prefix(err, "coordinator %s", host);
            break;
        }
        if (m.type == PF_CO_REJECT) {
            rb = (struct pf_rbuf){ m.body, m.len, 0, false };
            pf_get_str(&rb, reason, sizeof(reason));
            pf_get_str(&rb, msg, sizeof(msg));
            rc = pf_fail(err, PF_ERR_REJECTED, "coordinator %s refused this "
                         "agent: %s", host, rb.bad ? "(malformed)" : msg);
            break;
        }
        rc = pf_fail(err, PF_ERR_PROTOCOL, "unexpected message type %u from "
                     "coordinator %s", m.type, host);
    }
    pf_conn_close(&conn);
    return rc;
}
