/* The shared-memory meeting place of the GPU double (meet.h). Process-
 * shared state is C11 atomics on the mapping (lock-free, so address-free)
 * and a futex lock; zero-filled is the valid initial state, so no process
 * has to initialise the segment before the others may use it. */
#include "meet.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DATA_OFF 4096                 /* slots' data start a page in */

struct slot {
    _Atomic uint32_t lock;            /* 0 free, 1 held, 2 held + waiters */
    _Atomic uint32_t round;           /* which round of this slot is open */
    _Atomic uint32_t arrived;         /* ranks that deposited */
    _Atomic uint32_t departed;        /* ranks that copied the sum out */
    _Atomic uint64_t count;           /* floats in this round's sum */
};

struct head {
    _Atomic uint32_t nranks;          /* set by the first to open */
    _Atomic uint32_t attached;        /* ranks in, over all processes */
    struct slot slot[MEET_SLOTS];
};

struct meet {
    struct head *h;
    size_t map_bytes, slot_bytes;
    int nranks;
    bool unlinked;
    char name[64];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static float *data(const struct meet *m, uint64_t seq)
{
    return (float *)((char *)m->h + DATA_OFF +
                     (size_t)(seq % MEET_SLOTS) * m->slot_bytes);
}

static struct slot *slot_of(const struct meet *m, uint64_t seq)
{
    return &m->h->slot[seq % MEET_SLOTS];
}

static uint32_t round_of(uint64_t seq)
{
    return (uint32_t)(seq / MEET_SLOTS);
}

/* ------------------------------------------------------------ the lock */

static void futex(_Atomic uint32_t *w, int op, uint32_t v,
                  const struct timespec *ts)
{
    syscall(SYS_futex, (uint32_t *)w, op, v, ts, NULL, 0);
}

static bool lock(_Atomic uint32_t *l, double deadline)
{
    uint32_t c = 0;

    if (atomic_compare_exchange_strong(l, &c, 1))
        return true;
    if (c != 2)
        c = atomic_exchange(l, 2);
    while (c != 0) {
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        if (now_s() > deadline)
            return false;
        futex(l, FUTEX_WAIT, 2, &ts);
        c = atomic_exchange(l, 2);
    }
    return true;
}

static void unlock(_Atomic uint32_t *l)
{
    if (atomic_fetch_sub(l, 1) != 1) {
        atomic_store(l, 0);
        futex(l, FUTEX_WAKE, 1, NULL);
    }
}

/* --------------------------------------------------------- the segment */

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

struct meet *meet_open(const void *id, size_t id_len, int nranks,
                       size_t slot_bytes, char *why, size_t len)
{
    struct meet *m = calloc(1, sizeof(*m));
    struct stat st;
    uint32_t zero = 0;
    int fd;

    if (!m) {
        snprintf(why, len, "no memory");
        return NULL;
    }
    m->nranks = nranks;
    m->slot_bytes = (slot_bytes + 4095) / 4096 * 4096;
    m->map_bytes = DATA_OFF + MEET_SLOTS * m->slot_bytes;
    snprintf(m->name, sizeof(m->name), "/pf-double-%016llx",
             (unsigned long long)fnv1a(id, id_len));
    fd = shm_open(m->name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, len, "shm_open %s: %s", m->name, strerror(errno));
        free(m);
        return NULL;
    }
    /* Sparse: only the pages an all_reduce touches are ever allocated. */
    if (fstat(fd, &st) != 0 ||
        ((size_t)st.st_size < m->map_bytes &&
         ftruncate(fd, (off_t)m->map_bytes) != 0)) {
        snprintf(why, len, "sizing %s: %s", m->name, strerror(errno));
        close(fd);
        free(m);
        return NULL;
    }
    m->h = mmap(NULL, m->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                0);
    close(fd);
    if (m->h == MAP_FAILED) {
        snprintf(why, len, "mmap %s: %s", m->name, strerror(errno));
        free(m);
        return NULL;
    }
    if (!atomic_compare_exchange_strong(&m->h->nranks, &zero,
                                        (uint32_t)nranks) &&
        zero != (uint32_t)nranks) {
        snprintf(why, len, "%s holds a communicator of %u ranks, not %d",
                 m->name, zero, nranks);
        munmap(m->h, m->map_bytes);
        free(m);
        return NULL;
    }
    return m;
}

void meet_join(struct meet *m, int k)
{
    uint32_t in = atomic_fetch_add(&m->h->attached, (uint32_t)k) + (uint32_t)k;

    if (in >= (uint32_t)m->nranks && !m->unlinked) {
        shm_unlink(m->name);          /* everyone has it mapped */
        m->unlinked = true;
    }
}

const char *meet_name(const struct meet *m)
{
    return m->name;
}

void meet_close(struct meet *m)
{
    if (!m)
        return;
    if (!m->unlinked)
        shm_unlink(m->name);          /* a group that never met in full */
    munmap(m->h, m->map_bytes);
    free(m);
}

/* ---------------------------------------------------------- the ops */

int meet_deposit(struct meet *m, uint64_t seq, const float *const *bufs,
                 int nb, size_t count, double deadline, char *why,
                 size_t len)
{
    struct slot *s = slot_of(m, seq);
    float *d = data(m, seq);
    uint32_t a;

    if (count * sizeof(float) > m->slot_bytes) {
        snprintf(why, len, "all_reduce of %zu bytes is larger than the "
                 "double's %zu-byte meeting slot (PF_DOUBLE_MEET_BYTES)",
                 count * sizeof(float), m->slot_bytes);
        return -1;
    }
    if (atomic_load_explicit(&s->round, memory_order_acquire) !=
        round_of(seq))
        return 0;
    if (!lock(&s->lock, deadline)) {
        snprintf(why, len, "the lock of all_reduce %llu was held past the "
                 "deadline (a process died holding it?)",
                 (unsigned long long)seq);
        return -1;
    }
    a = atomic_load_explicit(&s->arrived, memory_order_relaxed);
    if (a > 0 && atomic_load(&s->count) != count) {
        unlock(&s->lock);
        snprintf(why, len, "all_reduce %llu: %zu elements here, %llu in "
                 "another process", (unsigned long long)seq, count,
                 (unsigned long long)atomic_load(&s->count));
        return -1;
    }
    for (int k = 0; k < nb; k++) {
        if (a == 0 && k == 0) {
            memcpy(d, bufs[0], count * sizeof(float));
            continue;
        }
        for (size_t i = 0; i < count; i++)
            d[i] += bufs[k][i];
    }
    atomic_store(&s->count, count);
    atomic_store_explicit(&s->arrived, a + (uint32_t)nb,
                          memory_order_release);
    unlock(&s->lock);
    return 1;
}

bool meet_ready(const struct meet *m, uint64_t seq)
{
    struct slot *s = slot_of(m, seq);

    return atomic_load_explicit(&s->round, memory_order_acquire) ==
               round_of(seq) &&
           atomic_load_explicit(&s->arrived, memory_order_acquire) >=
               (uint32_t)m->nranks;
}

const float *meet_result(const struct meet *m, uint64_t seq)
{
    return data(m, seq);
}

void meet_leave(struct meet *m, uint64_t seq, int nb)
{
    struct slot *s = slot_of(m, seq);
    uint32_t gone = atomic_fetch_add(&s->departed, (uint32_t)nb) + (uint32_t)nb;

    if (gone < (uint32_t)m->nranks)
        return;
    /* The last one out opens the slot's next round. */
    atomic_store(&s->arrived, 0);
    atomic_store(&s->departed, 0);
    atomic_store(&s->count, 0);
    atomic_store_explicit(&s->round, round_of(seq) + 1, memory_order_release);
}
