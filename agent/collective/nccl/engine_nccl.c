/* The NCCL engine: the job's own libnccl.so.2 driving every local GPU from
 * one process (pf_engine_nccl, engine.h).
 *
 * Global ranks: each process drives all the GPUs it sees (the CUDA runtime
 * applies CUDA_VISIBLE_DEVICES); host name and PCI bus ids are gathered
 * through the bootstrap, GPUs that several processes of one host see are
 * shared out among them (assign_gpus), and process p's GPUs take the ranks
 * after those of processes 0..p-1. Rank 0's unique id travels by
 * pf_boot_bcast.
 *
 * Nothing may hang the agent: communicators are created nonblocking
 * (config.blocking = 0, NCCL_RUNTIME_CONNECT=0 so every connection is made
 * then) and polled with ncclCommGetAsyncError, as is the split into the
 * blocking child the collectives run on (split_blocking says why); every
 * wait on the GPU polls cudaStreamQuery / cudaEventQuery, the
 * communicators' async errors and pf_boot_poll, and calls ncclCommAbort on
 * the deadline, on an async error or on a lost peer. At most
 * 2 * LAUNCH_WINDOW all_reduces are in flight per stream, so a dead peer
 * cannot block us inside a launch. Timing: CUDA events around the
 * back-to-back launches, the slowest local GPU's.
 *
 * Data: the pattern is periodic with period 31 (engine.h), so a host chunk
 * of CHUNK_ELEMS (a multiple of 31) is uploaded once and doubled on the
 * device with copies; results come back through pinned staging buffers in
 * chunks, two per GPU so a copy overlaps the comparison of the previous
 * chunk, and are compared with memcmp against one expected chunk - only a
 * mismatching chunk is compared element by element. Host memory stays
 * bounded whatever the message size. */
#include "../engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../types/node.h"
#include "../../util/clock.h"
#include "../../util/gpulib.h"
#include "../../util/log.h"
#include "../../util/progress.h"
#include "../../util/sizes.h"
#include "nccl_log.h"

#define CHUNK_ELEMS (31u * 16384u)    /* 1.94 MiB of float32 */
#define CHUNK_BYTES ((size_t)CHUNK_ELEMS * sizeof(float))
#define LAUNCH_WINDOW 256             /* all_reduces in flight per stream */
#define WINDOW_MARKS 2                /* events marking launch batches */
#define POLL_PEER_MS 10               /* how often waits ask the bootstrap */
#define SPIN_MS 2                     /* busy-poll this long before napping */

struct nccl_rank {
    int dev;                          /* CUDA device index (visible ones) */
    char bus[20];                     /* its PCI bus id */
    int rank;                         /* global rank */
    pf_nccl_comm_t comm;              /* the collectives' (blocking) */
    pf_nccl_comm_t parent;            /* nonblocking init; NULL unsplit */
    pf_nccl_comm_t split;             /* NCCL writes the child here when
                                       * the split completes */
    pf_cuda_stream_t stream;
    pf_cuda_event_t start, stop;
    pf_cuda_event_t marks[WINDOW_MARKS];
    pf_nccl_comm_t pair;              /* 2-rank communicator of the pairwise
                                         re-test, NULL outside it */
    float *send, *recv;               /* device, max_count each */
    float *stage[2];                  /* pinned host, CHUNK_ELEMS each */
    long pair_wrong;                  /* wrong elements of its results in
                                         the pairwise test, every round */
    double pair_seconds;              /* its timed exchanges there, summed */
};

struct nccl_engine {
    struct pf_cudart cuda;
    struct pf_nccl nccl;
    struct pf_nccl_log log;
    bool log_armed;
    bool set_runtime_connect;         /* we set NCCL_RUNTIME_CONNECT=0 */
    struct pf_engine_args args;       /* as open was given them */
    struct pf_fabric_facts *facts;    /* the engine's, filled at close */
    struct pf_boot *boot;
    int64_t deadline;                 /* bounds fill/check waits */
    int nlocal, nranks, nprocs;
    uint64_t max_count;
    bool comms_live;                  /* comms created, not yet destroyed */
    long launches, launches_async;    /* groups, and those NCCL finished in
                                       * the background (ncclInProgress) */
    bool aborted;
    bool connecting;                  /* waiting for communicators to connect */
    float *expect;                    /* host, CHUNK_ELEMS of pf_expected */
    struct pair_setup *pair;          /* this phase's pair, NULL outside */
    struct nccl_rank r[PF_MAX_GPUS];
};

/* ------------------------------------------------------------- helpers */

static pf_err cuda_fail(struct nccl_engine *g, char *err, const char *call,
                        int dev, pf_cuda_error_t e)
{
    return pf_fail(err, PF_ERR_ENGINE, "%s on GPU %d: %s (CUDA error %d)",
                   call, dev, pf_cuda_strerror(&g->cuda, e), e);
}

/* A failed call names the communicator's async error when it has one: that
 * is the cause, the call's own result only its consequence. */
static pf_err nccl_fail(struct nccl_engine *g, char *err, const char *call,
                        const struct nccl_rank *r, pf_nccl_result_t res)
{
    pf_nccl_result_t async = PF_NCCL_SUCCESS;
    if (r && r->comm &&
        g->nccl.ncclCommGetAsyncError(r->comm, &async) == PF_NCCL_SUCCESS &&
        async != PF_NCCL_SUCCESS && async != PF_NCCL_IN_PROGRESS)
        res = async;
    const char *last = (g->nccl.ncclGetLastError && r && r->comm)
                           ? g->nccl.ncclGetLastError(r->comm) : NULL;
    return pf_fail(err, PF_ERR_ENGINE, "%s (rank %d, GPU %d): %s%s%s", call,
                   r ? r->rank : -1, r ? r->dev : -1,
                   pf_nccl_strerror(&g->nccl, res), last && *last ? ": " : "",
                   last ? last : "");
}

/* Abort every communicator: NCCL stops its kernels and proxy threads, so
 * the streams drain and nothing waits on a dead peer any more. */
/* End every member's communicators with end (NCCL's abort or destroy). */
static void end_comms(struct nccl_engine *g,
                      pf_nccl_result_t (*end)(pf_nccl_comm_t comm))
{
    for (int i = 0; i < g->nlocal; i++) {
        struct nccl_rank *r = &g->r[i];
        g->cuda.cudaSetDevice(r->dev);
        if (r->comm)
            end(r->comm);
        if (r->parent)
            end(r->parent);
        if (r->pair)
            end(r->pair);
        r->comm = r->parent = r->pair = NULL;
    }
    g->comms_live = false;
}

static void abort_comms(struct nccl_engine *g, const char *why)
{
    if (!g->comms_live)
        return;
    pf_warn("aborting NCCL communicators: %s", why);
    end_comms(g, g->nccl.ncclCommAbort);
    g->aborted = true;
}

/* One member's call inside a group; *who is the rank it ran for (named
 * when the call fails). */
typedef pf_nccl_result_t (*group_call)(struct nccl_engine *g, int k,
                                       const void *arg,
                                       struct nccl_rank **who);

/* A group of one call per member, and what names its failures. */
struct group {
    int n;                            /* members 0..n-1 */
    group_call call;
    const void *arg;
    const char *call_name;            /* names a failed call */
    const char *end_name;             /* names a failed ncclGroupEnd */
    int end_rank;                     /* the local rank that end names */
};

/* A group as NCCL wants it: ncclGroupStart, the members' calls,
 * ncclGroupEnd. A call that fails ends the group and aborts every
 * communicator (a group half issued cannot be finished); so does a failed
 * end. *end is ncclGroupEnd's result once it ran, -1 before: PF_OK leaves
 * SUCCESS or IN_PROGRESS there, and the caller waits. */
static pf_err run_group(struct nccl_engine *g, const struct group *grp,
                        pf_nccl_result_t *end, char *err)
{
    pf_nccl_result_t res = g->nccl.ncclGroupStart();

    *end = -1;
    if (res != PF_NCCL_SUCCESS)
        return nccl_fail(g, err, "ncclGroupStart", NULL, res);
    for (int k = 0; k < grp->n; k++) {
        struct nccl_rank *r = NULL;
        res = grp->call(g, k, grp->arg, &r);
        if (res != PF_NCCL_SUCCESS && res != PF_NCCL_IN_PROGRESS) {
            g->nccl.ncclGroupEnd();
            nccl_fail(g, err, grp->call_name, r, res);
            abort_comms(g, err);
            return PF_ERR_ENGINE;
        }
    }
    *end = g->nccl.ncclGroupEnd();
    if (*end != PF_NCCL_SUCCESS && *end != PF_NCCL_IN_PROGRESS) {
        nccl_fail(g, err, grp->end_name, &g->r[grp->end_rank], *end);
        abort_comms(g, err);
        return PF_ERR_ENGINE;
    }
    return PF_OK;
}

/* An all_reduce of count floats on each member: member k is local rank
 * idx[k] (k itself without idx), on its pair communicator or its main one. */
struct launch {
    uint64_t count;
    bool in_place, pair;
    const int *idx;
};

static pf_nccl_result_t allreduce_member(struct nccl_engine *g, int k,
                                         const void *arg,
                                         struct nccl_rank **who)
{
    const struct launch *l = arg;
    struct nccl_rank *r = &g->r[l->idx ? l->idx[k] : k];

    *who = r;
    return g->nccl.ncclAllReduce(l->in_place ? r->recv : r->send, r->recv,
                                 l->count, PF_NCCL_FLOAT32, PF_NCCL_SUM,
                                 l->pair ? r->pair : r->comm, r->stream);
}

static void nap_us(long us)
{
    struct timespec ts = { 0, us * 1000L };
    nanosleep(&ts, NULL);
}

/* One round of the checks every wait makes: communicator errors, the
 * peers, the deadline. PF_OK = keep waiting. On failure the communicators
 * are aborted and err names the cause; `what` says what we waited for. */
static pf_err wait_checks(struct nccl_engine *g, const char *what,
                          int64_t deadline, bool ask_peers, char *err)
{
    char why[PF_ERRLEN];

    if (g->comms_live) {
        for (int i = 0; i < g->nlocal; i++) {
            pf_nccl_result_t st = PF_NCCL_SUCCESS;
            pf_nccl_result_t res =
                g->nccl.ncclCommGetAsyncError(g->r[i].comm, &st);
            if (res == PF_NCCL_SUCCESS &&
                (st == PF_NCCL_SUCCESS || st == PF_NCCL_IN_PROGRESS))
                continue;
            nccl_fail(g, why, what, &g->r[i],
                      res != PF_NCCL_SUCCESS ? res : st);
            abort_comms(g, why);
            return pf_fail(err, PF_ERR_ENGINE, "%s", why);
        }
    }
    if (ask_peers && g->boot) {
        pf_err rc = pf_boot_poll(g->boot, why);
        if (rc != PF_OK) {
            pf_err_prefix(why, "%s", what);
            abort_comms(g, why);
            return pf_fail(err, rc == PF_ERR_LOST ? PF_ERR_LOST : rc, "%s",
                           why);
        }
    }
    if (pf_ms_left(deadline) <= 0) {
        /* The rendezvous already reached every rank, so a communicator
         * that never connects points at the fabric path itself. */
        bool connecting = g->connecting && g->nlocal < g->nranks;
        snprintf(why, sizeof(why), "%s: deadline passed (ranks %d-%d of %d)%s",
                 what, g->r[0].rank, g->r[g->nlocal - 1].rank, g->nranks,
                 connecting ? ", although the TCP rendezvous reached every "
                              "rank; on EFA this is the symptom of a security "
                              "group without a rule allowing all traffic to "
                              "and from itself" : "");
        abort_comms(g, why);
        return pf_fail(err, PF_ERR_TIMEOUT, "%s", why);
    }
    return PF_OK;
}

/* One round of a wait that is not over: while the communicators connect,
 * say so now and then; true when the peers are due to be asked again
 * (every POLL_PEER_MS since *last_peer). */
static bool wait_round(struct nccl_engine *g, int64_t deadline,
                       int64_t *last_peer)
{
    if (g->connecting && pf_progress_due(g->args.progress, pf_now_ms()))
        pf_progress_say(g->args.progress, pf_now_ms(), "%d ranks (%d "
                        "here) still connecting; %.0f s left", g->nranks,
                        g->nlocal, (double)pf_ms_left(deadline) / 1000.0);
    if (pf_now_ms() - *last_peer < POLL_PEER_MS)
        return false;
    *last_peer = pf_now_ms();
    return true;
}

/* Wait until every communicator (children and parents) left
 * ncclInProgress: nonblocking init, split, or a group that NCCL finishes
 * in the background. */
static pf_err wait_comms_ready(struct nccl_engine *g, const char *what,
                               int64_t deadline, char *err)
{
    int64_t start = pf_now_ms(), last_peer = start;

    for (long spins = 0;; spins++) {
        bool busy = false;
        for (int k = 0; k < 3 * g->nlocal; k++) {
            int i = k / 3;
            pf_nccl_comm_t comm = k % 3 == 0 ? g->r[i].comm
                                : k % 3 == 1 ? g->r[i].parent : g->r[i].pair;
            if (!comm)
                continue;
            pf_nccl_result_t st = PF_NCCL_SUCCESS;
            pf_nccl_result_t res = g->nccl.ncclCommGetAsyncError(comm, &st);
            if (res != PF_NCCL_SUCCESS || (st != PF_NCCL_SUCCESS &&
                                           st != PF_NCCL_IN_PROGRESS)) {
                char why[PF_ERRLEN];
                nccl_fail(g, why, what, &g->r[i],
                          res != PF_NCCL_SUCCESS ? res : st);
                abort_comms(g, why);
                return pf_fail(err, PF_ERR_ENGINE, "%s", why);
            }
            busy |= st == PF_NCCL_IN_PROGRESS;
        }
        if (!busy)
            return PF_OK;
        /* A launch finishes in microseconds: spin (a nap costs ~60 us of
         * timer slack per op), and only then nap as init-length waits may. */
        bool spinning = pf_now_ms() - start < SPIN_MS;
        if (spinning && spins % 64 != 0)
            continue;
        bool ask = wait_round(g, deadline, &last_peer);
        pf_err rc = wait_checks(g, what, deadline, ask, err);
        if (rc != PF_OK)
            return rc;
        if (!spinning)
            nap_us(pf_now_ms() - start < 100 ? 50 : 1000);
    }
}

/* Which event of a rank (EV_MARK + m for the launch-window marks), or
 * EV_STREAM for the stream itself. */
enum { EV_STREAM = -3, EV_START = -2, EV_STOP = -1, EV_MARK = 0 };

static pf_cuda_event_t event_of(struct nccl_rank *r, int which)
{
    return which == EV_START ? r->start
         : which == EV_STOP  ? r->stop
                             : r->marks[which - EV_MARK];
}

/* Wait until ranks lo..hi-1 reached `which`. Spins briefly, then naps:
 * short ops return at once and long ones do not burn a core. */
static pf_err wait_gpu(struct nccl_engine *g, int lo, int hi, int which,
                       const char *what, int64_t deadline, char *err)
{
    int64_t last_peer = pf_now_ms();
    bool done[PF_MAX_GPUS] = { false };

    for (long spins = 0;; spins++) {
        int left = 0;
        for (int i = lo; i < hi; i++) {
            if (done[i])
                continue;
            pf_cuda_error_t e =
                which == EV_STREAM
                    ? g->cuda.cudaStreamQuery(g->r[i].stream)
                    : g->cuda.cudaEventQuery(event_of(&g->r[i], which));
            if (e == PF_CUDA_SUCCESS) {
                done[i] = true;
            } else if (e == PF_CUDA_ERROR_NOT_READY) {
                left++;
            } else {
                char why[PF_ERRLEN];
                cuda_fail(g, why, which == EV_STREAM ? "cudaStreamQuery"
                                                     : "cudaEventQuery",
                          g->r[i].dev, e);
                pf_err_prefix(why, "%s", what);
                abort_comms(g, why);
                return pf_fail(err, PF_ERR_ENGINE, "%s", why);
            }
        }
        if (left == 0)
            return PF_OK;
        bool ask = wait_round(g, deadline, &last_peer);
        if (ask || spins % 64 == 0) {
            pf_err rc = wait_checks(g, what, deadline, ask, err);
            if (rc != PF_OK)
                return rc;
        }
        if (spins > 2000)
            nap_us(spins > 20000 ? 200 : 20);
    }
}

static pf_err record_all(struct nccl_engine *g, int which, char *err)
{
    for (int i = 0; i < g->nlocal; i++) {
        pf_cuda_error_t e = g->cuda.cudaEventRecord(event_of(&g->r[i], which),
                                                    g->r[i].stream);
        if (e != PF_CUDA_SUCCESS)
            return cuda_fail(g, err, "cudaEventRecord", g->r[i].dev, e);
    }
    return PF_OK;
}

/* record_all for the two ranks a and b of a pair. */
static pf_err record_pair(struct nccl_engine *g, int a, int b, int which,
                          char *err)
{
    for (int k = 0; k < 2; k++) {
        struct nccl_rank *r = &g->r[k ? b : a];
        pf_cuda_error_t e = g->cuda.cudaEventRecord(event_of(r, which),
                                                    r->stream);
        if (e != PF_CUDA_SUCCESS)
            return cuda_fail(g, err, "cudaEventRecord", r->dev, e);
    }
    return PF_OK;
}

/* ---------------------------------------------------------------- open */

static void teardown(struct nccl_engine *g);

static pf_err load_libs(struct nccl_engine *g, char *err)
{
    int version = 0;
    pf_err rc;

    rc = pf_cudart_load(&g->cuda, err);
    if (rc != PF_OK)
        return rc;
    rc = pf_nccl_load(&g->nccl, err);
    if (rc != PF_OK)
        return rc;
    rc = pf_nccl_version(&g->nccl, &version, err);
    if (rc != PF_OK)
        return rc;
    if (version < PF_NCCL_MIN_VERSION) {
        char have[32], need[32];
        pf_nccl_version_str(version, have, sizeof(have));
        pf_nccl_version_str(PF_NCCL_MIN_VERSION, need, sizeof(need));
        return pf_fail(err, PF_ERR_UNSUPPORTED,
                       "NCCL %s (%s) is too old: the engine needs NCCL >= %s "
                       "(nonblocking communicator init)",
                       have, g->nccl.path, need);
    }
    pf_info("NCCL %d.%d.%d from %s, CUDA runtime from %s", version / 10000,
            (version / 100) % 100, version % 100, g->nccl.path, g->cuda.path);
    return PF_OK;
}

/* What each process tells the others about its GPUs. The host name comes
 * first, then the count (the unit tests' fake bootstrap relies on it). */
struct gpu_claim {
    char host[64];
    int32_t ngpu;
    char bus[PF_MAX_GPUS][20];        /* PCI bus ids, visible order */
};

/* Which process drives a GPU: where several processes on one host see the
 * same GPU (two local ranks without CUDA_VISIBLE_DEVICES), it goes to the
 * claimant with the fewest GPUs so far, lowest rank first - so N processes
 * sharing N GPUs take one each. Every process computes the same answer
 * from the same table. */
static int owner_of(const struct gpu_claim *all, int world, int p, int j,
                    int *load)
{
    int best = -1;

    for (int q = 0; q < world; q++) {
        if (strcmp(all[q].host, all[p].host) != 0)
            continue;
        for (int k = 0; k < all[q].ngpu; k++) {
            if (strcmp(all[q].bus[k], all[p].bus[j]) != 0)
                continue;
            if (best < 0 || load[q] < load[best])
                best = q;
        }
    }
    return best;
}

/* Whether some process already drives process p's j-th GPU. */
static bool assigned(const struct gpu_claim *all, int world,
                     bool (*owned)[PF_MAX_GPUS], int p, int j)
{
    for (int q = 0; q < world; q++)
        for (int k = 0; k < all[q].ngpu; k++)
            if (owned[q][k] && !strcmp(all[q].host, all[p].host) &&
                !strcmp(all[q].bus[k], all[p].bus[j]))
                return true;
    return false;
}

/* Give every GPU of every host to one process. owned[p][j]: process p
 * drives its j-th visible GPU; load[p]: how many it drives. */
static void assign_gpus(const struct gpu_claim *all, int world,
                        bool (*owned)[PF_MAX_GPUS], int *load)
{
    for (int p = 0; p < world; p++) {
        for (int j = 0; j < all[p].ngpu; j++) {
            if (assigned(all, world, owned, p, j))
                continue;
            int o = owner_of(all, world, p, j, load);
            for (int k = 0; k < all[o].ngpu; k++) {
                if (!strcmp(all[o].bus[k], all[p].bus[j])) {
                    owned[o][k] = true;
                    load[o]++;
                    break;
                }
            }
        }
    }
}

/* Learn the global layout: which GPUs each process drives, and so the
 * global ranks. */
static pf_err gather_layout(struct nccl_engine *g, struct pf_boot *boot,
                            int visible, int64_t deadline, char *err)
{
    struct gpu_claim mine, *all;
    bool (*owned)[PF_MAX_GPUS];
    int *load, base = 0, total = 0, world = boot->world;
    pf_err rc = PF_OK;

    memset(&mine, 0, sizeof(mine));
    if (gethostname(mine.host, sizeof(mine.host) - 1) != 0)
        snprintf(mine.host, sizeof(mine.host), "unknown");
    mine.ngpu = visible;
    for (int j = 0; j < visible; j++) {
        pf_cuda_error_t e = g->cuda.cudaDeviceGetPCIBusId(
            mine.bus[j], (int)sizeof(mine.bus[j]), j);
        if (e != PF_CUDA_SUCCESS)
            return cuda_fail(g, err, "cudaDeviceGetPCIBusId", j, e);
        mine.bus[j][sizeof(mine.bus[j]) - 1] = '\0';
    }

    g->nprocs = world;
    all = calloc((size_t)world, sizeof(*all));
    owned = calloc((size_t)world, sizeof(*owned));
    load = calloc((size_t)world, sizeof(*load));
    if (!all || !owned || !load) {
        rc = pf_fail(err, PF_ERR_NOMEM, "GPU table for %d ranks", world);
        goto out;
    }
    rc = pf_boot_allgather(boot, &mine, sizeof(mine), all, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "gathering GPU lists");
        goto out;
    }
    for (int p = 0; p < world; p++) {
        all[p].host[sizeof(all[p].host) - 1] = '\0';
        if (all[p].ngpu < 0 || all[p].ngpu > PF_MAX_GPUS) {
            rc = pf_fail(err, PF_ERR_PROTOCOL, "rank %d sent a GPU count of "
                         "%d", p, (int)all[p].ngpu);
            goto out;
        }
        for (int j = 0; j < all[p].ngpu; j++)
            all[p].bus[j][sizeof(all[p].bus[j]) - 1] = '\0';
    }
    assign_gpus(all, world, owned, load);
    for (int p = 0; p < world; p++) {
        if (load[p] == 0) {
            rc = pf_fail(err, PF_ERR_USAGE,
                         "rank %d on %s has no GPU of its own (%d visible, "
                         "shared with other ranks on that host): run at most "
                         "one rank per GPU, or one per host", p, all[p].host,
                         (int)all[p].ngpu);
            goto out;
        }
        if (p < boot->rank)
            base += load[p];
        total += load[p];
    }
    if (total > PF_EXACT_SUM_RANKS) {
        rc = pf_fail(err, PF_ERR_USAGE, "%d global ranks: the data check's "
                     "float32 sums are exact for at most %d", total,
                     PF_EXACT_SUM_RANKS);
        goto out;
    }
    g->nranks = total;
    g->nlocal = 0;
    for (int j = 0; j < visible; j++) {
        if (!owned[boot->rank][j])
            continue;
        g->r[g->nlocal].dev = j;
        g->r[g->nlocal].rank = base + g->nlocal;
        snprintf(g->r[g->nlocal].bus, sizeof(g->r[g->nlocal].bus), "%s",
                 mine.bus[j]);
        g->nlocal++;
    }
out:
    free(all);
    free(owned);
    free(load);
    return rc;
}

static pf_err alloc_rank(struct nccl_engine *g, struct nccl_rank *r,
                         char *err)
{
    size_t bytes = (size_t)g->max_count * sizeof(float);
    pf_cuda_error_t e;

#define CUDA_TRY(call, name)                                 \
    do {                                                     \
        e = (call);                                          \
        if (e != PF_CUDA_SUCCESS)                            \
            return cuda_fail(g, err, name, r->dev, e);       \
    } while (0)
    CUDA_TRY(g->cuda.cudaSetDevice(r->dev), "cudaSetDevice");
    CUDA_TRY(g->cuda.cudaStreamCreateWithFlags(&r->stream,
                                               PF_CUDA_STREAM_NON_BLOCKING),
             "cudaStreamCreateWithFlags");
    CUDA_TRY(g->cuda.cudaEventCreateWithFlags(&r->start,
                                              PF_CUDA_EVENT_DEFAULT),
             "cudaEventCreate");
    CUDA_TRY(g->cuda.cudaEventCreateWithFlags(&r->stop,
                                              PF_CUDA_EVENT_DEFAULT),
             "cudaEventCreate");
    for (int m = 0; m < WINDOW_MARKS; m++)
        CUDA_TRY(g->cuda.cudaEventCreateWithFlags(&r->marks[m],
                                                  PF_CUDA_EVENT_DEFAULT),
                 "cudaEventCreate");
    CUDA_TRY(g->cuda.cudaMalloc((void **)&r->send, bytes), "cudaMalloc(send)");
    CUDA_TRY(g->cuda.cudaMalloc((void **)&r->recv, bytes), "cudaMalloc(recv)");
    for (int s = 0; s < 2; s++)
        CUDA_TRY(g->cuda.cudaMallocHost((void **)&r->stage[s], CHUNK_BYTES),
                 "cudaMallocHost(staging)");
#undef CUDA_TRY
    return PF_OK;
}

/* A nonblocking communicator hands every group launch to a new NCCL
 * thread (~100 us an all_reduce, measured on H200 with NCCL 2.28), so the
 * collectives run on a blocking child split off the initialised one. The
 * split itself runs nonblocking like its parent (NCCL returns
 * ncclInProgress) and is polled under the same deadline as the init. The
 * child shares the parent's resources (splitShare) and the parent was
 * created with NCCL_RUNTIME_CONNECT=0, so every connection - the part that
 * hangs on a broken fabric - is made while we can still abort. Kernels
 * that never finish are caught by polling and abort as before. If NCCL
 * refuses the split, the collectives stay on the parent: slower, correct. */
static pf_err split_blocking(struct nccl_engine *g, int64_t deadline,
                             char *err)
{
    pf_nccl_config_t cfg;
    pf_nccl_result_t res;
    int failed = -1;
    pf_err rc;

    pf_nccl_config_init(&cfg);
    cfg.blocking = 1;
    cfg.splitShare = 1;
    res = g->nccl.ncclGroupStart();
    for (int i = 0; res == PF_NCCL_SUCCESS && i < g->nlocal; i++) {
        g->cuda.cudaSetDevice(g->r[i].dev);
        g->r[i].split = NULL;
        res = g->nccl.ncclCommSplit(g->r[i].comm, 0, g->r[i].rank,
                                    &g->r[i].split, &cfg);
        if (res == PF_NCCL_IN_PROGRESS)
            res = PF_NCCL_SUCCESS;
        else if (res != PF_NCCL_SUCCESS)
            failed = i;
    }
    pf_nccl_result_t end = g->nccl.ncclGroupEnd();
    if (res == PF_NCCL_SUCCESS && end != PF_NCCL_IN_PROGRESS)
        res = end;
    /* The split runs on the parents' background threads and writes
     * r->split when done: wait for the parents either way. */
    g->connecting = true;
    rc = wait_comms_ready(g, "NCCL communicator split", deadline, err);
    g->connecting = false;
    if (rc != PF_OK)
        return rc;
    for (int i = 0; res == PF_NCCL_SUCCESS && i < g->nlocal; i++)
        if (!g->r[i].split)
            res = PF_NCCL_INTERNAL_ERROR;
    if (res != PF_NCCL_SUCCESS) {
        pf_warn("ncclCommSplit (blocking collectives) failed%s%d: %s; "
                "all_reduces stay on the nonblocking communicator",
                failed >= 0 ? " on local rank " : ", result ",
                failed >= 0 ? failed : (int)res,
                failed >= 0 || end != PF_NCCL_SUCCESS
                    ? pf_nccl_strerror(&g->nccl, res)
                    : "no child communicator");
        for (int i = 0; i < g->nlocal; i++) {
            if (g->r[i].split)
                g->nccl.ncclCommAbort(g->r[i].split);
            g->r[i].split = NULL;
        }
        return PF_OK;
    }
    for (int i = 0; i < g->nlocal; i++) {
        g->r[i].parent = g->r[i].comm;
        g->r[i].comm = g->r[i].split;
        g->r[i].split = NULL;
    }
    g->connecting = true;
    rc = wait_comms_ready(g, "NCCL communicator split", deadline, err);
    g->connecting = false;
    return rc;
}

/* What the members' communicator inits share: the config and the unique
 * ids (the run's one, or one per pair), and for the pairs inside this
 * process each local rank's partner (-1: none). */
struct comm_init {
    pf_nccl_config_t *cfg;
    const pf_nccl_unique_id *ids;
    const int *partner;
};

/* Member k's part of the run's communicator. */
static pf_nccl_result_t run_comm_member(struct nccl_engine *g, int k,
                                        const void *arg,
                                        struct nccl_rank **who)
{
    const struct comm_init *a = arg;
    struct nccl_rank *r = *who = &g->r[k];

    /* From the first init on there are communicators to abort. */
    g->comms_live = true;
    g->cuda.cudaSetDevice(r->dev);
    return g->nccl.ncclCommInitRankConfig(&r->comm, g->nranks, a->ids[0],
                                          r->rank, a->cfg);
}

static pf_err init_comms(struct nccl_engine *g, int64_t deadline, char *err)
{
    pf_nccl_unique_id id;
    pf_nccl_config_t cfg;
    pf_nccl_result_t res;
    struct comm_init a;
    struct group grp;
    pf_err rc;

    memset(&id, 0, sizeof(id));
    if (g->boot->rank == 0) {
        res = g->nccl.ncclGetUniqueId(&id);
        if (res != PF_NCCL_SUCCESS)
            return nccl_fail(g, err, "ncclGetUniqueId", NULL, res);
    }
    rc = pf_boot_bcast(g->boot, &id, sizeof(id), 0, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "sending the NCCL unique id");
        return rc;
    }

    pf_nccl_config_init(&cfg);
    cfg.blocking = 0;
    cfg.splitShare = 1;
    a = (struct comm_init){ &cfg, &id, NULL };
    grp = (struct group){ g->nlocal, run_comm_member, &a,
                          "ncclCommInitRankConfig",
                          "ncclGroupEnd (communicator init)", 0 };
    rc = run_group(g, &grp, &res, err);
    if (rc != PF_OK)
        return rc;
    g->connecting = true;
    pf_progress_begin(g->args.progress, "NCCL init", pf_now_ms());
    rc = wait_comms_ready(g, "NCCL communicator init", deadline, err);
    pf_progress_end(g->args.progress);
    g->connecting = false;
    if (rc == PF_OK)
        rc = split_blocking(g, deadline, err);
    return rc;
}

static pf_err nccl_open(struct pf_engine *e, const struct pf_engine_args *args,
                        int64_t deadline, char *err)
{
    struct pf_boot *boot = args->boot;
    struct nccl_engine *g = calloc(1, sizeof(*g));
    int count = 0;
    pf_err rc;

    if (!g)
        return pf_fail(err, PF_ERR_NOMEM, "NCCL engine state");
    e->impl = g;
    g->args = *args;
    g->facts = &e->facts;
    g->boot = boot;
    g->deadline = deadline;
    g->max_count = args->max_count > 0 ? args->max_count : 1;

    rc = load_libs(g, err);
    if (rc == PF_OK)
        rc = pf_cuda_device_count(&g->cuda, &count, err);
    if (rc == PF_OK && count <= 0)
        rc = pf_fail(err, PF_ERR_NOTFOUND,
                     "no CUDA device visible (CUDA_VISIBLE_DEVICES=%s)",
                     getenv("CUDA_VISIBLE_DEVICES")
                         ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    if (rc == PF_OK)
        rc = gather_layout(g, boot, count > PF_MAX_GPUS ? PF_MAX_GPUS : count,
                           deadline, err);
    if (rc == PF_OK) {
        g->expect = malloc(CHUNK_BYTES);
        if (!g->expect)
            rc = pf_fail(err, PF_ERR_NOMEM, "expected-values chunk");
    }
    for (int i = 0; rc == PF_OK && i < g->nlocal; i++)
        rc = alloc_rank(g, &g->r[i], err);
    if (rc == PF_OK) {
        rc = pf_nccl_log_arm(&g->log, err);
        g->log_armed = rc == PF_OK;
    }
    /* every connection during the bounded init (see split_blocking) */
    if (rc == PF_OK && !getenv("NCCL_RUNTIME_CONNECT")) {
        setenv("NCCL_RUNTIME_CONNECT", "0", 1);
        g->set_runtime_connect = true;
    }
    if (rc == PF_OK)
        rc = init_comms(g, deadline, err);
    if (rc != PF_OK) {
        teardown(g);
        e->impl = NULL;
        return rc;
    }

    /* The expected sum has the pattern's period: compute it once. */
    float period[31];
    for (uint64_t i = 0; i < 31; i++)
        period[i] = pf_expected(g->nranks, i);
    for (uint64_t i = 0; i < CHUNK_ELEMS; i++)
        g->expect[i] = period[i % 31];

    e->nranks = g->nranks;
    e->local_ranks = g->nlocal;
    pf_info("NCCL engine: %d ranks over %d processes, ranks %d-%d here",
            g->nranks, g->nprocs, g->r[0].rank, g->r[g->nlocal - 1].rank);
    return PF_OK;
}

/* ---------------------------------------------------------- fill/check */

/* Pattern of rank r into dst (count elements) on r's stream: one chunk up,
 * then doubling device copies, which keep the period because every copied
 * prefix is a whole number of chunks. */
static pf_err upload_pattern(struct nccl_engine *g, struct nccl_rank *r,
                             float *dst, uint64_t count, char *err)
{
    uint64_t first = count < CHUNK_ELEMS ? count : CHUNK_ELEMS;
    pf_cuda_error_t e;

    for (uint64_t i = 0; i < first; i++)
        r->stage[0][i] = pf_pattern(r->rank, i);
    e = g->cuda.cudaMemcpyAsync(dst, r->stage[0], first * sizeof(float),
                                PF_CUDA_MEMCPY_HOST_TO_DEVICE, r->stream);
    if (e != PF_CUDA_SUCCESS)
        return cuda_fail(g, err, "cudaMemcpyAsync(pattern up)", r->dev, e);
    for (uint64_t done = first; done < count;) {
        uint64_t n = done < count - done ? done : count - done;
        e = g->cuda.cudaMemcpyAsync(dst + done, dst, n * sizeof(float),
                                    PF_CUDA_MEMCPY_DEVICE_TO_DEVICE,
                                    r->stream);
        if (e != PF_CUDA_SUCCESS)
            return cuda_fail(g, err, "cudaMemcpyAsync(pattern copy)", r->dev,
                             e);
        done += n;
    }
    return PF_OK;
}

static pf_err nccl_fill(struct pf_engine *e, uint64_t count, bool in_place,
                        char *err)
{
    struct nccl_engine *g = e->impl;
    pf_err rc;

    if (count > g->max_count)
        return pf_fail(err, PF_ERR_USAGE, "fill of %llu elements exceeds %llu",
                       (unsigned long long)count,
                       (unsigned long long)g->max_count);
    for (int i = 0; i < g->nlocal; i++) {
        struct nccl_rank *r = &g->r[i];
        g->cuda.cudaSetDevice(r->dev);
        float *dst = in_place ? r->recv : r->send;
        rc = upload_pattern(g, r, dst, count, err);
        if (rc != PF_OK)
            return rc;
        if (r->rank == g->args.corrupt_rank && count > 0) {
            /* --debug-corrupt-rank: one wrong input element, so every
             * rank's first result element is wrong */
            r->stage[1][0] = pf_pattern(r->rank, 0) + 1.0f;
            pf_cuda_error_t ce = g->cuda.cudaMemcpyAsync(
                dst, r->stage[1], sizeof(float),
                PF_CUDA_MEMCPY_HOST_TO_DEVICE, r->stream);
            if (ce != PF_CUDA_SUCCESS)
                return cuda_fail(g, err, "cudaMemcpyAsync(corrupt)", r->dev,
                                 ce);
        }
        if (!in_place) {
            /* all-ones bytes are NaN: never equal to an expected sum */
            pf_cuda_error_t ce = g->cuda.cudaMemsetAsync(
                r->recv, 0xff, count * sizeof(float), r->stream);
            if (ce != PF_CUDA_SUCCESS)
                return cuda_fail(g, err, "cudaMemsetAsync(poison)", r->dev,
                                 ce);
        }
    }
    /* staging chunks are reused by the next fill or check */
    return wait_gpu(g, 0, g->nlocal, EV_STREAM, "filling buffers",
                    g->deadline, err);
}

static long count_wrong(const float *got, const float *want, uint64_t n)
{
    long wrong = 0;

    if (memcmp(got, want, n * sizeof(float)) == 0)
        return 0;
    for (uint64_t i = 0; i < n; i++)
        wrong += got[i] != want[i];   /* NaN counts as wrong */
    return wrong;
}

static pf_err check_rank(struct nccl_engine *g, int idx, uint64_t count,
                         const float *want, long *wrong, char *err)
{
    struct nccl_rank *r = &g->r[idx];
    uint64_t nchunks = (count + CHUNK_ELEMS - 1) / CHUNK_ELEMS;
    pf_cuda_stream_t s = r->stream;
    pf_err rc;

    g->cuda.cudaSetDevice(r->dev);
    for (uint64_t c = 0; c <= nchunks; c++) {
        /* copy chunk c while comparing chunk c-1 */
        if (c < nchunks) {
            uint64_t off = c * CHUNK_ELEMS;
            uint64_t n = count - off < CHUNK_ELEMS ? count - off : CHUNK_ELEMS;
            pf_cuda_error_t e = g->cuda.cudaMemcpyAsync(
                r->stage[c % 2], r->recv + off, n * sizeof(float),
                PF_CUDA_MEMCPY_DEVICE_TO_HOST, s);
            if (e != PF_CUDA_SUCCESS)
                return cuda_fail(g, err, "cudaMemcpyAsync(result down)",
                                 r->dev, e);
        }
        if (c > 0) {
            uint64_t off = (c - 1) * CHUNK_ELEMS;
            uint64_t n = count - off < CHUNK_ELEMS ? count - off : CHUNK_ELEMS;
            *wrong += count_wrong(r->stage[(c - 1) % 2], want, n);
        }
        if (c < nchunks) {
            rc = wait_gpu(g, idx, idx + 1, EV_STREAM, "checking results",
                          g->deadline, err);
            if (rc != PF_OK)
                return rc;
        }
    }
    return PF_OK;
}

static pf_err nccl_check(struct pf_engine *e, uint64_t count, bool in_place,
                         long *wrong, char *err)
{
    struct nccl_engine *g = e->impl;
    pf_err rc;

    (void)in_place;                   /* the result is in recv either way */
    *wrong = 0;
    for (int i = 0; i < g->nlocal; i++) {
        long w = 0;
        rc = check_rank(g, i, count, g->expect, &w, err);
        if (rc != PF_OK)
            return rc;
        if (w > 0)
            pf_warn("rank %d (GPU %d): %ld of %llu elements wrong",
                    g->r[i].rank, g->r[i].dev, w, (unsigned long long)count);
        *wrong += w;
    }
    return PF_OK;
}

/* ------------------------------------------------------------ pairwise */

/* The pairwise re-test (collective/straggler.c) over NCCL: local GPU i of
 * this process and local GPU i of the peer process form a 2-rank
 * communicator, made from a unique id the lower process draws and every
 * process learns through the bootstrap (pair_setup, called by every rank
 * in every phase); then an all_reduce on it moves the data both ways, is
 * timed with CUDA events, and its result is checked against the two
 * patterns, so a corrupting GPU is caught by its partners. */
struct pair_offer {                   /* one process, one phase, gathered */
    int32_t peer;                     /* -1: sits this phase out */
    int32_t nlocal;
    int32_t base;                     /* its first global rank */
    pf_nccl_unique_id ids[PF_MAX_GPUS];
};

struct pair_setup {
    int peer, n;                      /* partner process, GPUs paired */
    int peer_base;                    /* partner's first global rank */
    bool low;                         /* this process drew the ids */
    pf_nccl_unique_id ids[PF_MAX_GPUS];
};

static pf_err nccl_pair_setup(struct pf_engine *e, int peer, int round,
                              int64_t deadline, char *err)
{
    struct nccl_engine *g = e->impl;
    struct pair_offer *mine, *all = NULL;
    int world = g->boot->world;
    pf_err rc = PF_OK;

    (void)round;
    free(g->pair);
    g->pair = NULL;
    mine = calloc(1, sizeof(*mine));
    if (!mine)
        return pf_fail(err, PF_ERR_NOMEM, "pairwise test: out of memory");
    mine->peer = peer;
    mine->nlocal = g->nlocal;
    mine->base = g->r[0].rank;
    for (int i = 0; peer > g->boot->rank && i < g->nlocal; i++) {
        pf_nccl_result_t res = g->nccl.ncclGetUniqueId(&mine->ids[i]);
        if (res != PF_NCCL_SUCCESS) {
            rc = nccl_fail(g, err, "ncclGetUniqueId (pairwise test)", NULL,
                           res);
            goto out;
        }
    }
    all = calloc((size_t)world, sizeof(*all));
    if (!all) {
        rc = pf_fail(err, PF_ERR_NOMEM, "pairwise test: out of memory");
        goto out;
    }
    rc = pf_boot_allgather(g->boot, mine, sizeof(*mine), all, deadline, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "pairwise test: sharing the NCCL ids");
        goto out;
    }
    if (peer < 0)
        goto out;
    if (peer >= world || all[peer].peer != g->boot->rank ||
        all[peer].nlocal < 1 || all[peer].nlocal > PF_MAX_GPUS) {
        rc = pf_fail(err, PF_ERR_PROTOCOL, "pairwise test: rank %d does not "
                     "pair with this rank (%d) in this phase", peer,
                     g->boot->rank);
        goto out;
    }
    g->pair = calloc(1, sizeof(*g->pair));
    if (!g->pair) {
        rc = pf_fail(err, PF_ERR_NOMEM, "pairwise test: out of memory");
        goto out;
    }
    g->pair->peer = peer;
    g->pair->low = g->boot->rank < peer;
    g->pair->peer_base = all[peer].base;
    g->pair->n = g->nlocal < all[peer].nlocal ? g->nlocal : all[peer].nlocal;
    memcpy(g->pair->ids, g->pair->low ? mine->ids : all[peer].ids,
           sizeof(g->pair->ids));
out:
    free(mine);
    free(all);
    return rc;
}

static void pair_release(struct nccl_engine *g)
{
    for (int i = 0; i < g->nlocal; i++) {
        struct nccl_rank *r = &g->r[i];
        if (!r->pair)
            continue;
        g->cuda.cudaSetDevice(r->dev);
        g->nccl.ncclCommDestroy(r->pair);
        r->pair = NULL;
    }
}

/* Member k's end of the pair with the partner process: rank 0 of the
 * pair in the process that drew the ids. */
static pf_nccl_result_t pair_member(struct nccl_engine *g, int k,
                                    const void *arg, struct nccl_rank **who)
{
    const struct comm_init *a = arg;
    struct nccl_rank *r = *who = &g->r[k];

    g->cuda.cudaSetDevice(r->dev);
    return g->nccl.ncclCommInitRankConfig(&r->pair, 2, a->ids[k],
                                          g->pair->low ? 0 : 1, a->cfg);
}

static pf_err pair_init(struct nccl_engine *g, int64_t deadline, char *err)
{
    pf_nccl_config_t cfg;
    pf_nccl_result_t res;
    struct comm_init a = { &cfg, g->pair->ids, NULL };
    const struct group grp = { g->pair->n, pair_member, &a,
                               "ncclCommInitRankConfig (pairwise test)",
                               "ncclGroupEnd (pairwise test init)", 0 };
    pf_err rc;

    pf_nccl_config_init(&cfg);
    cfg.blocking = 0;
    rc = run_group(g, &grp, &res, err);
    if (rc != PF_OK)
        return rc;
    g->connecting = true;
    rc = wait_comms_ready(g, "NCCL pair communicator init", deadline, err);
    g->connecting = false;
    return rc;
}

/* The --debug-slow-rank process waits before each launch, as the host
 * engine does before each step: its partners wait for it. */
static void maybe_slow(const struct nccl_engine *g)
{
    for (int i = 0; i < g->nlocal; i++)
        if (g->r[i].rank == g->args.slow_rank) {
            pf_sleep_ms(g->args.slow_ms);
            return;
        }
}

static pf_err pair_launch(struct nccl_engine *g, uint64_t count,
                          int64_t deadline, char *err)
{
    const struct launch l = { count, false, true, NULL };
    const struct group grp = { g->pair->n, allreduce_member, &l,
                               "ncclAllReduce (pairwise test)",
                               "ncclGroupEnd (pairwise test)", 0 };
    pf_nccl_result_t res;
    pf_err rc = run_group(g, &grp, &res, err);

    if (rc == PF_OK && res == PF_NCCL_IN_PROGRESS)
        return wait_comms_ready(g, "pairwise test launch", deadline, err);
    return rc;
}

/* Expected pair sums for local GPU i: its own pattern plus the partner's
 * (the pattern repeats within a chunk, so one chunk serves every chunk). */
static void pair_want(const struct nccl_engine *g, int i, float *want)
{
    int me = g->r[i].rank, other = g->pair->peer_base + i;
    for (uint64_t k = 0; k < CHUNK_ELEMS; k++)
        want[k] = pf_pattern(me, k) + pf_pattern(other, k);
}

static pf_err nccl_pair(struct pf_engine *e, int peer, int round,
                        uint64_t count, int iters, double *seconds,
                        long *wrong, int64_t deadline, char *err)
{
    struct nccl_engine *g = e->impl;
    float *want = NULL;
    double worst = 0;
    pf_err rc;

    (void)round;
    *seconds = 0;
    *wrong = 0;
    if (!g->pair || g->pair->peer != peer)
        return pf_fail(err, PF_ERR_USAGE, "pairwise test with rank %d was "
                       "not set up", peer);
    if (count == 0 || count > g->max_count)
        return pf_fail(err, PF_ERR_USAGE, "pairwise test of %llu elements "
                       "exceeds %llu", (unsigned long long)count,
                       (unsigned long long)g->max_count);
    rc = pair_init(g, deadline, err);
    if (rc == PF_OK)
        rc = nccl_fill(e, count, false, err);
    /* warm-up, then the timed ones between the start and stop events */
    if (rc == PF_OK)
        rc = pair_launch(g, count, deadline, err);
    if (rc == PF_OK)
        rc = record_all(g, EV_START, err);
    for (int it = 0; rc == PF_OK && it < iters; it++) {
        maybe_slow(g);
        rc = pair_launch(g, count, deadline, err);
    }
    if (rc == PF_OK)
        rc = record_all(g, EV_STOP, err);
    if (rc == PF_OK)
        rc = wait_gpu(g, 0, g->pair->n, EV_STOP, "pairwise test", deadline,
                      err);
    for (int i = 0; rc == PF_OK && i < g->pair->n; i++) {
        float ms = 0;
        pf_cuda_error_t ce = g->cuda.cudaEventElapsedTime(&ms, g->r[i].start,
                                                          g->r[i].stop);
        if (ce != PF_CUDA_SUCCESS)
            rc = cuda_fail(g, err, "cudaEventElapsedTime", g->r[i].dev, ce);
        else if (ms / 1e3 > worst)
            worst = ms / 1e3;
        if (ce == PF_CUDA_SUCCESS)
            g->r[i].pair_seconds += ms / 1e3;
    }
    if (rc == PF_OK && !(want = malloc(CHUNK_BYTES)))
        rc = pf_fail(err, PF_ERR_NOMEM, "pairwise test: out of memory");
    for (int i = 0; rc == PF_OK && i < g->pair->n; i++) {
        long w = 0;
        pair_want(g, i, want);
        rc = check_rank(g, i, count, want, &w, err);
        *wrong += w;
        g->r[i].pair_wrong += w;
    }
    free(want);
    *seconds = worst;
    pair_release(g);
    return rc;
}

/* ----------------------------------------------------- pairs inside */

/* The pairwise test among this process's own GPUs (engine op
 * local_pairs): each pair gets a 2-rank communicator of its own, made here
 * (both ends are local), and runs its launches between its own events, so
 * a GPU that corrupts data or crawls shows on its own pairs only. */
static pf_err local_launch(struct nccl_engine *g, int a, int b,
                           uint64_t count, int64_t deadline, char *err)
{
    const int ends[2] = { a, b };
    const struct launch l = { count, false, true, ends };
    const struct group grp = { 2, allreduce_member, &l,
                               "ncclAllReduce (GPU pairs)",
                               "ncclGroupEnd (GPU pairs)", a };
    pf_nccl_result_t res;
    pf_err rc = run_group(g, &grp, &res, err);

    if (rc == PF_OK && res == PF_NCCL_IN_PROGRESS)
        return wait_comms_ready(g, "GPU pair launch", deadline, err);
    return rc;
}

/* Member k's end of its pair inside this process: rank 0 of the pair
 * is its lower local rank, whose id the pair uses. */
static pf_nccl_result_t local_pair_member(struct nccl_engine *g, int k,
                                          const void *arg,
                                          struct nccl_rank **who)
{
    const struct comm_init *a = arg;
    struct nccl_rank *r = *who = &g->r[k];
    int lo;

    if (a->partner[k] < 0)
        return PF_NCCL_SUCCESS;
    lo = k < a->partner[k] ? k : a->partner[k];
    g->cuda.cudaSetDevice(r->dev);
    return g->nccl.ncclCommInitRankConfig(&r->pair, 2, a->ids[lo],
                                          k == lo ? 0 : 1, a->cfg);
}

static pf_err local_pair_init(struct nccl_engine *g, const int *partner,
                              int64_t deadline, char *err)
{
    pf_nccl_unique_id ids[PF_MAX_GPUS];
    pf_nccl_config_t cfg;
    pf_nccl_result_t res;
    struct comm_init a = { &cfg, ids, partner };
    const struct group grp = { g->nlocal, local_pair_member, &a,
                               "ncclCommInitRankConfig (GPU pairs)",
                               "ncclGroupEnd (GPU pair init)", 0 };
    pf_err rc;

    for (int i = 0; i < g->nlocal; i++) {
        if (partner[i] <= i)
            continue;
        res = g->nccl.ncclGetUniqueId(&ids[i]);
        if (res != PF_NCCL_SUCCESS)
            return nccl_fail(g, err, "ncclGetUniqueId (GPU pairs)", NULL, res);
    }
    pf_nccl_config_init(&cfg);
    cfg.blocking = 0;
    rc = run_group(g, &grp, &res, err);
    if (rc != PF_OK)
        return rc;
    rc = wait_comms_ready(g, "NCCL GPU pair communicator init", deadline, err);
    return rc;
}

static pf_err nccl_local_pairs(struct pf_engine *e, const int *partner,
                               uint64_t count, int iters, double *seconds,
                               long *wrong, int64_t deadline, char *err)
{
    struct nccl_engine *g = e->impl;
    float *want = NULL;
    pf_err rc = PF_OK;

    for (int i = 0; i < g->nlocal; i++) {
        seconds[i] = 0;
        wrong[i] = 0;
        if (partner[i] >= g->nlocal || partner[i] == i ||
            (partner[i] >= 0 && partner[partner[i]] != i))
            return pf_fail(err, PF_ERR_USAGE, "GPU pairs: local rank %d's "
                           "partner %d does not pair back", i, partner[i]);
    }
    if (!g->comms_live)
        return pf_fail(err, PF_ERR_ENGINE,
                       "NCCL communicators were aborted earlier");
    if (count == 0 || count > g->max_count || iters < 1)
        return pf_fail(err, PF_ERR_USAGE, "GPU pairs: %llu elements x %d "
                       "(at most %llu elements)", (unsigned long long)count,
                       iters, (unsigned long long)g->max_count);
    rc = local_pair_init(g, partner, deadline, err);
    if (rc == PF_OK)
        rc = nccl_fill(e, count, false, err);
    for (int a = 0; rc == PF_OK && a < g->nlocal; a++) {
        int b = partner[a];
        bool slow;
        if (b <= a)
            continue;
        slow = g->r[a].rank == g->args.slow_rank ||
               g->r[b].rank == g->args.slow_rank;
        rc = local_launch(g, a, b, count, deadline, err);    /* warm-up */
        if (rc == PF_OK)
            rc = record_pair(g, a, b, EV_START, err);
        for (int it = 0; rc == PF_OK && it < iters; it++) {
            if (slow)                 /* --debug-slow-rank, as maybe_slow */
                pf_sleep_ms(g->args.slow_ms);
            rc = local_launch(g, a, b, count, deadline, err);
        }
        if (rc == PF_OK)
            rc = record_pair(g, a, b, EV_STOP, err);
    }
    if (rc == PF_OK)
        rc = wait_gpu(g, 0, g->nlocal, EV_STREAM, "GPU pairs", deadline, err);
    if (rc == PF_OK && !(want = malloc(CHUNK_BYTES)))
        rc = pf_fail(err, PF_ERR_NOMEM, "GPU pairs: out of memory");
    for (int i = 0; rc == PF_OK && i < g->nlocal; i++) {
        int me = g->r[i].rank, other;
        float ms = 0;
        pf_cuda_error_t ce;
        if (partner[i] < 0)
            continue;
        ce = g->cuda.cudaEventElapsedTime(&ms, g->r[i].start, g->r[i].stop);
        if (ce != PF_CUDA_SUCCESS) {
            rc = cuda_fail(g, err, "cudaEventElapsedTime", g->r[i].dev, ce);
            break;
        }
        seconds[i] = ms / 1e3;
        other = g->r[partner[i]].rank;
        for (uint64_t k = 0; k < CHUNK_ELEMS; k++)
            want[k] = pf_pattern(me, k) + pf_pattern(other, k);
        rc = check_rank(g, i, count, want, &wrong[i], err);
    }
    free(want);
    if (g->comms_live)
        pair_release(g);
    return rc;
}

/* Who this process's ranks are: GPU index and PCI bus id. */
static int nccl_describe(struct pf_engine *e, struct pf_rank_id *out,
                         int max)
{
    const struct nccl_engine *g = e->impl;
    int n = g->nlocal < max ? g->nlocal : max;

    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].rank = g->r[i].rank;
        out[i].gpu = g->r[i].dev;
        snprintf(out[i].bus, sizeof(out[i].bus), "%s", g->r[i].bus);
        out[i].pair_wrong = g->r[i].pair_wrong;
        out[i].pair_seconds = g->r[i].pair_seconds;
    }
    return n;
}

/* ----------------------------------------------------------------- run */

static pf_err launch_one(struct nccl_engine *g, uint64_t count, bool in_place,
                         int64_t deadline, char *err)
{
    const struct launch l = { count, in_place, false, NULL };
    const struct group grp = { g->nlocal, allreduce_member, &l,
                               "ncclAllReduce", "ncclGroupEnd (all_reduce)",
                               0 };
    pf_nccl_result_t res;
    pf_err rc = run_group(g, &grp, &res, err);

    if (res != -1)                    /* the group reached its end */
        g->launches++;
    if (rc == PF_OK && res == PF_NCCL_IN_PROGRESS) {
        g->launches_async++;
        return wait_comms_ready(g, "all_reduce launch", deadline, err);
    }
    return rc;
}

static pf_err nccl_run(struct pf_engine *e, uint64_t count, bool in_place,
                       int iters, double *seconds, int64_t deadline,
                       char *err)
{
    struct nccl_engine *g = e->impl;
    char what[96];
    pf_err rc;

    *seconds = 0;
    if (!g->comms_live)
        return pf_fail(err, PF_ERR_ENGINE,
                       "NCCL communicators were aborted earlier");
    if (count > g->max_count)
        return pf_fail(err, PF_ERR_USAGE,
                       "all_reduce of %llu elements exceeds %llu",
                       (unsigned long long)count,
                       (unsigned long long)g->max_count);
    snprintf(what, sizeof(what), "all_reduce of %llu bytes",
             (unsigned long long)(count * sizeof(float)));
    rc = record_all(g, EV_START, err);
    for (int it = 0; rc == PF_OK && it < iters; it++) {
        /* Batch b starts with a mark; before it, batch b-2 must be done:
         * at most 2 * LAUNCH_WINDOW ops queued, and the GPU never idle. */
        if (it % LAUNCH_WINDOW == 0) {
            int b = it / LAUNCH_WINDOW;
            int slot = EV_MARK + b % WINDOW_MARKS;
            if (b >= WINDOW_MARKS)
                rc = wait_gpu(g, 0, g->nlocal, slot, what, deadline, err);
            if (rc == PF_OK)
                rc = record_all(g, slot, err);
            if (rc != PF_OK)
                break;
        }
        maybe_slow(g);
        rc = launch_one(g, count, in_place, deadline, err);
    }
    if (rc == PF_OK)
        rc = record_all(g, EV_STOP, err);
    if (rc == PF_OK)
        rc = wait_gpu(g, 0, g->nlocal, EV_STOP, what, deadline, err);
    if (rc != PF_OK)
        return rc;
    /* a last look: an error NCCL noticed as the kernels finished */
    rc = wait_checks(g, what, deadline, false, err);
    if (rc != PF_OK)
        return rc;

    double worst = 0;
    for (int i = 0; i < g->nlocal; i++) {
        float ms = 0;
        pf_cuda_error_t ce =
            g->cuda.cudaEventElapsedTime(&ms, g->r[i].start, g->r[i].stop);
        if (ce != PF_CUDA_SUCCESS)
            return cuda_fail(g, err, "cudaEventElapsedTime", g->r[i].dev, ce);
        if (ms / 1e3 > worst)
            worst = ms / 1e3;
    }
    *seconds = worst;
    return PF_OK;
}

/* --------------------------------------------------------------- close */

/* Free what was set up, read NCCL's log into the engine's facts, and
 * restore the environment. The libraries stay loaded (see probe/gpu.c: unloading an
 * initialised CUDA runtime leaves exit handlers on unmapped code). */
static void teardown(struct nccl_engine *g)
{
    if (g->comms_live)
        pair_release(g);
    free(g->pair);
    g->pair = NULL;
    if (g->comms_live)              /* the pairs went first, just above */
        end_comms(g, g->nccl.ncclCommDestroy);
    for (int i = 0; g->cuda.dl && i < g->nlocal; i++) {
        struct nccl_rank *r = &g->r[i];
        g->cuda.cudaSetDevice(r->dev);
        if (r->send)
            g->cuda.cudaFree(r->send);
        if (r->recv)
            g->cuda.cudaFree(r->recv);
        for (int s = 0; s < 2; s++)
            if (r->stage[s])
                g->cuda.cudaFreeHost(r->stage[s]);
        for (int m = 0; m < WINDOW_MARKS; m++)
            if (r->marks[m])
                g->cuda.cudaEventDestroy(r->marks[m]);
        if (r->start)
            g->cuda.cudaEventDestroy(r->start);
        if (r->stop)
            g->cuda.cudaEventDestroy(r->stop);
        if (r->stream)
            g->cuda.cudaStreamDestroy(r->stream);
    }
    if (g->launches > 0)
        pf_info("NCCL engine: %ld of %ld all_reduce launches completed in "
                "the background", g->launches_async, g->launches);
    if (g->log_armed) {
        struct pf_nccl_facts f;
        char err[PF_ERRLEN];
        if (pf_nccl_log_read(&g->log, &f, err) == PF_OK) {
            pf_nccl_facts_apply(&f, g->facts);
            pf_info("NCCL %s: network %s, plugin %s, transports %s",
                    f.version[0] ? f.version : "?",
                    f.network[0] ? f.network : "?",
                    f.plugin_loaded ? "loaded" : "not loaded",
                    f.transports[0] ? f.transports : "none seen");
        } else {
            pf_warn("NCCL log unreadable, transport unknown: %s", err);
        }
        pf_nccl_log_disarm(&g->log);
        g->log_armed = false;
    }
    if (g->set_runtime_connect)
        unsetenv("NCCL_RUNTIME_CONNECT");
    free(g->expect);
    free(g);
}

static void nccl_close(struct pf_engine *e)
{
    if (e->impl)
        teardown(e->impl);
    e->impl = NULL;
}

const struct pf_engine_ops pf_engine_nccl = {
    .name = "nccl",
    .open = nccl_open,
    .fill = nccl_fill,
    .run = nccl_run,
    .check = nccl_check,
    .close = nccl_close,
    .pair_setup = nccl_pair_setup,
    .pair = nccl_pair,
    .describe = nccl_describe,
    .local_pairs = nccl_local_pairs,
};
