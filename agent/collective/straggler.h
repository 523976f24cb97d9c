/* Each node judged by its own links. A ring all_reduce runs at the pace of
 * its slowest rank and its busbw falls with the node count, so the ring
 * says little about one node at scale, and its per-rank timings rarely
 * single one out. A pair of nodes is the 2-node case whatever the job's
 * size: on every run of 3 or more nodes (and on any run whose ring missed
 * its floor or carried wrong data) each pair of ring neighbours is tested
 * alone over the same fabric endpoints, in rounds of disjoint pairs
 * ((0,1),(2,3)... then (1,2),(3,0)..., and (n-1,0) alone for odd n), at
 * the size the judgement holds them at, with the data checked. A link is
 * slow below what the judgement holds it to (run->coll.judgement, the
 * rule: judge/judge.h) and bad when slow or wrong (judged apart, so a
 * slow node is named even when another corrupts). A node with a bad link
 * is a suspect; each suspect is tested once more with a node proven good
 * (both its links good) and is failed only when that link is bad too, in
 * a way its ring links were: a healthy node between two bad ones passes.
 * Nobody is blamed without a node proven good, nor when more than half
 * would be. Results go to run->coll.slow_rank and run->coll.strag. */
#ifndef PF_STRAGGLER_H
#define PF_STRAGGLER_H

#include <stddef.h>

#include "../types/run.h"
#include "engine.h"

/* After a good sweep, on every rank: the pairwise phase on a run of 3 or
 * more nodes, and when the ring missed its floor or data was wrong on any
 * run (pairwise when the engine can, there are 3 or more ranks and time
 * left; per-rank timings otherwise). Rank 0 decides and tells the others,
 * so every rank takes the same path. A peer lost or the deadline passing
 * during the re-test is an error, as in the sweep. */
pf_err pf_straggler_retest(struct pf_run *run, struct pf_engine *e,
                           struct pf_boot *b, int64_t deadline, char *err);

#endif
