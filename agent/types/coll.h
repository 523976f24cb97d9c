/* What the collective stage produces (collective/collective.h): the sweep's
 * sizes and rows, what they are judged by, the straggler and in-node
 * localisation, per-NIC accounting and the first failure. Released by
 * pf_coll_free. */
#ifndef PF_TYPES_COLL_H
#define PF_TYPES_COLL_H

#include <stdbool.h>
#include <stdint.h>

#include "../reasons.h"
#include "baseline.h"
#include "catalog.h"
#include "config.h"
#include "engine.h"
#include "judge.h"
#include "node.h"
#include "peers.h"

#define PF_MAX_ROWS 48

struct pf_row {
    uint64_t bytes;
    uint64_t count;                   /* float32 elements */
    double oop_us, oop_algbw, oop_busbw;
    long oop_wrong;
    double ip_us, ip_algbw, ip_busbw;
    long ip_wrong;
};

/* The sizes the sweep runs, planned once before any peer is waited for
 * (collective/sweep.h pf_sweep_plan) and read by the sweep and the engine's
 * buffers. */
struct pf_sweep_plan {
    uint64_t min_bytes, max_bytes;    /* max resolved */
    int nsizes;                       /* 0 = not planned */
    uint64_t sizes[PF_MAX_ROWS];
};

/* Straggler localisation (collective/straggler.h): on every run of 3 or
 * more nodes (and whenever the ring missed its floor or data was wrong)
 * each pair of ring neighbours is tested alone, then each suspect again
 * with a node proven good. Ring link i joins rank i and rank (i+1) % n;
 * confirmation links follow them. */
#define PF_LINK_SLOW 1u               /* below the pair floor */
#define PF_LINK_DATA 2u               /* carried wrong data */
#define PF_LINK_DEGRADED 4u           /* above the catalog floor, below the
                                         fleet baseline (culprits only) */

struct pf_link {
    int a, b;                         /* bootstrap ranks */
    double seconds;                   /* slower of the two ends' timings */
    double gbps;                      /* bytes x iters x GPUs paired /
                                         seconds / 1e9 */
    long wrong;                       /* elements that arrived wrong, both
                                         directions */
    unsigned bad;                     /* PF_LINK_SLOW | PF_LINK_DATA */
    bool confirm;                     /* a suspect's re-test with a node
                                         proven good (a is the suspect) */
};

struct pf_straggler {
    char method[16];                  /* ""|pairwise|timings */
    int self;                         /* this process's bootstrap rank */
    int nprocs;                       /* bootstrap ranks = rank_seconds
                                         entries; 0 = no sweep finished */
    char note[320];                   /* what the localisation found */
    double floor_gbps;                /* the ring's floor (at N nodes) */
    double pair_floor_gbps;           /* what a link must reach: the 2-node
                                         floor, or a fraction of the median
                                         link (relative); 0 = not judged */
    bool relative;                    /* pair_floor_gbps is relative */
    uint64_t pair_bytes;              /* bytes each way per exchange */
    int pair_iters;                   /* timed exchanges per pair */
    int pair_rounds;                  /* neighbour + confirmation rounds */
    double pair_seconds;              /* wall time of the pairwise phase */
    int nlinks;
    struct pf_link *links;            /* nlinks entries, heap */
    char kind[12];                    /* what was localised: slow|data|
                                         slow+data */
    int nculprits;                    /* ranks singled out by the re-test */
    int *culprits;                    /* nculprits bootstrap ranks, heap */
    unsigned *culprit_bad;            /* per culprit PF_LINK_* (NULL: each
                                         of kind), heap */
    struct pf_base_held held;         /* the fleet baseline the links were
                                         held to, if any */
};

/* The ranks at fault inside a node (collective/inside.h). When every rank
 * runs on this node: who each global rank is, and which ones the pairwise
 * re-test between processes (pf_straggler) or the pairwise test of one
 * process's GPUs singled out. On a run of several nodes: this node's own
 * ranks when the re-test blamed it, and which of its GPUs saw the wrong
 * data. */
struct pf_inside {
    int nids;                         /* 0 = nobody described */
    struct pf_rank_id *ids;           /* by global rank (proc -1: not
                                         described), heap */
    char method[16];                  /* ""|gpu-pairs|pairwise */
    char kind[12];                    /* data|slow|slow+data, as
                                         pf_straggler.kind */
    char note[320];                   /* what the test showed */
    int nlinks;
    struct pf_link *links;            /* a, b: global ranks; heap */
    int nculprits;
    int *culprits;                    /* global ranks, heap */
};

/* Per-NIC accounting around the collective (collective/nics.h). The
 * hardware counters are read by the harness before and after each stage
 * (the sweep, each pairwise phase), never by the engines; the rails are
 * the engine's own per-NIC bytes and time (host engine: one endpoint per
 * NIC). Arrays are in node.efa order, n = the node's EFA count. */
#define PF_NIC_MAX_WINDOWS 4          /* the sweep + up to 3 pairwise phases */

struct pf_nic_delta {
    uint64_t d[PF_HWC_COUNT];         /* after - before */
    uint32_t present;                 /* read before and after */
    bool went_back;                   /* a counter decreased (device reset):
                                         that counter's delta is 0 */
};

struct pf_nic_window {
    char stage[16];                   /* sweep|pairwise */
    int peer;                         /* pairwise: the partner rank, -1 */
    double seconds;
    struct pf_nic_delta nic[PF_MAX_EFA];
};

struct pf_rail {                      /* one NIC the host engine stripes over */
    char nic[64];                     /* EFA device, or the address (tcp) */
    uint64_t bytes;                   /* sent + received in the sweep */
    double seconds;                   /* summed time until its last chunk */
    double gbps;                      /* bytes / seconds / 1e9 */
    int suspect;                      /* pairwise per rail: the rank whose
                                         NIC on this rail is slow, -1 */
    bool slow;                        /* below nic_slow_ratio x the median */
};

struct pf_nics {
    int n;                            /* EFA devices counted (<= PF_MAX_EFA) */
    bool read;                        /* counters read around the sweep */
    char note[320];                   /* why not, or which counters are absent */
    bool spread;                      /* the engine drives every NIC */
    char spread_note[192];            /* why (not): engine, plugin, nodes */
    int nwin;
    struct pf_nic_window win[PF_NIC_MAX_WINDOWS];
    int nrails;                       /* host engine: NICs it striped over */
    struct pf_rail rails[PF_MAX_EFA];
    bool rails_localised;             /* the pairwise re-test ran per rail */
    char rail_note[384];              /* what the per-rail timings found */
};

/* The time plan (collective/plan.h): how the deadline left when the
 * group formed is split between the sweep and the localisation after it;
 * made once, logged, and read by both. */
struct pf_time_plan {
    double total_s;                   /* the run's timeout */
    double before_s;                  /* spent before the sweep: probe,
                                         discovery, rendezvous, fabric */
    double sweep_s;                   /* the sweep's share */
    double after_s;                   /* the pairwise phase's and the
                                         re-tests' share (the rest) */
    double publish_s;                 /* kept for publishing */
    int64_t sweep_end;                /* ms clock: no new size past it */
    char sweep_cut[200];              /* why the sweep stopped early, or "" */
};

struct pf_coll {
    bool ran;
    char engine[16];                  /* nccl|host: its printed name */
    enum pf_engine_kind engine_kind;  /* PF_ENGINE_NCCL|HOST once chosen */
    struct pf_fabric_facts fabric;    /* from the engine */
    int nranks;                       /* global ranks (processes x GPUs) */
    int nnodes;                       /* counted on the roster */
    struct pf_roster roster;          /* who every rank is (types/peers.h) */
    struct pf_sweep_plan sweep;       /* the sizes swept */
    int nrows;
    struct pf_row rows[PF_MAX_ROWS];
    double avg_busbw;                 /* mean over rows, nccl-tests footer */
    double peak_busbw;                /* best busbw of the largest size */
    struct pf_judgement judgement;    /* the floors and the busbw judged
                                         (judge/judge.h) */
    struct pf_time_plan plan;         /* the deadline's split */
    long wrong_total;
    double *rank_seconds;             /* per bootstrap rank, time of the
                                         largest size; heap, NULL = no sweep
                                         finished */
    int nrank_seconds;                /* its entries */
    int slow_rank;                    /* straggler, -1 = none found */
    struct pf_straggler strag;        /* how slow_rank was looked for */
    struct pf_nics nics;              /* per-NIC counters and rails */
    struct pf_inside inside;          /* one node: who each rank is */
    struct pf_fault fault;            /* the first failure: err, reason, msg */
    double wall_s;
};

#endif
