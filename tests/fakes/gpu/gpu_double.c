/* A test double of the CUDA runtime and NCCL entry points that
 * agent/util/gpulib.h loads, on host memory, for CI machines without GPUs.
 * The engine loads it through EFA_PREFLIGHT_CUDART and EFA_PREFLIGHT_NCCL
 * (both may name this one library). It drives the engine's control flow
 * only: its timings mean nothing and are never reported as numbers.
 *
 * "Device" memory is host memory; copies and reductions happen at once.
 * An all_reduce whose ranks all live in this process is carried out when
 * every one of them has launched it within one group. Ranks spread over
 * processes (each process its own "node") meet in a shared-memory segment
 * named from the unique id (meet.h): a group's launch deposits this
 * process's share and returns, as a real launch does; the op completes -
 * its streams and events turn ready - once every rank has deposited, which
 * any later call of the double notices (stream and event queries, async
 * error polls, copies, which first drain their stream within
 * PF_DOUBLE_MEET_WAIT_MS). A process's cross-process all_reduces complete
 * in launch order. A rank whose peers never come waits, like a lost peer.
 *
 * Behaviour is set by environment variables, read when used:
 *   PF_DOUBLE_GPUS=N          devices (default 2; CUDA_VISIBLE_DEVICES
 *                             narrows them as the real runtime does)
 *   PF_DOUBLE_NCCL_VERSION=V  ncclGetVersion's answer (default 22809)
 *   PF_DOUBLE_FAULT=F         init_hang   init never leaves ncclInProgress
 *                             init_error  init ends in ncclSystemError
 *                             async_error after PF_DOUBLE_FAULT_AT
 *                                         all_reduces per rank, the
 *                                         communicator reports
 *                                         ncclRemoteError and its stream
 *                                         never completes
 *                             hang        the same without an error
 *                             split_error ncclCommSplit fails
 *                             split_hang  the split never completes
 *   PF_DOUBLE_FAULT_AT=K      default 0
 *   PF_DOUBLE_CORRUPT=R:N[,R:N...]
 *                             after each all_reduce, add 1 to the first N
 *                             elements of the result on the GPU that holds
 *                             rank R of the run's communicator (the first
 *                             one a process inits while it has no other):
 *                             in every communicator that GPU is part of
 *                             (its split, the pairwise test's 2-rank
 *                             ones), as a faulty GPU of one node would;
 *                             the other processes (nodes) stay clean. A
 *                             list makes several GPUs faulty.
 *   PF_DOUBLE_SLOW=R:MBPS[,R:MBPS...]
 *                             the GPU holding rank R (resolved as above)
 *                             moves MBPS MB/s: each all_reduce of B bytes
 *                             on it ends B / MBPS later on its streams'
 *                             clock, so the events timing it (the
 *                             pairwise test's too, in every communicator
 *                             on that GPU) say so; nothing sleeps, and its
 *                             partners' timings are left alone (the
 *                             engine takes the slower end of a pair)
 *   PF_DOUBLE_CORRUPT_GPU=D:N the same for every result that lands on
 *                             (physical) GPU D, whatever the communicator:
 *                             a GPU whose memory corrupts what it receives
 *   PF_DOUBLE_TRACE=path      append one line per init/split/abort/destroy
 *                             and per shared-memory segment opened
 *   PF_DOUBLE_NETWORK, PF_DOUBLE_TRANSPORT, PF_DOUBLE_PLUGIN=loaded|missing
 *                             what the fake INFO log says (defaults
 *                             Socket, P2P/CUMEM/read, missing)
 *   PF_DOUBLE_MEET_BYTES=N    largest cross-process all_reduce (default
 *                             256 MiB; the segment is sparse)
 *   PF_DOUBLE_MEET_WAIT_MS=N  bound of the waits for other processes
 *                             (default 30000)
 *
 * Like the libraries it stands in for, it keeps process-wide state (the
 * communicators and the group in progress): that is its job. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "meet.h"

#define MAX_COMMS 64
#define MAX_DEVS 256
#define LAG_HISTORY 256
#define MAX_STREAMS 256
#define MAX_OPS 256
#define ID_BYTES 128

enum { SUCCESS = 0, ERR_INVALID_VALUE = 1, ERR_NO_DEVICE = 100,
       ERR_NOT_READY = 600 };
enum { NCCL_OK = 0, NCCL_SYSTEM = 2, NCCL_INTERNAL = 3, NCCL_ARG = 4,
       NCCL_USAGE = 5, NCCL_REMOTE = 6, NCCL_IN_PROGRESS = 7 };

typedef struct { char internal[ID_BYTES]; } unique_id;

struct stream {
    bool used;
    bool stuck;                  /* work queued that never completes */
    double lag;                  /* seconds its clock is behind: a slow
                                    GPU's all_reduces so far */
    double lag_at[LAG_HISTORY];  /* lag once `completed` reached i, at
                                    i % LAG_HISTORY */
    double done_at[LAG_HISTORY]; /* host time op i was seen complete, at
                                    i % LAG_HISTORY */
    uint64_t queued, completed;  /* cross-process all_reduces */
};

struct event {
    double t;                    /* host time it completed, seconds */
    struct stream *s;
    bool recorded;
    bool timed;                  /* t is known: the work before it is done */
    uint64_t target;             /* s->queued when recorded */
};

/* The ranks of one unique id in this process, when others live elsewhere. */
struct clique {
    bool used;
    unique_id id;
    int nranks;
    int refs;                    /* comms of this process on it */
    struct meet *meet;
};

struct comm {
    bool used;
    unique_id id;
    int rank, nranks;
    bool blocking;
    int state;                   /* what ncclCommGetAsyncError reports */
    bool split;                  /* made by ncclCommSplit */
    int dev;                     /* physical GPU current at init */
    struct comm **out;           /* where a background split reports it */
    struct comm *parent_of;      /* the comm it was split from */
    long ops;                    /* all_reduces launched */
    struct clique *q;            /* NULL: every rank is in this process */
    uint64_t launched;           /* cross-process all_reduces launched */
};

struct op {
    struct comm *c;
    const float *send;
    float *recv;
    size_t count;
    struct stream *s;
    uint64_t seq;                /* cross-process: the comm's op number */
};

/* One cross-process all_reduce of this process: its ranks' share. */
struct pending {
    struct clique *q;
    uint64_t seq;
    size_t count;
    bool deposited;
    int n;                       /* members left; 0 = dropped */
    struct op m[MAX_COMMS];
};

static struct {
    struct stream streams[MAX_STREAMS];
    struct comm comms[MAX_COMMS];
    int group_depth;
    int nops;
    struct op ops[MAX_OPS];
    struct comm *pending_init[MAX_COMMS];
    int npending;
    FILE *log;
    bool log_opened;
    bool split_async;            /* this group holds a nonblocking split */
    long ids;
    int cur_dev;                 /* cudaSetDevice's, visible index */
    struct clique cliques[MAX_COMMS];
    struct pending *queue;       /* cross-process ops, launch order */
    size_t qhead, qlen, qcap;
    char last_error[256];        /* what ncclGetLastError says */
    unique_id world;             /* the run's communicator's id */
    long corrupt_n[MAX_DEVS];    /* PF_DOUBLE_CORRUPT's elements per
                                    physical GPU here, 0 = clean */
    double slow_bps[MAX_DEVS];   /* PF_DOUBLE_SLOW's bytes/s per
                                    physical GPU, 0 = full speed */
} dbl;

/* ------------------------------------------------------------ helpers */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static bool fault_is(const char *f)
{
    return strcmp(env_or("PF_DOUBLE_FAULT", ""), f) == 0;
}

static void trace(const char *fmt, ...)
{
    const char *path = getenv("PF_DOUBLE_TRACE");
    FILE *f;
    va_list ap;

    if (!path || !*path || !(f = fopen(path, "a")))
        return;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static int device_count(void)
{
    int n = atoi(env_or("PF_DOUBLE_GPUS", "2"));
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");

    if (vis) {
        int listed = *vis ? 1 : 0;
        for (const char *p = vis; *p; p++)
            listed += *p == ',';
        if (listed < n)
            n = listed;
    }
    return n;
}

/* NCCL's INFO log, as the engine's parser expects to find it. */
static void log_line(int dev, const char *fmt, ...)
{
    va_list ap;

    if (!dbl.log_opened) {
        const char *lvl = getenv("NCCL_DEBUG");
        const char *file = getenv("NCCL_DEBUG_FILE");
        dbl.log_opened = true;
        if (lvl && strcasecmp(lvl, "INFO") == 0 && file && *file) {
            char path[1024], host[256] = "host";
            size_t o = 0;
            gethostname(host, sizeof(host) - 1);
            host[strcspn(host, ".")] = '\0';
            for (const char *p = file; *p && o + 64 < sizeof(path); p++) {
                if (p[0] == '%' && p[1] == 'p') {
                    o += (size_t)snprintf(path + o, sizeof(path) - o, "%d",
                                          (int)getpid());
                    p++;
                } else if (p[0] == '%' && p[1] == 'h') {
                    o += (size_t)snprintf(path + o, sizeof(path) - o, "%.60s",
                                          host);
                    p++;
                } else {
                    path[o++] = *p;
                }
            }
            path[o] = '\0';
            dbl.log = fopen(path, "w");
        }
    }
    if (!dbl.log)
        return;
    fprintf(dbl.log, "double:%d:%d [%d] NCCL INFO ", (int)getpid(),
            (int)getpid(), dev);
    va_start(ap, fmt);
    vfprintf(dbl.log, fmt, ap);
    va_end(ap);
    fputc('\n', dbl.log);
    fflush(dbl.log);
}

/* What a rank's result buffer gets: the sum, or the fault or corruption
 * the environment asks for. */
static void deliver(struct op *o, const float *sum)
{
    const char *corrupt_gpu = getenv("PF_DOUBLE_CORRUPT_GPU");
    long at = atol(env_or("PF_DOUBLE_FAULT_AT", "0")), gpu_n = 0;
    long bad_n = o->c->dev >= 0 && o->c->dev < MAX_DEVS
                     ? dbl.corrupt_n[o->c->dev] : 0;
    int bad_gpu = -1;

    if (corrupt_gpu && sscanf(corrupt_gpu, "%d:%ld", &bad_gpu, &gpu_n) != 2)
        bad_gpu = -1;
    o->c->ops++;
    if ((fault_is("async_error") || fault_is("hang")) && o->c->ops > at) {
        o->s->stuck = true;
        if (fault_is("async_error"))
            o->c->state = NCCL_REMOTE;
        return;
    }
    memcpy(o->recv, sum, o->count * sizeof(float));
    if (o->c->dev >= 0 && o->c->dev < MAX_DEVS && dbl.slow_bps[o->c->dev] > 0)
        o->s->lag += (double)(o->count * sizeof(float)) /
                     dbl.slow_bps[o->c->dev];
    for (long i = 0; i < bad_n && (size_t)i < o->count; i++)
        o->recv[i] += 1.0f;
    if (o->c->dev == bad_gpu)
        for (long i = 0; i < gpu_n && (size_t)i < o->count; i++)
            o->recv[i] += 1.0f;
}

/* One more cross-process all_reduce of s done: its clock then. */
static void done_one(struct stream *s)
{
    s->completed++;
    s->lag_at[s->completed % LAG_HISTORY] = s->lag;
    s->done_at[s->completed % LAG_HISTORY] = now_s();
}

/* The host time s's op number `target` was seen complete (now when that
 * is too long ago to remember): an event queried late still gets the
 * time its work ended, as a GPU's event does, not the time it was read.
 * Without it a process driving several GPUs timed the first GPU it read
 * by when it got round to reading, not by its work. */
static double done_when(const struct stream *s, uint64_t target)
{
    if (target == 0 || s->completed - target >= LAG_HISTORY)
        return now_s();
    return s->done_at[target % LAG_HISTORY];
}

/* s's lag once its op number `target` was done (the current one when that
 * is too long ago to remember): an event seen late still gets the clock
 * of when its work ended. */
static double lag_when(const struct stream *s, uint64_t target)
{
    if (target == 0 || s->completed - target >= LAG_HISTORY)
        return target == 0 ? 0 : s->lag;
    return s->lag_at[target % LAG_HISTORY];
}

/* ------------------------------------------- ranks in other processes */

static double meet_wait_s(void)
{
    return atof(env_or("PF_DOUBLE_MEET_WAIT_MS", "30000")) / 1e3;
}

/* The clique of id in this process, opened on first use; k more local
 * ranks join it. NULL with dbl.last_error set on failure. */
static struct clique *clique_join(const unique_id *id, int nranks, int k)
{
    struct clique *q = NULL;

    for (int i = 0; i < MAX_COMMS && !q; i++)
        if (dbl.cliques[i].used &&
            !memcmp(&dbl.cliques[i].id, id, sizeof(*id)))
            q = &dbl.cliques[i];
    for (int i = 0; i < MAX_COMMS && !q; i++) {
        if (dbl.cliques[i].used)
            continue;
        size_t bytes = (size_t)atoll(env_or("PF_DOUBLE_MEET_BYTES",
                                            "268435456"));
        struct meet *m = meet_open(id, sizeof(*id), nranks, bytes,
                                   dbl.last_error, sizeof(dbl.last_error));
        if (!m)
            return NULL;
        q = &dbl.cliques[i];
        *q = (struct clique){ .used = true, .id = *id, .nranks = nranks,
                              .meet = m };
        trace("meet %s nranks %d", meet_name(m), nranks);
    }
    if (!q) {
        snprintf(dbl.last_error, sizeof(dbl.last_error),
                 "double: more than %d communicators", MAX_COMMS);
        return NULL;
    }
    meet_join(q->meet, k);
    q->refs += k;
    return q;
}

/* Comms just made (list[0..n-1]) whose peers are not all here: put each
 * unique id's ones on its clique. */
static void meet_peers(struct comm **list, int n)
{
    for (int i = 0; i < n; i++) {
        struct comm *c = list[i];
        int k = 0;

        if (c->q || c->state == NCCL_SYSTEM)
            continue;
        for (int j = 0; j < n; j++)
            k += !list[j]->q && !memcmp(&list[j]->id, &c->id, sizeof(c->id));
        if (k >= c->nranks)
            continue;                 /* all here: reduced in place */
        struct clique *q = clique_join(&c->id, c->nranks, k);
        for (int j = i; j < n; j++) {
            if (list[j]->q || memcmp(&list[j]->id, &c->id, sizeof(c->id)))
                continue;
            if (q)
                list[j]->q = q;
            else
                list[j]->state = NCCL_SYSTEM;
        }
    }
}

static void pop_pending(void)
{
    if (++dbl.qhead == dbl.qlen)
        dbl.qhead = dbl.qlen = 0;
}

/* Queue op o of this group (entries from `first` on are this group's):
 * ranks of one comm clique and op number share an entry. */
static bool enqueue(struct op *o, size_t first)
{
    struct pending *p = NULL;

    for (size_t i = first; i < dbl.qlen && !p; i++)
        if (dbl.queue[i].q == o->c->q && dbl.queue[i].seq == o->seq &&
            dbl.queue[i].n < MAX_COMMS)
            p = &dbl.queue[i];
    if (!p) {
        if (dbl.qlen == dbl.qcap && dbl.qhead > 0 && dbl.qhead == first) {
            /* nothing older is left: slide this group down */
            memmove(dbl.queue, dbl.queue + dbl.qhead,
                    (dbl.qlen - dbl.qhead) * sizeof(*dbl.queue));
            dbl.qlen -= dbl.qhead;
            dbl.qhead = 0;
            return enqueue(o, 0);
        }
        if (dbl.qlen == dbl.qcap) {
            size_t cap = dbl.qcap ? 2 * dbl.qcap : 64;
            struct pending *q = realloc(dbl.queue, cap * sizeof(*q));
            if (!q)
                return false;
            dbl.queue = q;
            dbl.qcap = cap;
        }
        p = &dbl.queue[dbl.qlen++];
        *p = (struct pending){ .q = o->c->q, .seq = o->seq,
                               .count = o->count };
    }
    p->m[p->n++] = *o;
    o->s->queued++;
    return true;
}

static void fail_pending(struct pending *p, const char *why)
{
    snprintf(dbl.last_error, sizeof(dbl.last_error), "double: %.230s", why);
    for (int k = 0; k < p->n; k++) {
        p->m[k].c->state = NCCL_SYSTEM;
        p->m[k].s->stuck = true;
        done_one(p->m[k].s);
    }
}

/* Move this process's cross-process all_reduces along, oldest first:
 * deposit the next one, finish those every rank has deposited. Never
 * waits for another process. */
static void progress(void)
{
    char why[256];

    while (dbl.qhead < dbl.qlen) {
        struct pending *p = &dbl.queue[dbl.qhead];

        if (p->n == 0) {              /* its comms were aborted */
            pop_pending();
            continue;
        }
        if (!p->deposited) {
            const float *bufs[MAX_COMMS];
            for (int k = 0; k < p->n; k++)
                bufs[k] = p->m[k].send;
            int r = meet_deposit(p->q->meet, p->seq, bufs, p->n, p->count,
                                 now_s() + meet_wait_s(), why, sizeof(why));
            if (r < 0) {
                fail_pending(p, why);
                pop_pending();
                continue;
            }
            if (r == 0)
                return;
            p->deposited = true;
        }
        if (!meet_ready(p->q->meet, p->seq))
            return;
        const float *sum = meet_result(p->q->meet, p->seq);
        for (int k = 0; k < p->n; k++) {
            deliver(&p->m[k], sum);
            done_one(p->m[k].s);
        }
        meet_leave(p->q->meet, p->seq, p->n);
        pop_pending();
    }
}

/* An aborted or destroyed comm's queued ops never complete: drop them, so
 * their streams drain as aborted kernels do. */
static void drop_pending(struct comm *c)
{
    for (size_t i = dbl.qhead; i < dbl.qlen; i++) {
        struct pending *p = &dbl.queue[i];
        for (int k = 0; k < p->n;) {
            if (p->m[k].c != c) {
                k++;
                continue;
            }
            done_one(p->m[k].s);
            p->m[k] = p->m[--p->n];
        }
    }
}

/* A copy on a stream waits for the all_reduces queued before it. */
static void drain(struct stream *s)
{
    double until;

    if (!s || s->completed >= s->queued)
        return;
    until = now_s() + meet_wait_s();
    while (s->completed < s->queued && !s->stuck && now_s() < until) {
        progress();
        if (s->completed < s->queued) {
            struct timespec ts = { 0, 50 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
}

/* --------------------------------------------------------- CUDA runtime */

int cudaGetDeviceCount(int *count)
{
    *count = device_count();
    return *count > 0 ? SUCCESS : ERR_NO_DEVICE;
}

int cudaSetDevice(int device)
{
    if (device < 0 || device >= device_count())
        return ERR_INVALID_VALUE;
    dbl.cur_dev = device;
    return SUCCESS;
}

int cudaGetDeviceProperties(void *prop, int device)
{
    size_t mem = (size_t)141 << 30;

    if (device < 0 || device >= device_count())
        return ERR_INVALID_VALUE;
    memset(prop, 0, 1008);
    snprintf((char *)prop, 256, "Double GPU %d", device);
    memcpy((char *)prop + 288, &mem, sizeof(mem));
    return SUCCESS;
}

/* The physical GPU behind visible device d: CUDA_VISIBLE_DEVICES' d-th
 * entry, as the real runtime maps it. */
static int physical(int device)
{
    const char *p = getenv("CUDA_VISIBLE_DEVICES");

    if (!p || !*p)
        return device;
    for (int i = 0; i < device && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return p ? atoi(p) : device;
}

int cudaDeviceGetPCIBusId(char *bus, int len, int device)
{
    if (device < 0 || device >= device_count())
        return ERR_INVALID_VALUE;
    snprintf(bus, (size_t)len, "0000:%02x:00.0", 0x18 + physical(device));
    return SUCCESS;
}

int cudaRuntimeGetVersion(int *v) { *v = 13000; return SUCCESS; }
int cudaDriverGetVersion(int *v) { *v = 13000; return SUCCESS; }

const char *cudaGetErrorString(int e)
{
    switch (e) {
    case SUCCESS: return "no error";
    case ERR_INVALID_VALUE: return "invalid argument";
    case ERR_NO_DEVICE: return "no CUDA-capable device is detected";
    case ERR_NOT_READY: return "device not ready";
    }
    return "unknown error";
}

int cudaMalloc(void **p, size_t n)
{
    *p = malloc(n ? n : 1);
    return *p ? SUCCESS : 2;          /* cudaErrorMemoryAllocation */
}

int cudaFree(void *p) { free(p); return SUCCESS; }
int cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
int cudaFreeHost(void *p) { free(p); return SUCCESS; }

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s)
{
    (void)kind;
    drain(s);
    memmove(dst, src, n);
    return SUCCESS;
}

int cudaMemsetAsync(void *p, int v, size_t n, void *s)
{
    drain(s);
    memset(p, v, n);
    return SUCCESS;
}

int cudaStreamCreateWithFlags(struct stream **out, unsigned flags)
{
    (void)flags;
    for (int i = 0; i < MAX_STREAMS; i++) {
        if (!dbl.streams[i].used) {
            dbl.streams[i] = (struct stream){ .used = true };
            *out = &dbl.streams[i];
            return SUCCESS;
        }
    }
    return ERR_INVALID_VALUE;
}

int cudaStreamDestroy(struct stream *s)
{
    s->used = false;
    return SUCCESS;
}

int cudaStreamQuery(struct stream *s)
{
    progress();
    if (s->stuck)
        return ERR_NOT_READY;
    if (s->completed < s->queued) {
        sched_yield();                /* the peers need the CPU, not us */
        return ERR_NOT_READY;
    }
    return SUCCESS;
}

int cudaEventCreateWithFlags(struct event **out, unsigned flags)
{
    (void)flags;
    *out = calloc(1, sizeof(**out));
    return *out ? SUCCESS : 2;
}

int cudaEventDestroy(struct event *e) { free(e); return SUCCESS; }

int cudaEventRecord(struct event *e, struct stream *s)
{
    e->t = now_s() + (s ? s->lag : 0);
    e->s = s;
    e->recorded = true;
    e->target = s ? s->queued : 0;
    e->timed = !s || s->completed >= s->queued;
    return SUCCESS;
}

int cudaEventQuery(struct event *e)
{
    progress();
    if (!e->recorded || !e->s)
        return SUCCESS;
    if (e->s->stuck)
        return ERR_NOT_READY;
    if (e->s->completed < e->target) {
        sched_yield();
        return ERR_NOT_READY;
    }
    if (!e->timed) {                  /* first seen done: its time */
        e->t = done_when(e->s, e->target) + lag_when(e->s, e->target);
        e->timed = true;
    }
    return SUCCESS;
}

int cudaEventElapsedTime(float *ms, struct event *a, struct event *b)
{
    if (!a->recorded || !b->recorded)
        return ERR_INVALID_VALUE;
    if ((!a->timed && cudaEventQuery(a) != SUCCESS) ||
        (!b->timed && cudaEventQuery(b) != SUCCESS))
        return ERR_NOT_READY;
    *ms = (float)((b->t - a->t) * 1e3);
    return SUCCESS;
}

/* ----------------------------------------------------------------- NCCL */

int ncclGetVersion(int *v)
{
    *v = atoi(env_or("PF_DOUBLE_NCCL_VERSION", "22809"));
    return NCCL_OK;
}

const char *ncclGetErrorString(int r)
{
    switch (r) {
    case NCCL_OK: return "no error";
    case NCCL_SYSTEM: return "unhandled system error";
    case NCCL_INTERNAL: return "internal error";
    case NCCL_ARG: return "invalid argument";
    case NCCL_USAGE: return "invalid usage";
    case NCCL_REMOTE: return "remote process exited or there was a network error";
    case NCCL_IN_PROGRESS: return "NCCL operation in progress";
    }
    return "unknown result code";
}

const char *ncclGetLastError(struct comm *c)
{
    (void)c;
    return fault_is("async_error") ? "double: injected remote error"
                                   : dbl.last_error;
}

static void log_init(int dev)
{
    int v = 0;
    ncclGetVersion(&v);
    log_line(dev, "NCCL version %d.%d.%d+cuda13.0", v / 10000,
             (v / 100) % 100, v % 100);
    if (strcmp(env_or("PF_DOUBLE_PLUGIN", "missing"), "loaded") == 0)
        log_line(dev, "NET/Plugin: Loaded net plugin Libfabric (v10)");
    else
        log_line(dev, "NET/Plugin: Could not find: libnccl-net.so. Using "
                      "internal network plugin.");
    log_line(dev, "Using network %s", env_or("PF_DOUBLE_NETWORK", "Socket"));
}

int ncclGetUniqueId(unique_id *id)
{
    memset(id, 0, sizeof(*id));
    snprintf(id->internal, sizeof(id->internal), "double-%d-%ld",
             (int)getpid(), ++dbl.ids);
    log_init(0);
    return NCCL_OK;
}

/* PF_DOUBLE_CORRUPT and PF_DOUBLE_SLOW name ranks of the run's
 * communicator: the first one inited while no other lives (the run's ranks
 * of this process join it in one group). The GPU holding such a rank here
 * is faulty, whatever communicator runs on it later. */
/* For each "R:X" of the list in variable name whose R is rank: X. */
static void each_fault(const char *name, int rank, int dev,
                       void (*set)(int dev, double x))
{
    const char *p = getenv(name);

    while (p && *p) {
        int r = -1;
        double x = 0;
        if (sscanf(p, "%d:%lf", &r, &x) == 2 && r == rank && x > 0) {
            set(dev, x);
            trace("%s rank %d on GPU %d", name, rank, dev);
        }
        p = strchr(p, ',');
        if (p)
            p++;
    }
}

static void set_corrupt(int dev, double n) { dbl.corrupt_n[dev] = (long)n; }
static void set_slow(int dev, double mbps) { dbl.slow_bps[dev] = mbps * 1e6; }

static void resolve_faults(const unique_id *id, int rank, int dev)
{
    bool alive = false;

    for (int i = 0; i < MAX_COMMS && !alive; i++)
        alive = dbl.comms[i].used;
    if (!alive) {
        dbl.world = *id;
        memset(dbl.corrupt_n, 0, sizeof(dbl.corrupt_n));
        memset(dbl.slow_bps, 0, sizeof(dbl.slow_bps));
    }
    if (memcmp(id, &dbl.world, sizeof(*id)) || dev < 0 || dev >= MAX_DEVS)
        return;
    each_fault("PF_DOUBLE_CORRUPT", rank, dev, set_corrupt);
    each_fault("PF_DOUBLE_SLOW", rank, dev, set_slow);
}

/* The 2.18 layout prefix: size, magic, version, blocking. */
struct config_head {
    size_t size;
    unsigned magic, version;
    int blocking;
};

int ncclCommInitRankConfig(struct comm **out, int nranks, unique_id id,
                           int rank, const struct config_head *cfg)
{
    struct comm *c = NULL;

    if (cfg && (cfg->magic != 0xcafebeefu || cfg->size < sizeof(*cfg)))
        return NCCL_ARG;
    if (rank < 0 || rank >= nranks)
        return NCCL_ARG;
    for (int i = 0; i < MAX_COMMS && !c; i++)
        if (!dbl.comms[i].used)
            c = &dbl.comms[i];
    if (!c)
        return NCCL_SYSTEM;
    resolve_faults(&id, rank, physical(dbl.cur_dev));
    *c = (struct comm){ .used = true, .id = id, .rank = rank,
                        .nranks = nranks, .dev = physical(dbl.cur_dev),
                        .blocking = !cfg || cfg->blocking != 0,
                        .state = NCCL_IN_PROGRESS };
    *out = c;
    if (!dbl.log_opened || rank != 0)
        log_init(rank);
    trace("init rank %d nranks %d", rank, nranks);
    if (dbl.group_depth > 0) {
        dbl.pending_init[dbl.npending++] = c;
        return c->blocking ? NCCL_OK : NCCL_IN_PROGRESS;
    }
    c->state = fault_is("init_hang") ? NCCL_IN_PROGRESS
             : fault_is("init_error") ? NCCL_SYSTEM : NCCL_OK;
    meet_peers(&c, 1);
    return c->blocking ? c->state : NCCL_IN_PROGRESS;
}

int ncclCommSplit(struct comm *parent, int color, int key, struct comm **out,
                  const struct config_head *cfg)
{
    struct comm *c = NULL;

    (void)color;
    if (!parent || !parent->used || parent->state != NCCL_OK)
        return NCCL_ARG;
    if (fault_is("split_error"))
        return NCCL_INTERNAL;
    for (int i = 0; i < MAX_COMMS && !c; i++)
        if (!dbl.comms[i].used)
            c = &dbl.comms[i];
    if (!c)
        return NCCL_SYSTEM;
    *c = *parent;
    c->id.internal[ID_BYTES - 1] ^= 0x55;     /* its own clique */
    c->rank = key;
    c->ops = 0;
    c->q = NULL;
    c->launched = 0;
    c->split = true;
    c->blocking = !cfg || cfg->blocking != 0;
    c->state = NCCL_IN_PROGRESS;
    trace("split rank %d", key);
    /* as NCCL 2.28 does, a split of a nonblocking parent finishes in the
     * background whatever the child's own mode, and *out stays NULL until
     * it is done */
    *out = NULL;
    c->out = out;
    c->parent_of = parent;
    if (dbl.group_depth > 0) {
        dbl.pending_init[dbl.npending++] = c;
        dbl.split_async |= !parent->blocking;
        return parent->blocking ? NCCL_OK : NCCL_IN_PROGRESS;
    }
    c->state = NCCL_OK;
    meet_peers(&c, 1);
    *out = c;
    return parent->blocking ? NCCL_OK : NCCL_IN_PROGRESS;
}

int ncclCommGetAsyncError(struct comm *c, int *state)
{
    if (!c || !c->used)
        return NCCL_ARG;
    progress();
    *state = c->state;
    /* a parent is busy while its split is */
    for (int i = 0; i < MAX_COMMS && *state == NCCL_OK; i++)
        if (dbl.comms[i].used && dbl.comms[i].parent_of == c &&
            dbl.comms[i].state == NCCL_IN_PROGRESS)
            *state = NCCL_IN_PROGRESS;
    return NCCL_OK;
}

static void release(struct comm *c, const char *how)
{
    trace("%s rank %d", how, c->rank);
    for (int i = 0; i < MAX_STREAMS; i++)
        dbl.streams[i].stuck = false;     /* aborted kernels drain */
    if (c->q) {
        drop_pending(c);
        if (--c->q->refs <= 0) {
            meet_close(c->q->meet);
            c->q->used = false;
        }
        c->q = NULL;
    }
    c->used = false;
}

int ncclCommAbort(struct comm *c)
{
    if (!c || !c->used)
        return NCCL_ARG;
    release(c, "abort");
    return NCCL_OK;
}

int ncclCommDestroy(struct comm *c)
{
    if (!c || !c->used)
        return NCCL_ARG;
    release(c, "destroy");
    return NCCL_OK;
}

int ncclGroupEnd(void);

int ncclGroupStart(void)
{
    dbl.group_depth++;
    return NCCL_OK;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int dtype,
                  int op, struct comm *c, struct stream *s)
{
    if (!c || !c->used || dtype != 7 || op != 0)
        return NCCL_ARG;
    if (c->state != NCCL_OK)
        return NCCL_USAGE;
    if (dbl.nops >= MAX_OPS)
        return NCCL_INTERNAL;
    dbl.ops[dbl.nops++] = (struct op){ c, send, recv, count, s,
                                       c->q ? c->launched++ : 0 };
    if (dbl.group_depth == 0) {       /* an implicit group of one */
        dbl.group_depth++;
        return ncclGroupEnd();
    }
    return NCCL_OK;
}

static bool same_id(const struct comm *a, const struct comm *b)
{
    return memcmp(&a->id, &b->id, sizeof(a->id)) == 0;
}

/* Sum the ops of one communicator clique into every recv buffer. */
static void reduce_clique(int first, bool *done)
{
    struct comm *c0 = dbl.ops[first].c;
    size_t n = dbl.ops[first].count;
    int members[MAX_OPS], nm = 0;

    for (int i = first; i < dbl.nops; i++)
        if (!done[i] && same_id(dbl.ops[i].c, c0))
            members[nm++] = i;
    for (int m = 0; m < nm; m++)
        done[members[m]] = true;
    if (nm != c0->nranks) {
        /* peers are in another process: nobody will ever arrive */
        for (int m = 0; m < nm; m++)
            dbl.ops[members[m]].s->stuck = true;
        return;
    }
    float *sum = calloc(n ? n : 1, sizeof(float));
    if (!sum)
        return;
    for (int m = 0; m < nm; m++)
        for (size_t i = 0; i < n; i++)
            sum[i] += dbl.ops[members[m]].send[i];
    for (int m = 0; m < nm; m++)
        deliver(&dbl.ops[members[m]], sum);
    free(sum);
}

int ncclGroupEnd(void)
{
    if (dbl.group_depth <= 0)
        return NCCL_USAGE;
    if (--dbl.group_depth > 0)
        return NCCL_OK;

    bool nonblocking = false;
    for (int i = 0; i < dbl.npending; i++) {
        struct comm *c = dbl.pending_init[i];
        if (c->split) {
            c->state = fault_is("split_hang") ? NCCL_IN_PROGRESS : NCCL_OK;
            if (c->state == NCCL_OK && c->out)
                *c->out = c;
        }
        else
            c->state = fault_is("init_hang") ? NCCL_IN_PROGRESS
                     : fault_is("init_error") ? NCCL_SYSTEM : NCCL_OK;
        nonblocking |= !c->blocking;
        if (c->state == NCCL_OK)
            log_line(c->rank, "Channel 00/0 : %d[%d] -> %d[%d] via %s",
                     c->rank, c->rank, (c->rank + 1) % c->nranks,
                     (c->rank + 1) % c->nranks,
                     env_or("PF_DOUBLE_TRANSPORT", "P2P/CUMEM/read"));
    }
    meet_peers(dbl.pending_init, dbl.npending);
    dbl.npending = 0;
    nonblocking |= dbl.split_async;
    dbl.split_async = false;

    bool done[MAX_OPS] = { false };
    size_t first = dbl.qlen;
    int res = NCCL_OK;
    for (int i = 0; i < dbl.nops; i++) {
        if (!dbl.ops[i].c->q)
            continue;
        done[i] = true;
        if (!enqueue(&dbl.ops[i], first))
            res = NCCL_SYSTEM;
    }
    for (int i = 0; i < dbl.nops; i++)
        if (!done[i])
            reduce_clique(i, done);
    dbl.nops = 0;
    progress();
    if (res != NCCL_OK)
        return res;
    return nonblocking ? NCCL_IN_PROGRESS : NCCL_OK;
}
