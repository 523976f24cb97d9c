/* Host engine columns (host.h): a column carries one chunk index through
 * all 2(n-1) ring steps, one step at a time; both the send and the
 * receive of step t complete before step t+1 is posted, which keeps
 * in-place buffers safe without further tracking. A completion
 * (host_queue.c) moves its column on; the column never waits itself. */
#include "host.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "reduce.h"
#include "ring.h"
#include "../../util/clock.h"

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
void pf_host_col_next(struct host *h, struct host_col *c)
{
    struct host_rail *r = c->rail;

    if (r->next_chunk < r->nchunks)
        col_start(h, c, (uint64_t)r->index +
                            r->next_chunk++ * (uint64_t)h->nrails);
}

/* Finish every step whose send and receive are both done. */
void pf_host_col_advance(struct host *h, struct host_col *c)
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
        pf_host_col_next(h, c);
    }
}

pf_err pf_host_col_post(struct host *h, struct host_col *c, char *err)
{
    struct host_rail *r = c->rail;
    uint64_t tag = pf_host_tag(h->seq, c->step, c->chunk);
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
