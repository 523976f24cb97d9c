/* rendezvous heartbeat (rendezvous.h): a thread that beats on every
 * control connection, and the check that names a silent or stalled peer.
 *
 * The thread only sends, so it shares nothing with the main thread's
 * reads: a connection's receive buffer stays the main thread's alone, and
 * sends are kept whole by a lock per connection (the thread skips a beat
 * where the main thread is sending, and where the socket has no room: a
 * frame is never left half-written). The receiving side judges silence by
 * when bytes last arrived (pf_conn.heard_ms), read before it judges, so a
 * rank that was itself busy for a while finds its peers' beats waiting in
 * the socket and blames nobody; rdv_check_silent (rdv_census.c) judges.
 * It calls nothing else of the rendezvous: the group's operations, its
 * census and its failure all stand on it. */
#include "rendezvous.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "rdv_impl.h"

struct rdv_beat {
    pthread_t thread;
    pthread_mutex_t mu;               /* guards stop */
    pthread_cond_t cv;
    bool stop;
    pthread_mutex_t *send;            /* by connection */
    int first, last;                  /* connections beaten: [first, last) */
    int beat_ms;
    _Atomic int64_t touched;          /* main thread's last group call */
    _Atomic int64_t frozen;           /* longest gap between two wake-ups
                                         past the silence window, ms */
    _Atomic int64_t woke;             /* its last wake-up */
    atomic_bool waiting;              /* ... was an engine's poll */
};

static void put_u32(uint8_t b[4], uint32_t v)
{
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

/* One beat on every connection that can take it now. */
static void beat_once(struct rdv *r)
{
    struct rdv_beat *bt = r->beat;
    int64_t now = pf_now_ms(), since = now - atomic_load(&bt->touched);
    uint32_t stall = atomic_load(&bt->waiting) && since > 0
                         ? (uint32_t)(since > UINT32_MAX ? UINT32_MAX : since)
                         : 0;
    uint8_t body[4];

    put_u32(body, stall);
    for (int i = bt->first; i < bt->last; i++) {
        struct pollfd p = { .events = POLLOUT };

        /* The fd is read under the lock: the goodbye closes connections
         * one by one while this thread still beats on the others. */
        if (pthread_mutex_trylock(&bt->send[i]) != 0)
            continue;
        p.fd = r->conns[i].fd;
        /* Room for a whole frame, or no beat this time. */
        if (p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLOUT))
            pf_wire_send(&r->conns[i], PF_RDV_BEAT, body, sizeof(body),
                         pf_deadline_in(100), NULL);
        pthread_mutex_unlock(&bt->send[i]);
    }
}

static void *beat_main(void *arg)
{
    struct rdv *r = arg;
    struct rdv_beat *bt = r->beat;

    int64_t last = pf_now_ms();

    pthread_mutex_lock(&bt->mu);
    while (!bt->stop) {
        struct timespec until;
        int64_t now = pf_now_ms();

        /* A wake-up this late means the whole process stood still (a
         * SIGSTOP, a frozen host): the group has named it silent by now,
         * and once it runs again it must say so rather than blame those
         * who went on without it. */
        if (now - last >= r->silent_ms &&
            now - last > atomic_load(&bt->frozen))
            atomic_store(&bt->frozen, now - last);
        last = now;
        atomic_store(&bt->woke, now);
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += bt->beat_ms / 1000;
        until.tv_nsec += (long)(bt->beat_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!bt->stop &&
               pthread_cond_timedwait(&bt->cv, &bt->mu, &until) != ETIMEDOUT)
            ;
        if (bt->stop)
            break;
        pthread_mutex_unlock(&bt->mu);
        beat_once(r);
        pthread_mutex_lock(&bt->mu);
    }
    pthread_mutex_unlock(&bt->mu);
    return NULL;
}

pf_err rdv_beat_start(struct rdv *r, int beat_ms, char *err)
{
    struct rdv_beat *bt;
    pthread_condattr_t ca;
    int n = r->boot.rank == 0 ? r->boot.world : 1, rc;
    int64_t now = pf_now_ms();

    if (r->boot.world < 2)
        return PF_OK;
    bt = calloc(1, sizeof(*bt));
    r->stall = calloc((size_t)n, sizeof(*r->stall));
    if (!bt || !r->stall ||
        !(bt->send = calloc((size_t)n, sizeof(*bt->send)))) {
        free(bt);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the heartbeat");
    }
    for (int i = 0; i < n; i++) {
        pthread_mutex_init(&bt->send[i], NULL);
        r->conns[i].heard_ms = now;   /* the join was heard */
    }
    bt->first = r->boot.rank == 0 ? 1 : 0;
    bt->last = n;
    bt->beat_ms = beat_ms > 0 ? beat_ms : PF_RDV_BEAT_MS;
    atomic_store(&bt->touched, now);
    atomic_store(&bt->woke, now);
    atomic_store(&bt->waiting, false);
    pthread_mutex_init(&bt->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&bt->cv, &ca);
    pthread_condattr_destroy(&ca);
    r->beat = bt;
    rc = pthread_create(&bt->thread, NULL, beat_main, r);
    if (rc != 0) {
        r->beat = NULL;
        pthread_cond_destroy(&bt->cv);
        pthread_mutex_destroy(&bt->mu);
        for (int i = 0; i < n; i++)
            pthread_mutex_destroy(&bt->send[i]);
        free(bt->send);
        free(bt);
        return pf_fail(err, PF_ERR_SYS, "cannot start the heartbeat thread: "
                       "%s", strerror(rc));
    }
    return PF_OK;
}

void rdv_beat_stop(struct rdv *r)
{
    struct rdv_beat *bt = r->beat;

    if (!bt)
        return;
    pthread_mutex_lock(&bt->mu);
    bt->stop = true;
    pthread_cond_signal(&bt->cv);
    pthread_mutex_unlock(&bt->mu);
    pthread_join(bt->thread, NULL);
    pthread_cond_destroy(&bt->cv);
    pthread_mutex_destroy(&bt->mu);
    for (int i = 0; i < bt->last; i++)
        pthread_mutex_destroy(&bt->send[i]);
    free(bt->send);
    free(bt);
    r->beat = NULL;
}

void rdv_lock(struct rdv *r, int i)
{
    if (r->beat)
        pthread_mutex_lock(&r->beat->send[i]);
}

void rdv_unlock(struct rdv *r, int i)
{
    if (r->beat)
        pthread_mutex_unlock(&r->beat->send[i]);
}

void rdv_touch(struct rdv *r, bool waiting)
{
    if (!r->beat)
        return;
    atomic_store(&r->beat->touched, pf_now_ms());
    atomic_store(&r->beat->waiting, waiting);
}

void rdv_beat_in(struct rdv *r, int i, const uint8_t *b, size_t len)
{
    if (!r->stall || len < 4)
        return;
    r->stall[i] = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
                  (uint32_t)b[2] << 8 | b[3];
}

int64_t rdv_self_frozen_ms(const struct rdv *r)
{
    struct rdv_beat *bt = r->beat;
    int64_t frozen, since;

    if (!bt)
        return 0;
    frozen = atomic_load(&bt->frozen);
    /* Just resumed, the main thread may look before the beat thread has
     * woken up to measure the gap: the time since its last wake-up. */
    since = pf_now_ms() - atomic_load(&bt->woke);
    if (since >= r->silent_ms && since > frozen)
        frozen = since;
    return frozen;
}
