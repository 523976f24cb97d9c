/* The host engine: ring reduce-scatter + all-gather of float32 host
 * buffers over libfabric RDM endpoints (host.h, host_ep.c), striped over
 * one endpoint per NIC (rails): chunk c travels on rail c % nrails, and
 * each rail has its own columns (host_cols.c), so each NIC's share is
 * timed alone. This file hands an all_reduce to the rails (rail 0 on the
 * caller's thread, the others on threads of their own) and runs the
 * pairwise re-test; the queues they all drive are host_queue.c.
 *
 * Tagged messages rather than plain ones (host.h, pf_host_tag). */
#include "../engine.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "host.h"
#include "reduce.h"
#include "ring.h"
#include "../../util/clock.h"
#include "../../util/log.h"

#define CORRUPT_STRIDE 1024           /* --debug-corrupt-rank: 1 in 1024 */
#define PATTERN_PERIOD 31             /* pf_pattern repeats every 31 */

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

/* --------------------------------------------------------- all_reduce */


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
        r->rc = pf_host_rail_run(h, r, false, r->err);
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

        if (rc == PF_OK &&
            (rc = pf_host_boot_check(h, now, h->what, err)) != PF_OK)
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

    h->seq = (h->seq + 1) & PF_HOST_TAG_SEQ_MASK;
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
            pf_host_col_next(h, &r->cols[i]);
            pf_host_col_advance(h, &r->cols[i]);
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
    rc = pf_host_rail_run(h, &h->rails[0], true, err);
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
        return pf_host_deadline_passed(h, h->what, err);
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
    if (boot->world > PF_HOST_TAG_RING_RANKS) {
        free(h);
        return pf_fail(err, PF_ERR_USAGE, "host engine: %d ranks: a ring "
                       "step must fit the message tag's 16-bit step field, "
                       "so at most %d ranks", boot->world,
                       PF_HOST_TAG_RING_RANKS);
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
            tag = pf_host_tag((uint32_t)round, PF_HOST_PAIR_STEP,
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
                (uint64_t)(iters + 1) > PF_HOST_TAG_CHUNK_MASK)
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
