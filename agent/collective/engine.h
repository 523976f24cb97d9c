/* An all_reduce engine: the small interface the engine-agnostic sweep
 * (sweep.c) drives, the way nccl-tests keeps one harness and a tiny file per
 * collective. Buffers hold float32; every global rank contributes
 * pf_pattern(rank, i) and the expected result is pf_expected(nranks, i). */
#ifndef PF_ENGINE_H
#define PF_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "../types/boot.h"
#include "../types/engine.h"
#include "../types/peers.h"
#include "../util/err.h"

struct pf_engine;
struct pf_progress;

/* What an engine is given; pf_engine_args_for (collective.h) fills it from
 * the run. The pointers must outlive the engine. */
struct pf_engine_args {
    struct pf_boot *boot;             /* the connected group */
    uint64_t max_count;               /* largest all_reduce, elements a rank */
    /* host engine */
    const char *provider;             /* libfabric provider, "" for efa */
    int fabric_lanes;                 /* socket providers: endpoints per
                                         address, 0 = by the cores */
    const char *fabric_addrs;         /* socket providers: one endpoint per
                                         address, NULL for the bind address */
    const char *libfabric_path;       /* "" searches the usual places */
    const char *bind_addr;            /* --bind-addr, "" when not given */
    const struct pf_roster *roster;   /* ranks' hosts, for binding and
                                         messages; NULL when unknown */
    /* NCCL engine */
    struct pf_progress *progress;     /* lines while communicators connect */
    /* fault injection (--debug-*): the rank that sends wrong data and
     * the one that sleeps slow_ms a step; -1 for none */
    int corrupt_rank, slow_rank, slow_ms;
};


/* What one NIC carried since the engine opened (engine op `rails`). */
struct pf_rail_use {
    char nic[64];                     /* EFA device, address, or provider */
    uint64_t bytes;                   /* sent + received */
    double seconds;                   /* summed per all_reduce / timed
                                         exchange until its last chunk */
};

struct pf_engine_ops {
    const char *name;                 /* "host" | "nccl" */
    /* Set up for all_reduces of up to args->max_count elements per rank
     * over args->boot's ranks, by the deadline. */
    pf_err (*open)(struct pf_engine *e, const struct pf_engine_args *args,
                   int64_t deadline, char *err);
    /* Fill the send buffer (the recv buffer when in_place) with the
     * pattern, and poison the recv buffer otherwise. */
    pf_err (*fill)(struct pf_engine *e, uint64_t count, bool in_place,
                   char *err);
    /* Run iters all_reduces back to back; *seconds is the elapsed time as
     * this engine measures it (CUDA events / monotonic clock). */
    pf_err (*run)(struct pf_engine *e, uint64_t count, bool in_place,
                  int iters, double *seconds, int64_t deadline, char *err);
    /* Compare the result with pf_expected; *wrong = differing elements
     * summed over this process's ranks. */
    pf_err (*check)(struct pf_engine *e, uint64_t count, bool in_place,
                    long *wrong, char *err);
    void (*close)(struct pf_engine *e);
    /* Optional, NULL when the engine has none (straggler.c then falls back
     * to per-rank timings): a bounded exchange with one peer (bootstrap
     * rank) over the engine's own fabric endpoints. Each side sends
     * pf_pattern(its global rank, i); warm-up once, then iters times count
     * elements each way at once; *seconds is the time of the timed ones and
     * *wrong the elements this process received that differ from the
     * peer's pattern. Both ends call it with the same round. */
    pf_err (*pair)(struct pf_engine *e, int peer, int round, uint64_t count,
                   int iters, double *seconds, long *wrong, int64_t deadline,
                   char *err);
    /* Optional: called by every rank before each round, peer -1 for a rank
     * that sits the round out (the NCCL engine shares its pair ids here,
     * over the bootstrap, which needs every rank). */
    pf_err (*pair_setup)(struct pf_engine *e, int peer, int round,
                         int64_t deadline, char *err);
    /* Optional, NULL when the engine does not account per NIC: the NICs
     * it stripes over (at most max into out) with what each carried since
     * open; returns how many. Every rank has the same count. The harness
     * takes differences around a stage; pair exchanges count only their
     * timed iterations. */
    int (*rails)(struct pf_engine *e, struct pf_rail_use *out, int max);
    /* Optional: who this process's ranks are (global rank, GPU and its bus
     * id, the NICs used; proc is left to the caller), at most max into
     * out; returns how many. */
    int (*describe)(struct pf_engine *e, struct pf_rank_id *out, int max);
    /* Optional: the pairwise test inside one process, for the ring of its
     * local ranks. partner[i] (local_ranks entries) is the local rank that
     * local rank i pairs with in this round, -1 to sit out; each pair runs
     * a warm-up and then iters all_reduces of count elements on its own.
     * seconds[i] is local rank i's time of the timed ones, wrong[i] the
     * elements of its result that differ from the pair's sum. */
    pf_err (*local_pairs)(struct pf_engine *e, const int *partner,
                          uint64_t count, int iters, double *seconds,
                          long *wrong, int64_t deadline, char *err);
};

struct pf_engine {
    const struct pf_engine_ops *ops;
    int nranks;                       /* global ranks in the all_reduce */
    int local_ranks;                  /* ranks this process drives */
    void *impl;
    /* What the engine found out (types/engine.h), kept here so it
     * survives close: the provider once open returns, failed or not;
     * NCCL's transports once close returns (they come from NCCL's log). */
    struct pf_fabric_facts facts;
};

extern const struct pf_engine_ops pf_engine_host;
extern const struct pf_engine_ops pf_engine_nccl;

/* Global ranks whose float32 sum stays exact: every pf_pattern value is an
 * integer in -15..15, so any partial sum of n ranks is an integer of at
 * most 15n, exact while 15n <= 2^24 (the float32 significand). Beyond it
 * the data check itself would be wrong, so the engines refuse such runs. */
#define PF_EXACT_SUM_RANKS ((1 << 24) / 15)

/* Position-dependent, rank-distinct values whose float32 sum over up to
 * PF_EXACT_SUM_RANKS ranks is exact (small integers). */
static inline float pf_pattern(int rank, uint64_t i)
{
    return (float)((int)((i * 7u + (uint64_t)rank * 13u) % 31u) - 15);
}

static inline float pf_expected(int nranks, uint64_t i)
{
    long s = 0;
    for (int r = 0; r < nranks; r++)
        s += (long)((i * 7u + (uint64_t)r * 13u) % 31u) - 15;
    return (float)s;
}

#endif
