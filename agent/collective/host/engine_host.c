/* The host engine: ring reduce-scatter + all-gather of float32 host
 * buffers over libfabric RDM endpoints (host.h, host_ep.c), striped over
 * one endpoint per NIC (rails): chunk c travels on rail c % nrails, and
 * each rail has its own columns, so each NIC's share is timed alone.
 *
 * Tagged messages rather than plain ones: the tag carries (all_reduce
 * number, step, chunk), so several chunks of several steps can be in
 * flight and each lands in its own buffer whatever order the provider
 * delivers them in, and an early message of the next all_reduce can never
 * match a receive of this one. */
#include "../engine.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "host.h"
#include "reduce.h"
#include "ring.h"
#include "../../util/clock.h"
#include "../../util/log.h"

#define TAG_SEQ_MASK 0x7fffffu        /* bit 63 is the handshake's */
#define TAG_CHUNK_MASK 0xffffffu
#define CORRUPT_STRIDE 1024           /* --debug-corrupt-rank: 1 in 1024 */
#define PATTERN_PERIOD 31             /* pf_pattern repeats every 31 */
/* Pairwise re-test messages carry this step, which no ring step reaches
 * (host_open keeps 2n-3, the last ring step, below it), so they never match
 * a ring receive. */
#define PAIR_STEP 0xffff
/* The most ranks whose ring steps fit the tag's 16-bit step field. */
#define TAG_RING_RANKS ((PAIR_STEP + 2) / 2)   /* 2n-3 < PAIR_STEP */

static uint64_t make_tag(uint32_t seq, int step, uint64_t chunk)
{
    return ((uint64_t)(seq & TAG_SEQ_MASK) << 40) |
           ((uint64_t)step << 24) | (chunk & TAG_CHUNK_MASK);
}

void *pf_host_desc(const struct host_rail *r, const struct host *h,
                   const void *ptr)
{
    const char *p = ptr;
    size_t data = (size_t)(h->max_count ? h->max_count : 1) * sizeof(float);

    if (p >= (const char *)h->sendbuf && p < (const char *)h->sendbuf + data)
        return r->desc[0];
    if (p >= (const char *)h->recvbuf && p < (const char *)h->recvbuf + data)
        return r->desc[1];
    return r->desc[2];
}

/* Chunks of rail r when an operation has nchunks: r, r + nrails, ... */
static uint64_t rail_chunks(uint64_t nchunks, int nrails, int r)
{
    return nchunks > (uint64_t)r ? (nchunks - 1 - (uint64_t)r) / (uint64_t)nrails + 1
                                 : 0;
}

/* Chunks of an all_reduce: of at most chunk_elems (the staging size).
 * Where that gives fewer chunks than rails (NICs x lanes), cut finer, not
 * below min_chunk_elems, so that every NIC, then every lane, has a share;
 * and where it leaves columns idle, finer still, but only down to
 * PF_HOST_MIN_DEPTH_CHUNK_BYTES (smaller messages cost more than the
 * overlap gains). Every rank computes the same. */
static uint64_t chunks_for(const struct host *h, uint64_t count)
{
    uint64_t nc = pf_ring_nchunks(count, h->n, h->chunk_elems);
    uint64_t longest = (count + (uint64_t)h->n - 1) / (uint64_t)h->n;
    uint64_t fit = longest / h->min_chunk_elems;
    uint64_t fit_depth = longest / (PF_HOST_MIN_DEPTH_CHUNK_BYTES /
                                    sizeof(float));
    uint64_t rails = (uint64_t)h->nrails;
    uint64_t cols = (uint64_t)h->depth * rails;
    uint64_t cut;

    if (nc < rails) {
        cut = fit < rails ? fit : rails;
        if (cut > nc)
            nc = cut;
    }
    if (nc < cols) {
        cut = fit_depth < cols ? fit_depth : cols;
        if (cut > nc)
            nc = cut;
    }
    return nc;
}

/* ------------------------------------------------------------ columns */

static void col_setup(struct host *h, struct host_col *c)
{
    uint64_t soff, slen, roff, rlen, coff, clen;
    int t = c->step;

    pf_ring_segment(h->count, h->n, pf_ring_send_seg(h->rank, h->n, t),
                    &soff, &slen);
    pf_ring_chunk(slen, h->nchunks, c->chunk, &coff, &clen);
    /* Step 0 sends this rank's own data; later steps forward what the
     * previous step produced in dst. */
    c->send_ptr = (t == 0 ? h->src : h->dst) + soff + coff;
    c->send_len = clen;

    pf_ring_segment(h->count, h->n, pf_ring_recv_seg(h->rank, h->n, t),
                    &roff, &rlen);
    pf_ring_chunk(rlen, h->nchunks, c->chunk, &coff, &clen);
    c->recv_off = roff + coff;
    c->recv_len = clen;
    c->recv_ptr = pf_ring_is_reduce(h->n, t) ? c->stage : h->dst + c->recv_off;

    /* Empty chunks (count < n x chunks) are skipped by both neighbours. */
    c->send_posted = c->send_done = c->send_len == 0;
    c->recv_posted = c->recv_done = c->recv_len == 0;

    if (h->rank == h->args.slow_rank && t > c->rail->slow_step) {
        c->rail->slow_step = t;
        pf_sleep_ms(h->args.slow_ms);
    }
}

static void col_start(struct host *h, struct host_col *c, uint64_t chunk)
{
    c->active = true;
    c->chunk = chunk;
    c->step = 0;
    col_setup(h, c);
}

/* The next chunk of c's rail, if any is left. */
static void col_next(struct host *h, struct host_col *c)
{
    struct host_rail *r = c->rail;

    if (r->next_chunk < r->nchunks)
        col_start(h, c, (uint64_t)r->index +
                            r->next_chunk++ * (uint64_t)h->nrails);
}

/* Finish every step whose send and receive are both done. */
static void col_advance(struct host *h, struct host_col *c)
{
    struct host_rail *r = c->rail;

    while (c->active && c->send_done && c->recv_done) {
        /* The sum runs on this rail's own thread: k rails, k cores. */
        if (pf_ring_is_reduce(h->n, c->step)) {
            if (h->src == h->dst)
                pf_reduce_add(h->dst + c->recv_off, c->stage, c->recv_len);
            else
                pf_reduce_add3(h->dst + c->recv_off, h->src + c->recv_off,
                               c->stage, c->recv_len);
        }
        r->bytes += (c->send_len + c->recv_len) * sizeof(float);
        if (++c->step < pf_ring_steps(h->n)) {
            col_setup(h, c);
            continue;
        }
        c->active = false;
        if (++r->done_chunks == r->nchunks)
            r->seconds += pf_now_s() - r->t0;
        col_next(h, c);
    }
}

static pf_err col_post(struct host *h, struct host_col *c, char *err)
{
    struct host_rail *r = c->rail;
    uint64_t tag = make_tag(h->seq, c->step, c->chunk);
    ssize_t rc;

    /* Receive first, so the neighbour's message finds a buffer. */
    if (!c->recv_posted) {
        c->recv_op.col = c;
        c->recv_op.rail = r;
        c->recv_op.kind = OP_RECV;
        rc = fi_trecv(r->ep, c->recv_ptr, c->recv_len * sizeof(float),
                      pf_host_desc(r, h, c->recv_ptr), FI_ADDR_UNSPEC, tag, 0,
                      &c->recv_op.ctx);
        if (rc == 0)
            c->recv_posted = true;
        else if (rc != -FI_EAGAIN)
            return pf_fail(err, PF_ERR_ENGINE, "fi_trecv (%s): %s", h->provider,
                           h->fi.strerror((int)-rc));
    }
    if (!c->send_posted) {
        c->send_op.col = c;
        c->send_op.rail = r;
        c->send_op.kind = OP_SEND;
        rc = fi_tsend(r->ep, c->send_ptr, c->send_len * sizeof(float),
                      pf_host_desc(r, h, c->send_ptr), r->right, tag,
                      &c->send_op.ctx);
        if (rc == 0)
            c->send_posted = true;
        else if (rc != -FI_EAGAIN)
            return pf_fail(err, PF_ERR_ENGINE, "fi_tsend (%s): %s", h->provider,
                           h->fi.strerror((int)-rc));
    }
    return PF_OK;
}

/* ----------------------------------------------------------- progress */

static void on_complete(struct host *h, struct host_op *op)
{
    switch (op->kind) {
    case OP_HS_SEND: op->rail->hs_send_done = true; return;
    case OP_HS_RECV: op->rail->hs_recv_done = true; return;
    case OP_SEND: op->col->send_done = true; break;
    case OP_RECV: op->col->recv_done = true; break;
    }
    col_advance(h, op->col);
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

static pf_err deadline_passed(const struct host *h, const char *what,
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
static pf_err boot_check(struct host *h, int64_t now, const char *what,
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
    if ((rc = boot_check(h, now, what, err)) != PF_OK)
        return rc;
    if (now >= deadline)
        return deadline_passed(h, what, err);
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

/* --------------------------------------------------------- all_reduce */

/* Rail r's share of the all_reduce in progress: post its columns, read
 * its queue, until its last chunk has gone through every step. main: the
 * caller's thread, which also watches the bootstrap; a rail thread
 * watches h->stop instead. A deadline here is reported by the caller,
 * which names every rail still busy. */
static pf_err rail_run(struct host *h, struct host_rail *r, bool main,
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
                (rc = col_post(h, c, err)) != PF_OK)
                return rc;
        }
        if ((rc = rail_read(h, r, h->what, main, &any, err)) != PF_OK)
            return rc;
        if (any) {
            r->idle_since = 0;
            continue;
        }
        now = pf_now_ms();
        if (main && (rc = boot_check(h, now, h->what, err)) != PF_OK)
            return rc;
        if (!main && atomic_load_explicit(&h->stop, memory_order_relaxed))
            return pf_fail(err, PF_ERR_LOST, "%s: stopped", h->what);
        if (now >= h->deadline)
            return PF_ERR_TIMEOUT;
        idle(r, 1, &r->idle_since, h->deadline - now);
    }
    return PF_OK;
}

/* The CPU of rail j (h->pin): the (local_index x nrails + j)-th allowed. */
static void pin_to(const struct host *h, pthread_t t, int j)
{
    int want = (h->local_index * h->nrails + j) % CPU_COUNT(&h->allowed);
    cpu_set_t one;

    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &h->allowed) && want-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            /* A refusal (a cpuset that changed) only costs speed. */
            (void)pthread_setaffinity_np(t, sizeof(one), &one);
            return;
        }
}

/* A rail thread: wait for the next all_reduce (gen), run its rail's share,
 * say so (done_gen), until quit. Spins PF_HOST_SPIN_US first: in a sweep
 * the next all_reduce follows at once. */
static void *rail_thread(void *arg)
{
    struct host_rail *r = arg;
    struct host *h = r->h;
    unsigned seen = 0;

    if (h->pin)
        pin_to(h, pthread_self(), r->index);
    for (;;) {
        double t0 = pf_now_s();
        unsigned g;

        while ((g = atomic_load_explicit(&h->gen, memory_order_acquire)) ==
                   seen &&
               !atomic_load_explicit(&h->quit, memory_order_acquire) &&
               pf_now_s() - t0 < PF_HOST_SPIN_US * 1e-6)
            sched_yield();
        if (g == seen) {
            pthread_mutex_lock(&h->mu);
            while ((g = atomic_load_explicit(&h->gen, memory_order_acquire)) ==
                       seen &&
                   !atomic_load_explicit(&h->quit, memory_order_acquire))
                pthread_cond_wait(&h->go, &h->mu);
            pthread_mutex_unlock(&h->mu);
        }
        if (atomic_load_explicit(&h->quit, memory_order_acquire))
            return NULL;
        seen = g;
        r->err[0] = '\0';
        r->rc = rail_run(h, r, false, r->err);
        pthread_mutex_lock(&h->mu);
        atomic_store_explicit(&r->done_gen, g, memory_order_release);
        pthread_cond_signal(&h->done);
        pthread_mutex_unlock(&h->mu);
    }
}

static bool rails_done(struct host *h, unsigned g)
{
    for (int k = 1; k < h->nrails; k++)
        if (atomic_load_explicit(&h->rails[k].done_gen, memory_order_acquire)
            != g)
            return false;
    return true;
}

/* The caller, its own rail done: wait for the rail threads, watching the
 * bootstrap; a lost peer stops them (each notices within one poll). */
static pf_err wait_rails(struct host *h, unsigned g, char *err)
{
    double t0 = pf_now_s();
    pf_err rc = PF_OK;

    while (!rails_done(h, g)) {
        int64_t now = pf_now_ms();
        struct timespec ts;

        if (rc == PF_OK && (rc = boot_check(h, now, h->what, err)) != PF_OK)
            atomic_store_explicit(&h->stop, true, memory_order_release);
        if (pf_now_s() - t0 < PF_HOST_SPIN_US * 1e-6) {
            sched_yield();
            continue;
        }
        /* Bounded sleeps: the bootstrap is polled on and rail threads
         * end by the deadline whatever happens. */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += PF_HOST_WAIT_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&h->mu);
        if (!rails_done(h, g))
            pthread_cond_timedwait(&h->done, &h->mu, &ts);
        pthread_mutex_unlock(&h->mu);
    }
    atomic_store_explicit(&h->stop, false, memory_order_relaxed);
    return rc;
}

static pf_err allreduce(struct host *h, uint64_t count, bool in_place,
                        int64_t deadline, char *err)
{
    unsigned g = 0;
    pf_err rc, rrc = PF_OK;

    h->seq = (h->seq + 1) & TAG_SEQ_MASK;
    h->src = in_place ? h->recvbuf : h->sendbuf;
    h->dst = h->recvbuf;
    if (h->n == 1) {
        if (!in_place)
            memcpy(h->dst, h->src, count * sizeof(float));
        return PF_OK;
    }
    h->count = count;
    h->nchunks = chunks_for(h, count);
    h->deadline = deadline;
    snprintf(h->what, sizeof(h->what), "all_reduce of %llu bytes",
             (unsigned long long)(count * sizeof(float)));
    for (int k = 0; k < h->nrails; k++) {
        struct host_rail *r = &h->rails[k];
        r->nchunks = rail_chunks(h->nchunks, h->nrails, k);
        r->next_chunk = r->done_chunks = 0;
        r->slow_step = -1;
        r->t0 = pf_now_s();
        for (int i = 0; i < h->depth; i++)
            r->cols[i].active = false;
        for (int i = 0; i < h->depth && r->next_chunk < r->nchunks; i++) {
            col_next(h, &r->cols[i]);
            col_advance(h, &r->cols[i]);
        }
    }
    if (h->nrails > 1) {
        pthread_mutex_lock(&h->mu);
        g = atomic_load_explicit(&h->gen, memory_order_relaxed) + 1;
        if (g == 0)
            g = 1;                    /* 0 is "none yet" */
        atomic_store_explicit(&h->gen, g, memory_order_release);
        pthread_cond_broadcast(&h->go);
        pthread_mutex_unlock(&h->mu);
    }
    rc = rail_run(h, &h->rails[0], true, err);
    if (rc != PF_OK && rc != PF_ERR_TIMEOUT)
        atomic_store_explicit(&h->stop, true, memory_order_release);
    if (h->nrails > 1) {
        char werr[PF_ERRLEN];
        pf_err wrc = wait_rails(h, g, werr);
        if (rc == PF_OK && wrc != PF_OK) {
            rc = wrc;
            snprintf(err, PF_ERRLEN, "%s", werr);
        }
        for (int k = 1; k < h->nrails && rrc == PF_OK; k++)
            if ((rrc = h->rails[k].rc) != PF_OK && rc == PF_OK) {
                rc = rrc;
                snprintf(err, PF_ERRLEN, "%s", h->rails[k].err);
            }
        /* A rail failed on its own: the bootstrap may name the peer. */
        if (rrc != PF_OK && rrc != PF_ERR_TIMEOUT && rc == rrc &&
            pf_boot_poll(h->boot, werr) != PF_OK) {
            snprintf(err, PF_ERRLEN, "%s", werr);
            pf_err_prefix(err, "%s", h->what);
            return PF_ERR_LOST;
        }
    }
    if (rc == PF_ERR_TIMEOUT)
        return deadline_passed(h, h->what, err);
    return rc;
}

/* Rail threads for rails 1.. (none with one rail); quit ends them. */
static pf_err start_rail_threads(struct host *h, char *err)
{
    if (h->nrails < 2)
        return PF_OK;
    if (h->pin && pthread_getaffinity_np(pthread_self(), sizeof(h->caller_cpus),
                                         &h->caller_cpus) == 0) {
        pin_to(h, pthread_self(), 0);
        h->caller_pinned = true;
    }
    if (pthread_mutex_init(&h->mu, NULL) != 0)
        return pf_fail(err, PF_ERR_NOMEM, "host engine: pthread_mutex_init");
    if (pthread_cond_init(&h->go, NULL) != 0) {
        pthread_mutex_destroy(&h->mu);
        return pf_fail(err, PF_ERR_NOMEM, "host engine: pthread_cond_init");
    }
    if (pthread_cond_init(&h->done, NULL) != 0) {
        pthread_cond_destroy(&h->go);
        pthread_mutex_destroy(&h->mu);
        return pf_fail(err, PF_ERR_NOMEM, "host engine: pthread_cond_init");
    }
    h->sync_ready = true;
    for (int k = 1; k < h->nrails; k++) {
        int e = pthread_create(&h->rails[k].thread, NULL, rail_thread,
                               &h->rails[k]);
        if (e != 0)
            return pf_fail(err, PF_ERR_NOMEM, "host engine: cannot start "
                           "the thread of NIC %s: %s", h->rails[k].name,
                           strerror(e));
        h->rails[k].has_thread = true;
    }
    return PF_OK;
}

static void stop_rail_threads(struct host *h)
{
    if (!h->sync_ready)
        return;
    pthread_mutex_lock(&h->mu);
    atomic_store_explicit(&h->quit, true, memory_order_release);
    pthread_cond_broadcast(&h->go);
    pthread_mutex_unlock(&h->mu);
    for (int k = 1; k < h->nrails; k++)
        if (h->rails[k].has_thread) {
            pthread_join(h->rails[k].thread, NULL);
            h->rails[k].has_thread = false;
        }
    pthread_cond_destroy(&h->done);
    pthread_cond_destroy(&h->go);
    pthread_mutex_destroy(&h->mu);
    h->sync_ready = false;
    if (h->caller_pinned)
        (void)pthread_setaffinity_np(pthread_self(), sizeof(h->caller_cpus),
                                     &h->caller_cpus);
    h->caller_pinned = false;
}

/* ------------------------------------------------------- engine ops */

static pf_err host_open(struct pf_engine *e, const struct pf_engine_args *args,
                        int64_t deadline, char *err)
{
    struct pf_boot *boot = args->boot;
    struct host *h = calloc(1, sizeof(*h));
    pf_err rc;

    if (!h)
        return pf_fail(err, PF_ERR_NOMEM, "host engine: out of memory");
    if (boot->world > TAG_RING_RANKS) {
        free(h);
        return pf_fail(err, PF_ERR_USAGE, "host engine: %d ranks: a ring "
                       "step must fit the message tag's 16-bit step field, "
                       "so at most %d ranks", boot->world, TAG_RING_RANKS);
    }
    h->args = *args;
    h->facts = &e->facts;
    h->boot = boot;
    h->rank = boot->rank;
    h->n = boot->world;
    h->max_count = args->max_count;
    h->chunk_elems = PF_HOST_CHUNK_BYTES / sizeof(float);
    /* No chunk exceeds the largest segment: staging sized by the run. */
    if (h->max_count / (uint64_t)h->n + 1 < h->chunk_elems)
        h->chunk_elems = h->max_count / (uint64_t)h->n + 1;
    if (h->chunk_elems < 1024)
        h->chunk_elems = 1024;
    h->min_chunk_elems = PF_HOST_MIN_CHUNK_BYTES / sizeof(float);
    h->depth = PF_HOST_DEPTH;
    h->pair_peer = -1;
    rc = pf_host_ep_open(h, deadline, err);
    if (rc == PF_OK)
        rc = start_rail_threads(h, err);
    if (rc != PF_OK) {
        stop_rail_threads(h);
        pf_host_ep_close(h);
        free(h);
        return rc;
    }
    e->impl = h;
    e->nranks = h->n;
    e->local_ranks = 1;
    pf_info("host engine: provider %s, %d ranks, %d NIC(s) from %s to %s, "
            "%d lane(s) each, %d thread(s), %llu-%llu KiB chunks, %d in "
            "flight per lane", h->provider, h->n, h->nnics, h->rails[0].name,
            h->rails[h->nnics - 1].name, h->lanes, h->nrails,
            (unsigned long long)(h->min_chunk_elems * sizeof(float) / 1024),
            (unsigned long long)(h->chunk_elems * sizeof(float) / 1024),
            h->depth);
    return PF_OK;
}

static void fill_pattern(float *buf, uint64_t count, int rank)
{
    float tab[PATTERN_PERIOD];
    unsigned j = 0;

    for (unsigned i = 0; i < PATTERN_PERIOD; i++)
        tab[i] = pf_pattern(rank, i);
    for (uint64_t i = 0; i < count; i++) {
        buf[i] = tab[j];
        if (++j == PATTERN_PERIOD)
            j = 0;
    }
}

static pf_err host_fill(struct pf_engine *e, uint64_t count, bool in_place,
                        char *err)
{
    struct host *h = e->impl;
    float *buf = in_place ? h->recvbuf : h->sendbuf;

    if (count > h->max_count)
        return pf_fail(err, PF_ERR_USAGE, "host engine: %llu elements exceed "
                       "the %llu it was opened for", (unsigned long long)count,
                       (unsigned long long)h->max_count);
    fill_pattern(buf, count, h->rank);
    if (h->rank == h->args.corrupt_rank)
        for (uint64_t i = 0; i < count; i += CORRUPT_STRIDE)
            buf[i] += 1.0f;
    if (!in_place)
        memset(h->recvbuf, 0xff, count * sizeof(float)); /* NaN poison */
    return PF_OK;
}

static pf_err host_run(struct pf_engine *e, uint64_t count, bool in_place,
                       int iters, double *seconds, int64_t deadline, char *err)
{
    struct host *h = e->impl;
    double t0 = pf_now_s();

    for (int i = 0; i < iters; i++) {
        pf_err rc = allreduce(h, count, in_place, deadline, err);
        if (rc != PF_OK)
            return rc;
    }
    *seconds = pf_now_s() - t0;
    return PF_OK;
}

static pf_err host_check(struct pf_engine *e, uint64_t count, bool in_place,
                         long *wrong, char *err)
{
    struct host *h = e->impl;
    float tab[PATTERN_PERIOD];
    unsigned j = 0;
    long bad = 0;

    (void)in_place;
    (void)err;
    for (unsigned i = 0; i < PATTERN_PERIOD; i++)
        tab[i] = pf_expected(h->n, i);
    for (uint64_t i = 0; i < count; i++) {
        bad += h->recvbuf[i] != tab[j];
        if (++j == PATTERN_PERIOD)
            j = 0;
    }
    *wrong = bad;
    return PF_OK;
}

/* ------------------------------------------------ pairwise re-test */

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

/* One half of a pair exchange on rail r: len floats at buf. */
static pf_err pair_post(struct host *h, struct host_rail *r, bool recv,
                        void *buf, uint64_t len, fi_addr_t to, uint64_t tag,
                        int64_t deadline, const char *what, char *err)
{
    return pf_host_post(h, r, recv, buf, len * sizeof(float),
                        pf_host_desc(r, h, buf), to, tag, deadline, what, err);
}

/* Chunk size of a pair exchange: at most chunk_elems, and small enough
 * that every rail gets one. */
static uint64_t pair_chunk(const struct host *h, uint64_t count)
{
    uint64_t per_rail = (count + (uint64_t)h->nrails - 1) / (uint64_t)h->nrails;
    return per_rail < h->chunk_elems ? (per_rail ? per_rail : 1)
                                     : h->chunk_elems;
}

/* One exchange: count elements each way, both directions at once, chunk
 * k on rail k % nrails, one chunk in flight per rail. The slow rank
 * (--debug-slow-rank) sleeps first, as it does before each ring step.
 * Timed exchanges add to each rail's bytes and time. */
static pf_err pair_exchange(struct host *h, int peer, int round, int iter,
                            uint64_t count, bool slow, bool timed,
                            int64_t deadline, const char *what, char *err)
{
    uint64_t pc = pair_chunk(h, count), nchunks = (count + pc - 1) / pc;
    double t0;
    bool busy = true;

    if (slow)
        pf_sleep_ms(h->args.slow_ms);
    t0 = pf_now_s();
    for (int k = 0; k < h->nrails; k++) {
        struct host_rail *r = &h->rails[k];
        r->pair_chunks = rail_chunks(nchunks, h->nrails, k);
        r->pair_next = r->pair_len = 0;
        r->pair_busy = r->pair_chunks > 0;
        r->hs_send_done = r->hs_recv_done = true;
    }
    while (busy) {
        busy = false;
        for (int k = 0; k < h->nrails; k++) {
            struct host_rail *r = &h->rails[k];
            uint64_t c, off, len, tag;
            pf_err rc;

            if (!r->pair_busy)
                continue;
            busy = true;
            if (!r->hs_send_done || !r->hs_recv_done)
                continue;
            if (timed)
                r->bytes += 2 * r->pair_len * sizeof(float);
            if (r->pair_next == r->pair_chunks) {
                r->pair_busy = false;
                if (timed)
                    r->seconds += pf_now_s() - t0;
                continue;
            }
            c = (uint64_t)k + r->pair_next++ * (uint64_t)h->nrails;
            off = c * pc;
            len = count - off < pc ? count - off : pc;
            tag = make_tag((uint32_t)round, PAIR_STEP,
                           (uint64_t)iter * nchunks + c);
            r->pair_len = len;
            r->hs_send_done = r->hs_recv_done = false;
            rc = pair_post(h, r, true, h->recvbuf + off, len,
                           r->addrs[peer], tag, deadline, what, err);
            if (rc == PF_OK)
                rc = pair_post(h, r, false, h->sendbuf + off, len,
                               r->addrs[peer], tag, deadline, what, err);
            if (rc != PF_OK)
                return rc;
        }
        if (busy) {
            pf_err rc = pf_host_progress(h, deadline, what, err);
            if (rc != PF_OK)
                return rc;
        }
    }
    return PF_OK;
}

/* The pair's payload is this rank's pattern, corrupted as in the ring by
 * --debug-corrupt-rank, so a corrupting rank is caught by its partners. */
static void fill_pair(struct host *h, uint64_t count)
{
    fill_pattern(h->sendbuf, count, h->rank);
    if (h->rank == h->args.corrupt_rank)
        for (uint64_t i = 0; i < count; i += CORRUPT_STRIDE)
            h->sendbuf[i] += 1.0f;
    memset(h->recvbuf, 0xff, count * sizeof(float)); /* NaN poison */
}

static long count_pair_wrong(const struct host *h, int peer, uint64_t count)
{
    long bad = 0;
    for (uint64_t i = 0; i < count; i++)
        bad += h->recvbuf[i] != pf_pattern(peer, i);
    return bad;
}

static pf_err host_pair(struct pf_engine *e, int peer, int round,
                        uint64_t count, int iters, double *seconds,
                        long *wrong, int64_t deadline, char *err)
{
    struct host *h = e->impl;
    bool slow = h->rank == h->args.slow_rank;
    char what[64];
    double t0;
    pf_err rc = PF_OK;

    if (peer < 0 || peer >= h->n || peer == h->rank)
        return pf_fail(err, PF_ERR_USAGE, "host engine: no pair with rank %d "
                       "(%d ranks)", peer, h->n);
    if (count == 0 || count > h->max_count ||
        (count + pair_chunk(h, count) - 1) / pair_chunk(h, count) *
                (uint64_t)(iters + 1) > TAG_CHUNK_MASK)
        return pf_fail(err, PF_ERR_USAGE, "host engine: pair exchange of %llu "
                       "elements x %d does not fit (%llu max)",
                       (unsigned long long)count, iters,
                       (unsigned long long)h->max_count);
    snprintf(what, sizeof(what), "pairwise test with rank %d", peer);
    h->pair_peer = peer;
    fill_pair(h, count);
    /* The warm-up also opens the connection where the ring never did. */
    rc = pair_exchange(h, peer, round, 0, count, false, false, deadline, what,
                       err);
    t0 = pf_now_s();
    for (int i = 1; i <= iters && rc == PF_OK; i++)
        rc = pair_exchange(h, peer, round, i, count, slow, true, deadline,
                           what, err);
    *seconds = pf_now_s() - t0;
    *wrong = rc == PF_OK ? count_pair_wrong(h, peer, count) : 0;
    h->pair_peer = -1;
    return rc;
}

/* Per NIC: its lanes' bytes summed; its time the longest lane's (they
 * run side by side). */
static int host_rails(struct pf_engine *e, struct pf_rail_use *out, int max)
{
    const struct host *h = e->impl;
    int n = h->nnics < max ? h->nnics : max;

    for (int k = 0; k < n; k++) {
        out[k].bytes = 0;
        out[k].seconds = 0;
    }
    for (int k = 0; k < h->nrails; k++) {
        const struct host_rail *r = &h->rails[k];
        if (r->nic >= n)
            continue;
        snprintf(out[r->nic].nic, sizeof(out[r->nic].nic), "%s", r->name);
        out[r->nic].bytes += r->bytes;
        if (r->seconds > out[r->nic].seconds)
            out[r->nic].seconds = r->seconds;
    }
    return n;
}

/* One rank per process, no GPU: its NICs ("efa_0,efa_1", or addresses). */
static int host_describe(struct pf_engine *e, struct pf_rank_id *out,
                         int max)
{
    const struct host *h = e->impl;
    size_t used = 0;

    if (max < 1)
        return 0;
    memset(out, 0, sizeof(*out));
    out->rank = h->rank;
    out->gpu = -1;
    for (int k = 0; k < h->nrails && used + 1 < sizeof(out->nic); k++) {
        int n = snprintf(out->nic + used, sizeof(out->nic) - used, "%s%s",
                         k ? "," : "", h->rails[k].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return 1;
}

static void host_close(struct pf_engine *e)
{
    struct host *h = e->impl;
    struct rusage ru;

    if (!h)
        return;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        pf_info("host engine: rank %d peak RSS %ld KiB", h->rank,
                ru.ru_maxrss);
    stop_rail_threads(h);
    pf_host_ep_close(h);
    free(h);
    e->impl = NULL;
}

const struct pf_engine_ops pf_engine_host = {
    .name = "host",
    .open = host_open,
    .fill = host_fill,
    .run = host_run,
    .check = host_check,
    .close = host_close,
    .pair = host_pair,
    .rails = host_rails,
    .describe = host_describe,
};
