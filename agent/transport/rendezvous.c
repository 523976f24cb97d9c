/* rendezvous: the group operations after the join (allgather, bcast,
 * barrier through rank 0; poll, abort, close) and pf_rdv_open. The rest
 * of the rendezvous sits below this file and never calls back into it:
 *   rdv_root.c, rdv_join.c  joining (CHALLENGE/HELLO/WELCOME; rdv_hello.c
 *                           the HELLO itself, rdv_door.c rank 0's
 *                           listener after the table);
 *   rdv_census.c            who still answers: PING/PONG, the heartbeat's
 *                           silence check;
 *   rdv_bye.c               the orderly close;
 *   rdv_group.c             the members' names, who owes no answer, the
 *                           reason frames and the group failing for good;
 *   rdv_beat.c              the heartbeat thread and the send locks. */
#include "rendezvous.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "rdv_impl.h"

#define ATTRIBUTE_MS 500      /* abort: wait this long for a cause elsewhere */
#define SLICE_MS 200          /* waits look at the heartbeat this often */
/* Wire reason of an ABORT from a rank that gave up on its own. Not a
 * reason anyone reports (hence not CamelCase): receivers report PeerLost
 * (pf_rdv_reason_err). */
#define ABORT_OWN "gave-up"
#define OP_GATHER 1
#define OP_BCAST 2
#define DATA_HEAD 5           /* u8 op + u32 seq */
/* Largest group whose peer table can fit one frame (an entry is at least
 * 16 bytes). */
#define MAX_WORLD ((int)(PF_WIRE_MAX_FRAME / 16))

static const struct pf_boot_ops rdv_ops;

/* ------------------------------------------------------------- helpers */

/* The send buffer of a DATA frame, grown to the largest so far. */
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

/* Frames any wait answers on the way, wherever they arrive
 * (rdv_control, rdv_census.c). */
static bool is_control(uint8_t type)
{
    return type == PF_RDV_PING || type == PF_RDV_PONG || type == PF_RDV_BEAT;
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
    rdv_lock(r, to);
    rc = pf_wire_send(&r->conns[to], PF_RDV_DATA, body, w.len, deadline, msg);
    rdv_unlock(r, to);
    if (rc == PF_OK)
        return PF_OK;
    return rdv_broke(r, rc == PF_ERR_TIMEOUT ? PF_ERR_TIMEOUT : PF_ERR_LOST, to,
                     err, "%s: sending %s #%u failed: %s", rdv_who(r, to, name),
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
        return rdv_from_abort(r, m, from, err);
    if (m->type == PF_RDV_BYE)
        return rdv_broke(r, PF_ERR_LOST, from, err, "%s closed the group while "
                         "others still ran collective call #%u",
                         rdv_who(r, from, name), r->seq);
    got_op = pf_get_u8(&rb);
    seq = pf_get_u32(&rb);
    if (m->type != PF_RDV_DATA || rb.bad || got_op != op || seq != r->seq ||
        m->len - DATA_HEAD != len)
        return rdv_broke(r, PF_ERR_PROTOCOL, from, err, "%s is out of step: "
                         "expected %s #%u of %zu bytes, got message type %u op %u "
                         "#%u of %zu bytes", rdv_who(r, from, name),
                         op == OP_GATHER ? "allgather" : "bcast", r->seq, len,
                         m->type, got_op, seq,
                         m->len >= DATA_HEAD ? m->len - DATA_HEAD : 0);
    if (len)
        memcpy(dst, m->body + DATA_HEAD, len);
    return PF_OK;
}

/* Rank 0: wait for a DATA frame from `only` (or every peer when only < 0),
 * watching every connection so a dead or aborting rank ends the wait. Only
 * connections with something new are read: O(ready) system calls per
 * wake-up, not O(world). */
static pf_err root_collect(struct rdv *r, uint8_t op, int only, uint8_t *dst,
                           size_t len, int64_t deadline, char *err)
{
    int world = r->boot.world, need = only >= 0 ? 1 : world - 1;
    bool *got = calloc((size_t)world, sizeof(bool));
    struct pollfd *pfds = calloc((size_t)world, sizeof(*pfds));
    int *who = calloc((size_t)world, sizeof(int));
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc = PF_OK;

    if (!got || !pfds || !who) {
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
                rc = rdv_broke(r, PF_ERR_LOST, i, err, "%s already closed the "
                               "group", rdv_who(r, i, name));
                goto out;
            }
            for (;;) {
                t = pf_wire_take(&r->conns[i], &m, msg);
                if (t != 1 || !is_control(m.type))
                    break;
                rdv_control(r, i, m.type, m.body, m.len);
            }
            if (t < 0) {
                rc = rdv_broke(r, PF_ERR_PROTOCOL, i, err, "%s: %s",
                               rdv_who(r, i, name), msg);
                goto out;
            }
            if (t == 0)
                continue;
            rc = take_data(r, i, &m, op,
                           only >= 0 ? dst : dst + (size_t)i * len, len, err);
            if (rc != PF_OK)
                goto out;
            got[i] = true;
            need--;
        }
        if (need == 0)
            break;
        if ((rc = rdv_census_step(r, err)) != PF_OK ||
            (rc = rdv_check_silent(r, err)) != PF_OK)
            goto out;
        left = pf_ms_left(deadline);
        if (left <= 0) {
            char missing[PF_ERRLEN - 160];
            bool *done = got;
            if (only >= 0) {
                for (int i = 1; i < world; i++)
                    got[i] = i != only;
            }
            rdv_missing_list(r, done, missing, sizeof(missing));
            rc = rdv_broke(r, PF_ERR_TIMEOUT, -1, err, "%s did not reach %s #%u "
                           "before the deadline", missing,
                           op == OP_GATHER ? "allgather" : "bcast", r->seq);
            goto out;
        }
        for (int i = 1; i < world; i++) {
            if (r->conns[i].fd < 0)
                continue;
            who[n] = i;
            pfds[n++] = (struct pollfd){ .fd = r->conns[i].fd,
                                         .events = POLLIN };
        }
        if (poll(pfds, (nfds_t)n, left > 200 ? 200 : (int)left) < 0 &&
            errno != EINTR) {
            rc = pf_fail(err, PF_ERR_SYS, "poll: %s", strerror(errno));
            goto out;
        }
        for (int k = 0; k < n; k++) {
            int i = who[k];
            struct pf_msg m;
            if (!pfds[k].revents)
                continue;
            if (pf_wire_pump(&r->conns[i], msg) != PF_OK &&
                !pf_wire_has(&r->conns[i], PF_RDV_DATA, &m)) {
                if (pf_wire_has(&r->conns[i], PF_RDV_ABORT, &m)) {
                    rc = rdv_from_abort(r, &m, i, err);
                    goto out;
                }
                rc = rdv_broke(r, PF_ERR_LOST, i, err, "%s closed its connection "
                               "(exited or was killed) during %s #%u",
                               rdv_who(r, i, name),
                               op == OP_GATHER ? "allgather" : "bcast", r->seq);
                goto out;
            }
            rdv_control_in(r, i);
            if (pf_wire_has(&r->conns[i], PF_RDV_ABORT, &m) &&
                (got[i] || (only >= 0 && i != only))) {
                rc = rdv_from_abort(r, &m, i, err);
                goto out;
            }
        }
    }
out:
    free(got);
    free(pfds);
    free(who);
    return rc;
}

/* Any rank but 0: the next frame from rank 0 must be this op's DATA
 * (PINGs are answered and BEATs taken on the way). */
static pf_err peer_receive(struct rdv *r, uint8_t op, void *dst, size_t len,
                           int64_t deadline, char *err)
{
    struct pf_msg m;
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc;

    for (;;) {
        /* In slices, so a rank 0 that went silent is named long before
         * the deadline. */
        int64_t slice = pf_deadline_in(SLICE_MS);
        rc = pf_wire_recv(&r->conns[0], &m, slice < deadline ? slice : deadline,
                          msg);
        if (rc == PF_ERR_TIMEOUT && pf_ms_left(deadline) > 0) {
            pf_err bc = rdv_check_silent(r, err);
            if (bc != PF_OK)
                return bc;
            continue;
        }
        if (rc != PF_OK || !is_control(m.type))
            break;
        rdv_control(r, 0, m.type, m.body, m.len);
    }
    if (rc == PF_ERR_TIMEOUT)
        return rdv_broke(r, PF_ERR_TIMEOUT, -1, err, "%s did not complete %s #%u "
                         "before the deadline", rdv_who(r, 0, name),
                         op == OP_GATHER ? "allgather" : "bcast", r->seq);
    if (rc == PF_ERR_LOST)
        return rdv_broke(r, PF_ERR_LOST, -1, err, "%s closed its connection "
                         "(exited or was killed) during %s #%u",
                         rdv_who(r, 0, name),
                         op == OP_GATHER ? "allgather" : "bcast", r->seq);
    if (rc != PF_OK)
        return rdv_broke(r, PF_ERR_PROTOCOL, -1, err, "%s: %s",
                         rdv_who(r, 0, name), msg);
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

    rdv_touch(r, false);
    if (rc != PF_OK)
        return rc;
    if (len)
        memcpy((uint8_t *)all + (size_t)b->rank * len, mine, len);
    if (b->world == 1)
        return PF_OK;
    r->seq++;
    if (b->rank != 0) {
        rc = send_data(r, 0, OP_GATHER, mine, len, deadline, err);
        if (rc != PF_OK)
            return rc;
        return peer_receive(r, OP_GATHER, all, total, deadline, err);
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

    rdv_touch(r, false);
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

/* Non-blocking look at every connection: EOF without BYE, or an ABORT;
 * PINGs are answered and a census moves on. deaths_only ignores ranks
 * that gave up on their own (ABORT gave-up): while this rank is aborting
 * for its own reason, only a dead or silent peer may take the blame. One
 * poll(2) for the whole group, a read only where something arrived. */
static pf_err poll_conns(struct rdv *r, bool deaths_only, char *err)
{
    struct pf_boot *b = &r->boot;
    int first = b->rank == 0 ? 1 : 0, last = b->rank == 0 ? b->world : 1;
    struct pollfd one, *pfds = &one;
    int n = 0;
    char msg[PF_ERRLEN], name[WHO_LEN];
    pf_err rc = PF_OK;

    if (r->broken != PF_OK)
        return pf_fail(err, r->broken, "%s", r->broken_msg);
    if (last - first > 1 && !(pfds = calloc((size_t)(last - first),
                                            sizeof(*pfds))))
        return pf_fail(err, PF_ERR_NOMEM, "no memory");
    for (int i = first; i < last; i++)
        pfds[n++] = (struct pollfd){
            .fd = r->conns[i].fd < 0 || (b->rank == 0 && r->bye[i])
                      ? -1 : r->conns[i].fd,
            .events = POLLIN };
    if (poll(pfds, (nfds_t)n, 0) < 0 && errno != EINTR)
        n = 0;
    for (int k = 0; k < n && rc == PF_OK; k++) {
        int i = first + k;
        struct pf_conn *c = &r->conns[i];
        struct pf_msg m;
        bool closed = false;

        if (pfds[k].fd < 0)
            continue;
        if (pfds[k].revents)
            closed = pf_wire_pump(c, msg) != PF_OK;
        rdv_control_in(r, i);
        if (pf_wire_has(c, PF_RDV_ABORT, &m)) {
            char reason[48], text[PF_ERRLEN];
            rdv_read_reason(&m, reason, text);
            if (deaths_only && !strcmp(reason, ABORT_OWN)) {
                /* Rank 0 gave up on its own after its census: nobody
                 * silent is left to name. */
                if (b->rank != 0)
                    r->settled = true;
                continue;
            }
            rc = rdv_from_abort(r, &m, i, err);
            break;
        }
        if (pf_wire_has(c, PF_RDV_BYE, &m)) {
            if (b->rank == 0)
                r->bye[i] = true;
            else
                r->settled = true;
            continue;
        }
        if (closed)
            rc = rdv_broke(r, PF_ERR_LOST, i, err, "%s closed its connection "
                           "(exited or was killed)", rdv_who(r, i, name));
    }
    if (pfds != &one)
        free(pfds);
    if (rc == PF_OK)
        rc = rdv_census_step(r, err);
    if (rc == PF_OK)
        rc = rdv_check_silent(r, err);
    return rc;
}

/* An engine waiting on the fabric calls this every few ms: the heartbeat
 * reports the time since as this rank's stall. */
static pf_err rdv_poll(struct pf_boot *b, char *err)
{
    rdv_touch(impl(b), true);
    return poll_conns(impl(b), false, err);
}

/* Giving up. A fabric error is often a peer that died or stopped: before
 * this rank reports its own symptom, the group gets a moment to say
 * which. Rank 0 runs a census; the others ask rank 0 for one and wait for
 * its answer (PONG {0}: everyone is there) or its ABORT naming the rank
 * at fault; a rank 0 that answers nothing is itself the one named. */
static void rdv_abort(struct pf_boot *b, const char *why)
{
    struct rdv *r = impl(b);
    char msg[PF_ERRLEN], name[WHO_LEN];
    int64_t start = pf_now_ms();

    rdv_touch(r, false);
    if (r->broken != PF_OK)
        return;
    if (b->rank == 0) {
        rdv_census_start(r);
    } else {
        /* Nobody left to ask when rank 0 has closed already. */
        r->settled = r->conns[0].fd < 0;
        rdv_send_u32(r, 0, PF_RDV_PING, ++r->asked_seq);
    }
    for (;;) {
        int64_t spent;
        bool settled = b->rank == 0 ? !r->census_on : r->settled;

        if (poll_conns(r, true, NULL) != PF_OK)
            return;               /* recorded (and spread by rank 0) */
        spent = pf_now_ms() - start;
        if (settled && spent >= ATTRIBUTE_MS)
            break;
        /* Rank 0's census takes PF_RDV_CENSUS_MS; past that and a margin
         * for its poll cadence, its silence is the answer. */
        if (b->rank != 0 && spent >= PF_RDV_CENSUS_MS + ATTRIBUTE_MS) {
            rdv_broke(r, PF_ERR_TIMEOUT, -1, NULL, "%s stopped answering: no "
                      "reply within %.1f s although its connection is open "
                      "(process stopped or hung, or its host froze)",
                      rdv_who(r, 0, name),
                      (PF_RDV_CENSUS_MS + ATTRIBUTE_MS) / 1000.0);
            return;
        }
        pf_sleep_ms(10);
    }
    snprintf(msg, sizeof(msg), "%s gave up: %s", rdv_who(r, b->rank, name),
             why);
    r->broken = PF_ERR_LOST;
    snprintf(r->broken_msg, sizeof(r->broken_msg), "%s", msg);
    if (b->rank == 0)
        rdv_spread_abort(r, -1, ABORT_OWN, msg);
    else if (r->conns[0].fd >= 0) {
        rdv_lock(r, 0);
        rdv_send_reason(&r->conns[0], PF_RDV_ABORT, ABORT_OWN, msg,
                        pf_deadline_in(CTRL_MS));
        rdv_unlock(r, 0);
    }
}

static void rdv_close(struct pf_boot *b)
{
    struct rdv *r;
    int n;

    if (!b)
        return;
    r = impl(b);
    rdv_door_close(r->door);
    /* An orderly goodbye, so nobody mistakes this close for a crash and
     * nobody loses what was still on its way; after a failure, no BYE:
     * the others must see it. */
    if (r->broken == PF_OK)
        rdv_goodbye(r);
    rdv_beat_stop(r);                 /* no sends but ours from here */
    n = b->rank == 0 ? b->world : 1;
    for (int i = 0; i < n; i++)
        if (r->conns[i].fd >= 0)
            pf_conn_close(&r->conns[i]);
    free(r->conns);
    free(r->bye);
    free(r->facts);
    free(r->alive);
    free(r->asked);
    free(r->stall);
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

/* Rank 0 holds a connection per rank: raise the soft RLIMIT_NOFILE as far
 * as the hard limit when the group needs more, or name the limit to
 * raise. */
static pf_err fd_budget(int world, char *err)
{
    long need = rdv_root_fds(world);
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= (rlim_t)need)
        return PF_OK;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need)
        return pf_fail(err, PF_ERR_USAGE, "rank 0 of %d ranks needs about %ld "
                       "open files, but RLIMIT_NOFILE allows %llu (hard "
                       "limit): raise it (ulimit -n, or the container "
                       "runtime's nofile limit)", world, need,
                       (unsigned long long)rl.rlim_max);
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY ? rl.rlim_max : (rlim_t)need;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        return pf_fail(err, PF_ERR_USAGE, "rank 0 of %d ranks needs about %ld "
                       "open files and cannot raise RLIMIT_NOFILE to %llu: %s",
                       world, need, (unsigned long long)rl.rlim_cur,
                       strerror(errno));
    pf_info("rendezvous: open-file limit raised to %llu for %d ranks",
            (unsigned long long)rl.rlim_cur, world);
    return PF_OK;
}

pf_err pf_rdv_open(const struct pf_rdv_cfg *cfg, struct pf_boot **out,
                   struct pf_rdv_facts *table, char *err)
{
    struct rdv *r;
    pf_err rc;

    *out = NULL;
    if (cfg->world < 1 || cfg->rank < 0 || cfg->rank >= cfg->world)
        return pf_fail(err, PF_ERR_USAGE, "rank %d of %d ranks is outside "
                       "0..%d", cfg->rank, cfg->world, cfg->world - 1);
    /* The peer table travels in one frame: that, not a constant, is the
     * end of the group's size. */
    if (cfg->world > MAX_WORLD)
        return pf_fail(err, PF_ERR_USAGE, "a group of %d ranks cannot be "
                       "described in one rendezvous frame (at most %d ranks)",
                       cfg->world, MAX_WORLD);
    if (cfg->world > 1 && (cfg->root_port < 1 || cfg->root_port > 65535))
        return pf_fail(err, PF_ERR_USAGE, "rendezvous port %d is outside "
                       "1..65535", cfg->root_port);
    if (cfg->rank == 0 && cfg->world > 1 &&
        (rc = fd_budget(cfg->world, err)) != PF_OK)
        return rc;
    r = calloc(1, sizeof(*r));
    if (!r)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
    r->conns = calloc((size_t)cfg->world, sizeof(*r->conns));
    r->bye = calloc((size_t)cfg->world, sizeof(bool));
    r->facts = calloc((size_t)cfg->world, sizeof(*r->facts));
    r->alive = calloc((size_t)cfg->world, sizeof(bool));
    r->asked = calloc((size_t)cfg->world, sizeof(bool));
    if (!r->conns || !r->bye || !r->facts || !r->alive || !r->asked) {
        free(r->conns);
        free(r->bye);
        free(r->facts);
        free(r->alive);
        free(r->asked);
        free(r);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous");
    }
    r->boot.ops = &rdv_ops;
    r->boot.rank = cfg->rank;
    r->boot.world = cfg->world;
    r->boot.impl = r;
    r->fault = cfg->fault;
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
        rc = rdv_root_join(r, cfg, err);
    else
        rc = rdv_peer_join(r, cfg, err);
    if (rc != PF_OK) {
        r->broken = rc;               /* no BYE: the others must see it */
        rdv_close(&r->boot);
        return rc;
    }
    r->silent_ms = cfg->silent_ms > 0 ? cfg->silent_ms : PF_RDV_SILENT_MS;
    r->deadline = cfg->deadline;
    if ((rc = rdv_beat_start(r, cfg->beat_ms, err)) != PF_OK) {
        r->broken = rc;
        rdv_close(&r->boot);
        return rc;
    }
    if (table)
        memcpy(table, r->facts, (size_t)cfg->world * sizeof(*table));
    *out = &r->boot;
    return PF_OK;
}

