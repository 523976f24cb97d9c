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

/* Chunks of an all_reduce: of at most chunk_elems, and where that gives
 * fewer chunks than rails, cut finer (not below
 * PF_HOST_MIN_RAIL_CHUNK_BYTES) so every NIC gets a share. Every rank
 * computes the same. */
static uint64_t chunks_for(const struct host *h, uint64_t count)
{
    uint64_t nc = pf_ring_nchunks(count, h->n, h->chunk_elems);
    uint64_t longest = (count + (uint64_t)h->n - 1) / (uint64_t)h->n;
    uint64_t fit = longest / (PF_HOST_MIN_RAIL_CHUNK_BYTES / sizeof(float));

    if (nc < (uint64_t)h->nrails) {
        uint64_t want = fit < (uint64_t)h->nrails ? fit : (uint64_t)h->nrails;
        if (want > nc)
            nc = want;
    }
    return nc;
}

/* ------------------------------------------------------------ columns */

/* The reduce runs once per received chunk and was the largest user-space
 * cost of a step (bench/results/host_allreduce.md). restrict rules out
 * overlap (the staging area never aliases the data buffers), and the
 * fixed-length inner loop is what gcc -O2's cheap vectorizer accepts:
 * with it the loop runs at memory speed instead of one float a cycle. */
#define REDUCE_BLOCK 16

static void add_in_place(float *restrict d, const float *restrict in,
                         uint64_t n)
{
    uint64_t k = 0;

    for (; k + REDUCE_BLOCK <= n; k += REDUCE_BLOCK)
        for (int j = 0; j < REDUCE_BLOCK; j++)
            d[k + j] += in[k + j];
    for (; k < n; k++)
        d[k] += in[k];
}

static void add_out_of_place(float *restrict d, const float *restrict s,
                             const float *restrict in, uint64_t n)
{
    uint64_t k = 0;

    for (; k + REDUCE_BLOCK <= n; k += REDUCE_BLOCK)
        for (int j = 0; j < REDUCE_BLOCK; j++)
            d[k + j] = s[k + j] + in[k + j];
    for (; k < n; k++)
        d[k] = s[k] + in[k];
}

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

    if (h->rank == h->args.slow_rank && t > h->slow_step) {
        h->slow_step = t;
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
        if (pf_ring_is_reduce(h->n, c->step)) {
            if (h->src == h->dst)
                add_in_place(h->dst + c->recv_off, c->stage, c->recv_len);
            else
                add_out_of_place(h->dst + c->recv_off, h->src + c->recv_off,
                                 c->stage, c->recv_len);
        }
        r->bytes += (c->send_len + c->recv_len) * sizeof(float);
        if (++c->step < pf_ring_steps(h->n)) {
            col_setup(h, c);
            continue;
        }
        c->active = false;
        h->done_chunks++;
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

static bool is_conn_error(int e)
{
    return e == FI_ECONNRESET || e == FI_ECONNREFUSED ||
           e == FI_ECONNABORTED || e == FI_ENOTCONN || e == EPIPE ||
           e == FI_EHOSTUNREACH || e == FI_ENETUNREACH || e == FI_EIO;
}

static pf_err cq_error(struct host *h, struct host_rail *r, const char *what,
                       char *err)
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
    if (pf_boot_poll(h->boot, err) != PF_OK) {
        pf_err_prefix(err, "%s", what);
        return PF_ERR_LOST;
    }
    op = ee.op_context;
    to_right = op && (op->kind == OP_SEND || op->kind == OP_HS_SEND);
    peer = (h->rank + (to_right ? 1 : h->n - 1)) % h->n;
    if (h->pair_peer >= 0)
        peer = h->pair_peer;
    fi_cq_strerror(r->cq, ee.prov_errno, ee.err_data, detail, sizeof(detail));
    if (h->nrails > 1)
        snprintf(nic, sizeof(nic), " on NIC %s", r->name);
    return pf_fail(err, is_conn_error(ee.err) ? PF_ERR_LOST : PF_ERR_ENGINE,
                   "%s: %s rank %d failed over %s%s: %s (%s)", what,
                   to_right ? "send to" : "receive from", peer,
                   h->provider, nic, h->fi.strerror(ee.err), detail);
}

/* Nothing completed. For the first PF_HOST_SPIN_US keep polling, yielding
 * to other ranks that share these cores: the next message is usually that
 * close, and waking a halted (virtual) CPU costs tens of us per hop of a
 * rendezvous. After that, sleep on the queue's fd when the provider says
 * it is safe (fi_trywait), with our own bound; else yield. (Not
 * fi_cq_sread: shm's ignores its timeout.) */
static void idle(struct host *h, int64_t left_ms)
{
    struct pollfd pfd[PF_MAX_EFA];
    double now = pf_now_s();
    int k;

    if (h->idle_since == 0)
        h->idle_since = now;
    if (now - h->idle_since < PF_HOST_SPIN_US * 1e-6) {
        sched_yield();
        return;
    }
    /* Sleep only when every queue has an fd and says it is safe. */
    for (k = 0; k < h->nrails; k++) {
        struct host_rail *r = &h->rails[k];
        struct fid *fids[1] = { &r->cq->fid };
        if (r->wait_fd < 0 || fi_trywait(r->fabric, fids, 1) != FI_SUCCESS)
            break;
        pfd[k].fd = r->wait_fd;
        pfd[k].events = POLLIN;
        pfd[k].revents = 0;
    }
    if (k == h->nrails) {
        poll(pfd, (nfds_t)h->nrails,
             (int)(left_ms < PF_HOST_WAIT_MS ? left_ms : PF_HOST_WAIT_MS));
        return;
    }
    sched_yield();
}

/* ", waiting on NIC a, b" for the rails with work outstanding. */
static void busy_rails(const struct host *h, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    if (h->nrails < 2)
        return;
    for (int k = 0; k < h->nrails && used < len; k++) {
        const struct host_rail *r = &h->rails[k];
        bool busy = r->pair_busy || r->done_chunks < r->nchunks ||
                    !r->hs_send_done || !r->hs_recv_done;
        int n;
        if (!busy)
            continue;
        n = snprintf(out + used, len - used, "%s%s", used ? ", " : ", "
                     "waiting on NIC ", r->name);
        if (n > 0)
            used += (size_t)n;
    }
}

pf_err pf_host_progress(struct host *h, int64_t deadline, const char *what,
                        char *err)
{
    struct fi_cq_entry ent[16];
    bool any = false;
    char busy[256];
    int64_t now;

    for (int k = 0; k < h->nrails; k++) {
        struct host_rail *r = &h->rails[k];
        ssize_t got = fi_cq_read(r->cq, ent, 16);

        if (got > 0) {
            any = true;
            for (ssize_t i = 0; i < got; i++)
                on_complete(h, ent[i].op_context);
        } else if (got == -FI_EAVAIL) {
            return cq_error(h, r, what, err);
        } else if (got != -FI_EAGAIN) {
            return pf_fail(err, PF_ERR_ENGINE, "%s: fi_cq_read (%s): %s",
                           what, h->provider, h->fi.strerror((int)-got));
        }
    }
    if (any)
        h->idle_since = 0;
    /* Checked on every call, busy or not: a fabric that crawls must stop
     * at the deadline too, and a lost peer shows even while the other
     * neighbour still delivers. */
    now = pf_now_ms();
    if (now >= h->next_boot_poll) {
        pf_err rc = pf_boot_poll(h->boot, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "%s", what);
            return rc;
        }
        h->next_boot_poll = now + PF_HOST_BOOT_POLL_MS;
    }
    if (now >= deadline) {
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
    if (!any)
        idle(h, deadline - now);
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

static pf_err allreduce(struct host *h, uint64_t count, bool in_place,
                        int64_t deadline, char *err)
{
    char what[96];

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
    h->done_chunks = 0;
    h->slow_step = -1;
    for (int k = 0; k < h->nrails; k++) {
        struct host_rail *r = &h->rails[k];
        r->nchunks = rail_chunks(h->nchunks, h->nrails, k);
        r->next_chunk = r->done_chunks = 0;
        r->t0 = pf_now_s();
        for (int i = 0; i < h->depth; i++)
            r->cols[i].active = false;
        for (int i = 0; i < h->depth && r->next_chunk < r->nchunks; i++) {
            col_next(h, &r->cols[i]);
            col_advance(h, &r->cols[i]);
        }
    }
    snprintf(what, sizeof(what), "all_reduce of %llu bytes",
             (unsigned long long)(count * sizeof(float)));
    while (h->done_chunks < h->nchunks) {
        for (int k = 0; k < h->nrails; k++) {
            for (int i = 0; i < h->depth; i++) {
                struct host_col *c = &h->rails[k].cols[i];
                if (c->active && (!c->recv_posted || !c->send_posted)) {
                    pf_err rc = col_post(h, c, err);
                    if (rc != PF_OK)
                        return rc;
                }
            }
        }
        pf_err rc = pf_host_progress(h, deadline, what, err);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
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
    h->depth = PF_HOST_DEPTH;
    h->pair_peer = -1;
    rc = pf_host_ep_open(h, deadline, err);
    if (rc != PF_OK) {
        pf_host_ep_close(h);
        free(h);
        return rc;
    }
    e->impl = h;
    e->nranks = h->n;
    e->local_ranks = 1;
    pf_info("host engine: provider %s, %d ranks, %d NIC(s) from %s to %s, "
            "%u KiB chunks, %d in flight per NIC", h->provider, h->n,
            h->nrails, h->rails[0].name, h->rails[h->nrails - 1].name,
            PF_HOST_CHUNK_BYTES / 1024, h->depth);
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

/* Post one half of a pair exchange on rail r, with the provider's
 * back-pressure. */
static pf_err pair_post(struct host *h, struct host_rail *r, bool recv,
                        void *buf, uint64_t len, fi_addr_t to, uint64_t tag,
                        int64_t deadline, const char *what, char *err)
{
    struct host_op *op = &r->hs_ops[recv ? 1 : 0];
    ssize_t rc;

    op->col = NULL;
    op->rail = r;
    op->kind = recv ? OP_HS_RECV : OP_HS_SEND;
    for (;;) {
        if (recv)
            rc = fi_trecv(r->ep, buf, len * sizeof(float),
                          pf_host_desc(r, h, buf), FI_ADDR_UNSPEC, tag, 0,
                          &op->ctx);
        else
            rc = fi_tsend(r->ep, buf, len * sizeof(float),
                          pf_host_desc(r, h, buf), to, tag, &op->ctx);
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

static int host_rails(struct pf_engine *e, struct pf_rail_use *out, int max)
{
    const struct host *h = e->impl;
    int n = h->nrails < max ? h->nrails : max;

    for (int k = 0; k < n; k++) {
        snprintf(out[k].nic, sizeof(out[k].nic), "%s", h->rails[k].name);
        out[k].bytes = h->rails[k].bytes;
        out[k].seconds = h->rails[k].seconds;
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
