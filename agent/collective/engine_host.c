/* The host engine: ring reduce-scatter + all-gather of float32 host
 * buffers over libfabric RDM endpoints (host.h, host_ep.c).
 *
 * Tagged messages rather than plain ones: the tag carries (all_reduce
 * number, step, chunk), so several chunks of several steps can be in
 * flight and each lands in its own buffer whatever order the provider
 * delivers them in, and an early message of the next all_reduce can never
 * match a receive of this one. */
#include "engine.h"

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
#include "../util/clock.h"
#include "../util/log.h"

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

void *pf_host_desc(const struct host *h, const void *ptr)
{
    const char *p = ptr;
    size_t data = (size_t)(h->max_count ? h->max_count : 1) * sizeof(float);

    if (p >= (const char *)h->sendbuf && p < (const char *)h->sendbuf + data)
        return h->desc[0];
    if (p >= (const char *)h->recvbuf && p < (const char *)h->recvbuf + data)
        return h->desc[1];
    return h->desc[2];
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

    if (h->rank == h->run->cfg.debug_slow_rank && t > h->slow_step) {
        h->slow_step = t;
        pf_sleep_ms(h->run->cfg.debug_slow_ms);
    }
}

static void col_start(struct host *h, struct host_col *c, uint64_t chunk)
{
    c->active = true;
    c->chunk = chunk;
    c->step = 0;
    col_setup(h, c);
}

/* Finish every step whose send and receive are both done. */
static void col_advance(struct host *h, struct host_col *c)
{
    while (c->active && c->send_done && c->recv_done) {
        if (pf_ring_is_reduce(h->n, c->step)) {
            if (h->src == h->dst)
                add_in_place(h->dst + c->recv_off, c->stage, c->recv_len);
            else
                add_out_of_place(h->dst + c->recv_off, h->src + c->recv_off,
                                 c->stage, c->recv_len);
        }
        if (++c->step < pf_ring_steps(h->n)) {
            col_setup(h, c);
            continue;
        }
        c->active = false;
        h->done_chunks++;
        if (h->next_chunk < h->nchunks)
            col_start(h, c, h->next_chunk++);
    }
}

static pf_err col_post(struct host *h, struct host_col *c, char *err)
{
    uint64_t tag = make_tag(h->seq, c->step, c->chunk);
    ssize_t rc;

    /* Receive first, so the neighbour's message finds a buffer. */
    if (!c->recv_posted) {
        c->recv_op.col = c;
        c->recv_op.kind = OP_RECV;
        rc = fi_trecv(h->ep, c->recv_ptr, c->recv_len * sizeof(float),
                      pf_host_desc(h, c->recv_ptr), FI_ADDR_UNSPEC, tag, 0,
                      &c->recv_op.ctx);
        if (rc == 0)
            c->recv_posted = true;
        else if (rc != -FI_EAGAIN)
            return pf_fail(err, PF_ERR_ENGINE, "fi_trecv (%s): %s", h->provider,
                           h->fi.strerror((int)-rc));
    }
    if (!c->send_posted) {
        c->send_op.col = c;
        c->send_op.kind = OP_SEND;
        rc = fi_tsend(h->ep, c->send_ptr, c->send_len * sizeof(float),
                      pf_host_desc(h, c->send_ptr), h->right, tag,
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
    case OP_HS_SEND: h->hs_send_done = true; return;
    case OP_HS_RECV: h->hs_recv_done = true; return;
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

static pf_err cq_error(struct host *h, const char *what, char *err)
{
    struct fi_cq_err_entry ee;
    char detail[160] = "";
    struct host_op *op;
    bool to_right;
    int peer;

    memset(&ee, 0, sizeof(ee));
    if (fi_cq_readerr(h->cq, &ee, 0) < 0)
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
    fi_cq_strerror(h->cq, ee.prov_errno, ee.err_data, detail, sizeof(detail));
    return pf_fail(err, is_conn_error(ee.err) ? PF_ERR_LOST : PF_ERR_ENGINE,
                   "%s: %s rank %d failed over %s: %s (%s)", what,
                   to_right ? "send to" : "receive from", peer,
                   h->provider, h->fi.strerror(ee.err), detail);
}

/* Nothing completed. For the first PF_HOST_SPIN_US keep polling, yielding
 * to other ranks that share these cores: the next message is usually that
 * close, and waking a halted (virtual) CPU costs tens of us per hop of a
 * rendezvous. After that, sleep on the queue's fd when the provider says
 * it is safe (fi_trywait), with our own bound; else yield. (Not
 * fi_cq_sread: shm's ignores its timeout.) */
static void idle(struct host *h, int64_t left_ms)
{
    struct fid *fids[1] = { &h->cq->fid };
    struct pollfd pfd = { .fd = h->wait_fd, .events = POLLIN };
    double now = pf_now_s();

    if (h->idle_since == 0)
        h->idle_since = now;
    if (now - h->idle_since < PF_HOST_SPIN_US * 1e-6) {
        sched_yield();
        return;
    }
    if (h->wait_fd >= 0 && fi_trywait(h->fabric, fids, 1) == FI_SUCCESS) {
        poll(&pfd, 1, (int)(left_ms < PF_HOST_WAIT_MS ? left_ms
                                                      : PF_HOST_WAIT_MS));
        return;
    }
    sched_yield();
}

pf_err pf_host_progress(struct host *h, int64_t deadline, const char *what,
                        char *err)
{
    struct fi_cq_entry ent[16];
    ssize_t got = fi_cq_read(h->cq, ent, 16);
    int64_t now;

    if (got > 0) {
        h->idle_since = 0;
        for (ssize_t i = 0; i < got; i++)
            on_complete(h, ent[i].op_context);
    } else if (got == -FI_EAVAIL)
        return cq_error(h, what, err);
    else if (got != -FI_EAGAIN)
        return pf_fail(err, PF_ERR_ENGINE, "%s: fi_cq_read (%s): %s", what,
                       h->provider, h->fi.strerror((int)-got));
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
    if (now >= deadline && h->pair_peer >= 0)
        return pf_fail(err, PF_ERR_TIMEOUT,
                       "%s: not finished by the deadline over %s (exchanging "
                       "with rank %d)", what, h->provider, h->pair_peer);
    if (now >= deadline)
        return pf_fail(err, PF_ERR_TIMEOUT,
                       "%s: not finished by the deadline over %s (sending to "
                       "rank %d, receiving from rank %d)", what,
                       h->provider, (h->rank + 1) % h->n,
                       (h->rank + h->n - 1) % h->n);
    if (got == -FI_EAGAIN)
        idle(h, deadline - now);
    return PF_OK;
}

pf_err pf_host_wait(struct host *h, const bool *flag_a, const bool *flag_b,
                    int64_t deadline, const char *what, char *err)
{
    while (!*flag_a || !*flag_b) {
        pf_err rc = pf_host_progress(h, deadline, what, err);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
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
    h->nchunks = pf_ring_nchunks(count, h->n, h->chunk_elems);
    h->next_chunk = h->done_chunks = 0;
    h->slow_step = -1;
    for (int i = 0; i < PF_HOST_MAX_DEPTH; i++)
        h->cols[i].active = false;
    for (int i = 0; i < h->depth && h->next_chunk < h->nchunks; i++) {
        col_start(h, &h->cols[i], h->next_chunk++);
        col_advance(h, &h->cols[i]);
    }
    snprintf(what, sizeof(what), "all_reduce of %llu bytes",
             (unsigned long long)(count * sizeof(float)));
    while (h->done_chunks < h->nchunks) {
        for (int i = 0; i < h->depth; i++) {
            struct host_col *c = &h->cols[i];
            if (c->active && (!c->recv_posted || !c->send_posted)) {
                pf_err rc = col_post(h, c, err);
                if (rc != PF_OK)
                    return rc;
            }
        }
        pf_err rc = pf_host_progress(h, deadline, what, err);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
}

/* ------------------------------------------------------- engine ops */

static pf_err host_open(struct pf_engine *e, struct pf_run *run,
                        struct pf_boot *boot, uint64_t max_count,
                        int64_t deadline, char *err)
{
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
    h->run = run;
    h->boot = boot;
    h->rank = boot->rank;
    h->n = boot->world;
    h->max_count = max_count;
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
    pf_info("host engine: provider %s, %d ranks, %u KiB chunks, %d in "
            "flight", h->provider, h->n, PF_HOST_CHUNK_BYTES / 1024,
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
    if (h->rank == h->run->cfg.debug_corrupt_rank)
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

/* Post one half of a pair exchange, with the provider's back-pressure. */
static pf_err pair_post(struct host *h, bool recv, void *buf, uint64_t len,
                        fi_addr_t to, uint64_t tag, int64_t deadline,
                        const char *what, char *err)
{
    struct host_op *op = &h->hs_ops[recv ? 1 : 0];
    ssize_t rc;

    op->col = NULL;
    op->kind = recv ? OP_HS_RECV : OP_HS_SEND;
    for (;;) {
        if (recv)
            rc = fi_trecv(h->ep, buf, len * sizeof(float),
                          pf_host_desc(h, buf), FI_ADDR_UNSPEC, tag, 0,
                          &op->ctx);
        else
            rc = fi_tsend(h->ep, buf, len * sizeof(float),
                          pf_host_desc(h, buf), to, tag, &op->ctx);
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

/* One exchange: count elements each way, chunk by chunk, both directions
 * at once. The slow rank (--debug-slow-rank) sleeps first, as it does
 * before each ring step. */
static pf_err pair_exchange(struct host *h, int peer, int round, int iter,
                            uint64_t count, bool slow, int64_t deadline,
                            const char *what, char *err)
{
    uint64_t nchunks = (count + h->chunk_elems - 1) / h->chunk_elems;

    if (slow)
        pf_sleep_ms(h->run->cfg.debug_slow_ms);
    for (uint64_t c = 0; c < nchunks; c++) {
        uint64_t off = c * h->chunk_elems;
        uint64_t len = count - off < h->chunk_elems ? count - off
                                                    : h->chunk_elems;
        uint64_t tag = make_tag((uint32_t)round, PAIR_STEP,
                                (uint64_t)iter * nchunks + c);
        pf_err rc;

        h->hs_send_done = h->hs_recv_done = false;
        rc = pair_post(h, true, h->recvbuf + off, len, h->addrs[peer], tag,
                       deadline, what, err);
        if (rc == PF_OK)
            rc = pair_post(h, false, h->sendbuf + off, len, h->addrs[peer],
                           tag, deadline, what, err);
        if (rc == PF_OK)
            rc = pf_host_wait(h, &h->hs_send_done, &h->hs_recv_done,
                              deadline, what, err);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
}

/* The pair's payload is this rank's pattern, corrupted as in the ring by
 * --debug-corrupt-rank, so a corrupting rank is caught by its partners. */
static void fill_pair(struct host *h, uint64_t count)
{
    fill_pattern(h->sendbuf, count, h->rank);
    if (h->rank == h->run->cfg.debug_corrupt_rank)
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
    bool slow = h->rank == h->run->cfg.debug_slow_rank;
    char what[64];
    double t0;
    pf_err rc = PF_OK;

    if (peer < 0 || peer >= h->n || peer == h->rank)
        return pf_fail(err, PF_ERR_USAGE, "host engine: no pair with rank %d "
                       "(%d ranks)", peer, h->n);
    if (count == 0 || count > h->max_count ||
        (count + h->chunk_elems - 1) / h->chunk_elems * (uint64_t)(iters + 1)
            > TAG_CHUNK_MASK)
        return pf_fail(err, PF_ERR_USAGE, "host engine: pair exchange of %llu "
                       "elements x %d does not fit (%llu max)",
                       (unsigned long long)count, iters,
                       (unsigned long long)h->max_count);
    snprintf(what, sizeof(what), "pairwise test with rank %d", peer);
    h->pair_peer = peer;
    fill_pair(h, count);
    /* The warm-up also opens the connection where the ring never did. */
    rc = pair_exchange(h, peer, round, 0, count, false, deadline, what, err);
    t0 = pf_now_s();
    for (int i = 1; i <= iters && rc == PF_OK; i++)
        rc = pair_exchange(h, peer, round, i, count, slow, deadline, what,
                           err);
    *seconds = pf_now_s() - t0;
    *wrong = rc == PF_OK ? count_pair_wrong(h, peer, count) : 0;
    h->pair_peer = -1;
    return rc;
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
};
