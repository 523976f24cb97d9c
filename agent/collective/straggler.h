/* Straggler localisation. A ring all_reduce runs at the pace of its
 * slowest rank, and in a ring every rank waits for it, so the sweep's
 * per-rank timings rarely single it out. When the ring is below its floor,
 * each pair of ring neighbours is re-tested alone over the same fabric
 * endpoints (phases of disjoint pairs: (0,1),(2,3)... then (1,2),(3,0)...,
 * and (n-1,0) alone for odd n); the rank whose two links are both slow is
 * the straggler. Results go to run->coll.slow_rank and run->coll.strag. */
#ifndef PF_STRAGGLER_H
#define PF_STRAGGLER_H

#include <stddef.h>

#include "../pf.h"
#include "../config/catalog.h"
#include "engine.h"

/* A rank is the straggler when the better of its two links is below this
 * fraction of every other rank's better link. */
#define PF_STRAG_LINK_RATIO 0.5
/* Timings single a rank out when it took this many times the next one. */
#define PF_STRAG_TIME_RATIO 1.5

/* The busbw floor this run's ring must reach: pf_floor_for (the one rule,
 * config/catalog.h) applied to the collective's engine, provider and node
 * count. */
double pf_coll_floor(const struct pf_run *run, struct pf_floor_rule *rule);
/* The busbw the floor is judged against: the best of the rows at or above
 * the floor's size (the largest row when it names none), both in and out of
 * place; -1 when no row reaches it. *at_bytes is that row's size. */
double pf_coll_judged_busbw(const struct pf_coll *c,
                            const struct pf_floor_rule *rule,
                            uint64_t *at_bytes);

/* The pure decisions, testable without a fabric. ---------------------- */

/* Phases of the pairwise re-test for n ranks (0 for n < 2). */
int pf_straggler_nphases(int n);
/* Phase in which link i (rank i with rank (i+1) % n) is tested. */
int pf_straggler_link_phase(int n, int i);
/* rank's partner in phase, -1 when it sits that phase out. */
int pf_straggler_peer(int rank, int n, int phase);

/* link_gbps[i] = bandwidth between rank i and rank (i+1) % n. Returns the
 * straggler's rank or -1 (2 ranks, links alike, slow links that do not
 * share one rank); note says which and why, in words and numbers. */
int pf_straggler_from_links(int n, const double *link_gbps, char *note,
                            size_t len);

/* The general rule, for slowness and wrong data alike: link i joins rank i
 * and rank (i+1) % n; with link_wrong given and any link carrying wrong
 * data, the bad links are those; else those below PF_STRAG_LINK_RATIO of
 * the best link. culprit[r] (n entries) is set for each rank whose two
 * links are bad, but only when every bad link ends at one of them and they
 * are at most half the ranks: otherwise nobody is blamed. Returns how many;
 * 2 ranks are never told apart. note says what was seen. */
int pf_straggler_blame(int n, const double *link_gbps, const long *link_wrong,
                       bool *culprit, char *note, size_t len);

/* secs[r] = rank r's time per all_reduce. Returns the rank that took
 * PF_STRAG_TIME_RATIO times the next slowest, else -1; note as above. */
int pf_straggler_from_times(int n, const double *secs, char *note,
                            size_t len);

/* After a good sweep, on every rank: when the ring missed its floor,
 * localise the straggler (pairwise when the engine can and there are 3 or
 * more ranks and time left, per-rank timings otherwise). Rank 0 decides
 * and tells the others, so every rank takes the same path. A peer lost or
 * the deadline passing during the re-test is an error, as in the sweep. */
pf_err pf_straggler_retest(struct pf_run *run, struct pf_engine *e,
                           struct pf_boot *b, int64_t deadline, char *err);

#endif
