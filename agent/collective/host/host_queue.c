/* Host engine queues (host.h): each rail's completion queue, read by
 * whoever drives the rail (the caller's thread, or the rail's own during
 * an all_reduce). A completion sets a handshake flag or moves its column
 * on (host_cols.c); a queue's error entry becomes a message naming the
 * peer and the NIC; a wait sleeps on the queues' fds once spinning stops
 * paying, watches the deadline, and asks the bootstrap about peers. */
#include "host.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "../../util/clock.h"

static void on_complete(struct host *h, struct host_op *op)
{
    switch (op->kind) {
    case OP_HS_SEND: op->rail->hs_send_done = true; return;
    case OP_HS_RECV: op->rail->hs_recv_done = true; return;
    case OP_SEND: op->col->send_done = true; break;
    case OP_RECV: op->col->recv_done = true; break;
    }
    pf_host_col_advance(h, op->col);
}

/* FI_ECANCELED too: the engine cancels nothing while it runs, so a
 * canceled operation is one the provider dropped with its connection
 * (tcp cancels a send still waiting for the peer's acknowledgement). */
static bool is_conn_error(int e)
{
    return e == FI_ECONNRESET || e == FI_ECONNREFUSED || e == FI_ECANCELED ||
           e == FI_ECONNABORTED || e == FI_ENOTCONN || e == EPIPE ||
           e == FI_EHOSTUNREACH || e == FI_ENETUNREACH || e == FI_EIO;
}

/* The error entry of rail r's queue as a message. Only the caller's
 * thread (boot true) asks the bootstrap whether a peer died, which names
 * it; a rail thread leaves that to the caller (allreduce). */
static pf_err cq_error(struct host *h, struct host_rail *r, const char *what,
                       bool boot, char *err)
{
    struct fi_cq_err_entry ee;
    char detail[160] = "", nic[80] = "";
    struct host_op *op;
    bool to_right;
    int peer;

    memset(&ee, 0, sizeof(ee));
    if (fi_cq_readerr(r->cq, &ee, 0) < 0)
        return pf_fail(err, PF_ERR_ENGINE, "%s: fi_cq_readerr failed", what);
    /* A dead peer usually shows on the bootstrap too, which names it. */
    if (boot && pf_boot_poll(h->boot, err) != PF_OK) {
        pf_err_prefix(err, "%s", what);
        return PF_ERR_LOST;
    }
    op = ee.op_context;
    to_right = op && (op->kind == OP_SEND || op->kind == OP_HS_SEND);
    peer = (h->rank + (to_right ? 1 : h->n - 1)) % h->n;
    if (h->pair_peer >= 0)
        peer = h->pair_peer;
    fi_cq_strerror(r->cq, ee.prov_errno, ee.err_data, detail, sizeof(detail));
    if (h->nnics > 1)
        snprintf(nic, sizeof(nic), " on NIC %s", r->name);
    return pf_fail(err, is_conn_error(ee.err) ? PF_ERR_LOST : PF_ERR_ENGINE,
                   "%s: %s rank %d failed over %s%s: %s (%s)", what,
                   to_right ? "send to" : "receive from", peer,
                   h->provider, nic, h->fi.strerror(ee.err), detail);
}

/* Nothing completed on rails[0..nr). For the first PF_HOST_SPIN_US keep
 * polling, yielding to other ranks that share these cores: the next
 * message is usually that close, and waking a halted (virtual) CPU costs
 * tens of us per hop of a rendezvous. After that, sleep on the queues'
 * fds when the provider says it is safe (fi_trywait), with our own bound;
 * else yield. (Not fi_cq_sread: shm's ignores its timeout.) */
static void idle(struct host_rail *rails, int nr, double *idle_since,
                 int64_t left_ms)
{
    struct pollfd pfd[PF_MAX_EFA];
    double now = pf_now_s();
    int k;

    if (*idle_since == 0)
        *idle_since = now;
    if (now - *idle_since < PF_HOST_SPIN_US * 1e-6) {
        sched_yield();
        return;
    }
    /* Sleep only when every queue has an fd and says it is safe. */
    for (k = 0; k < nr; k++) {
        struct host_rail *r = &rails[k];
        struct fid *fids[1] = { &r->cq->fid };
        if (r->wait_fd < 0 || fi_trywait(r->fabric, fids, 1) != FI_SUCCESS)
            break;
        pfd[k].fd = r->wait_fd;
        pfd[k].events = POLLIN;
        pfd[k].revents = 0;
    }
    if (k == nr) {
        poll(pfd, (nfds_t)nr,
             (int)(left_ms < PF_HOST_WAIT_MS ? left_ms : PF_HOST_WAIT_MS));
        return;
    }
    sched_yield();
}

/* ", waiting on NIC a, b" for the NICs with work outstanding on any of
 * their lanes. */
static void busy_rails(const struct host *h, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    if (h->nnics < 2)
        return;
    for (int nic = 0; nic < h->nnics && used < len; nic++) {
        const char *name = NULL;
        int n;

        for (int k = 0; k < h->nrails; k++) {
            const struct host_rail *r = &h->rails[k];
            if (r->nic == nic &&
                (r->pair_busy || r->done_chunks < r->nchunks ||
                 !r->hs_send_done || !r->hs_recv_done))
                name = r->name;
        }
        if (!name)
            continue;
        n = snprintf(out + used, len - used, "%s%s", used ? ", " : ", "
                     "waiting on NIC ", name);
        if (n > 0)
            used += (size_t)n;
    }
}

pf_err pf_host_deadline_passed(const struct host *h, const char *what,
                               char *err)
{
    char busy[256];

    busy_rails(h, busy, sizeof(busy));
    if (h->pair_peer >= 0)
        return pf_fail(err, PF_ERR_TIMEOUT,
                       "%s: not finished by the deadline over %s "
                       "(exchanging with rank %d%s)", what, h->provider,
                       h->pair_peer, busy);
    return pf_fail(err, PF_ERR_TIMEOUT,
                   "%s: not finished by the deadline over %s (sending to "
                   "rank %d, receiving from rank %d%s)", what,
                   h->provider, (h->rank + 1) % h->n,
                   (h->rank + h->n - 1) % h->n, busy);
}

/* Read one batch of rail r's completions; *any when there were some. */
static pf_err rail_read(struct host *h, struct host_rail *r, const char *what,
                        bool boot, bool *any, char *err)
{
    struct fi_cq_entry ent[16];
    ssize_t got = fi_cq_read(r->cq, ent, 16);

    if (got > 0) {
        *any = true;
        for (ssize_t i = 0; i < got; i++)
            on_complete(h, ent[i].op_context);
    } else if (got == -FI_EAVAIL) {
        return cq_error(h, r, what, boot, err);
    } else if (got != -FI_EAGAIN) {
        return pf_fail(err, PF_ERR_ENGINE, "%s: fi_cq_read (%s): %s",
                       what, h->provider, h->fi.strerror((int)-got));
    }
    return PF_OK;
}

/* Caller's thread only: the bootstrap, every PF_HOST_BOOT_POLL_MS. */
pf_err pf_host_boot_check(struct host *h, int64_t now, const char *what,
                          char *err)
{
    if (now >= h->next_boot_poll) {
        pf_err rc = pf_boot_poll(h->boot, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "%s", what);
            return rc;
        }
        h->next_boot_poll = now + PF_HOST_BOOT_POLL_MS;
    }
    return PF_OK;
}

pf_err pf_host_progress(struct host *h, int64_t deadline, const char *what,
                        char *err)
{
    bool any = false;
    int64_t now;
    pf_err rc;

    for (int k = 0; k < h->nrails; k++)
        if ((rc = rail_read(h, &h->rails[k], what, true, &any, err)) != PF_OK)
            return rc;
    if (any)
        h->idle_since = 0;
    /* Checked on every call, busy or not: a fabric that crawls must stop
     * at the deadline too, and a lost peer shows even while the other
     * neighbour still delivers. */
    now = pf_now_ms();
    if ((rc = pf_host_boot_check(h, now, what, err)) != PF_OK)
        return rc;
    if (now >= deadline)
        return pf_host_deadline_passed(h, what, err);
    if (!any)
        idle(h->rails, h->nrails, &h->idle_since, deadline - now);
    return PF_OK;
}

pf_err pf_host_wait_handshake(struct host *h, int64_t deadline,
                              const char *what, char *err)
{
    for (;;) {
        bool done = true;
        for (int k = 0; k < h->nrails; k++)
            done = done && h->rails[k].hs_send_done &&
                   h->rails[k].hs_recv_done;
        if (done)
            return PF_OK;
        pf_err rc = pf_host_progress(h, deadline, what, err);
        if (rc != PF_OK)
            return rc;
    }
}

/* Rail r's share of the all_reduce in progress: post its columns, read
 * its queue, until its last chunk has gone through every step. main: the
 * caller's thread, which also watches the bootstrap; a rail thread
 * watches h->stop instead. A deadline here is reported by the caller,
 * which names every rail still busy. */
pf_err pf_host_rail_run(struct host *h, struct host_rail *r, bool main,
                        char *err)
{
    r->idle_since = 0;
    while (r->done_chunks < r->nchunks) {
        bool any = false;
        int64_t now;
        pf_err rc;

        for (int i = 0; i < h->depth; i++) {
            struct host_col *c = &r->cols[i];
            if (c->active && (!c->recv_posted || !c->send_posted) &&
                (rc = pf_host_col_post(h, c, err)) != PF_OK)
                return rc;
        }
        if ((rc = rail_read(h, r, h->what, main, &any, err)) != PF_OK)
            return rc;
        if (any) {
            r->idle_since = 0;
            continue;
        }
        now = pf_now_ms();
        if (main && (rc = pf_host_boot_check(h, now, h->what, err)) != PF_OK)
            return rc;
        if (!main && atomic_load_explicit(&h->stop, memory_order_relaxed))
            return pf_fail(err, PF_ERR_LOST, "%s: stopped", h->what);
        if (now >= h->deadline)
            return PF_ERR_TIMEOUT;
        idle(r, 1, &r->idle_since, h->deadline - now);
    }
    return PF_OK;
}

pf_err pf_host_post(struct host *h, struct host_rail *r, bool recv,
                    void *buf, size_t bytes, void *desc, fi_addr_t to,
                    uint64_t tag, int64_t deadline, const char *what,
                    char *err)
{
    struct host_op *op = &r->hs_ops[recv ? 1 : 0];
    ssize_t rc;

    op->col = NULL;
    op->rail = r;
    op->kind = recv ? OP_HS_RECV : OP_HS_SEND;
    for (;;) {
        if (recv)
            rc = fi_trecv(r->ep, buf, bytes, desc, FI_ADDR_UNSPEC, tag, 0,
                          &op->ctx);
        else
            rc = fi_tsend(r->ep, buf, bytes, desc, to, tag, &op->ctx);
        if (rc == 0)
            return PF_OK;
        if (rc != -FI_EAGAIN)
            return pf_fail(err, PF_ERR_ENGINE, "%s: %s (%s): %s", what,
                           recv ? "fi_trecv" : "fi_tsend", h->provider,
                           h->fi.strerror((int)-rc));
        pf_err prc = pf_host_progress(h, deadline, what, err);
        if (prc != PF_OK)
            return prc;
    }
}
