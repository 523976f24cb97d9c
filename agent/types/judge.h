/* The run's judgement (judge/judge.h, where the floor rule is written):
 * the floors the ring and its links are held to and the busbw held
 * against them, each computed once, at the step where what it rests on is
 * known. The sweep's sizing and stop rule, the pairwise phase, the checks
 * and publishing read it; none of them applies the rule again. Lives in
 * run->coll.judgement. */
#ifndef PF_TYPES_JUDGE_H
#define PF_TYPES_JUDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "baseline.h"
#include "catalog.h"

struct pf_judgement {
    /* 1. pf_judge_plan, before the engine opens: the floor the sweep's
     *    sizes are planned for (the provider asked for, discovery's node
     *    count, this node's EFA devices as the NICs). */
    struct pf_floor_rule planned;
    /* 2. pf_judge_stop, once the engine is open: the floor the sweep's
     *    stop rule holds the ring to (collective/plan.h). It rests only on
     *    what every rank shares (the engine's provider, the rendezvous'
     *    node count; no NIC count, which is each node's own), so every
     *    rank stops at the same size. */
    struct pf_floor_rule stop;
    /* 3. pf_judge, once the sweep is over (or when none ran): */
    bool done;                        /* this step ran */
    bool other_provider;              /* the engine's provider is not EFA
                                         (and no test asked for the floors
                                         anyway): no catalog floor, no
                                         fleet baseline */
    struct pf_floor_rule floor;       /* the ring's, at its node count and
                                         the NICs striped over; floor.gbps
                                         0 = no floor; with a curve by
                                         size, gbps is the floor at
                                         busbw_bytes */
    double busbw_gbps;                /* the busbw held against it, in or
                                         out of place, the better: a floor
                                         by size, at the largest row that
                                         has one; else the best of the rows
                                         at or above floor.from_bytes (the
                                         largest size's when it names
                                         none); -1 = no row reaches it */
    uint64_t busbw_bytes;             /* the size of that row; 0 = none */
    bool judged;                      /* a floor applies and a row reaches
                                         its size: busbw_gbps vs floor.gbps */
    /* What a link between two nodes must reach (the pairwise phase). */
    struct pf_floor_rule pair_rule;   /* the floor at 2 nodes (runs of 2+
                                         nodes), whatever the run's size */
    uint64_t pair_bytes;              /* the size the links are judged at:
                                         where pair_rule holds, else the
                                         largest swept up to 4 MiB */
    bool pair_by_floor;               /* pair_rule holds at pair_bytes */
    double pair_catalog_gbps;         /* pair_rule at pair_bytes, 0 = none */
    struct pf_base_held pair_held;    /* the fleet baseline at pair_bytes
                                         (none over another provider) */
    double pair_gbps;                 /* what a link must reach: the
                                         baseline where it raised the bar,
                                         else pair_catalog_gbps; 0 = speed
                                         judged relative to the other links
                                         (or not at all) */
};

#endif
