/* Inside one node. When every rank runs on this node the node is the one
 * that fails, but the user still needs the rank at fault: its GPU (index,
 * PCI bus id) or its NIC. After the sweep and the straggler re-test, every
 * rank learns who each global rank is (engine op `describe`, gathered over
 * the bootstrap); and when one process drives all the GPUs (the re-test
 * between processes has nothing to split), the ring of its GPUs is tested
 * pair by pair (engine op `local_pairs`, phases of disjoint pairs as the
 * re-test's) and judged by the re-test's own blame rule. When the re-test
 * between processes singled one out, its ranks are the culprits (of a
 * process of several GPUs, those whose own results were wrong in the
 * pairwise test): on a node of several processes, and on a run of several
 * nodes for the node blamed. Results go to run->coll.inside;
 * verdict/inside_checks.c turns them into words. */
#ifndef PF_INSIDE_H
#define PF_INSIDE_H

#include "../types/run.h"
#include "engine.h"

/* Bytes each way per GPU pair and timed iterations, as the re-test's. */
#define PF_INSIDE_PAIR_MAX_BYTES (4u << 20)
#define PF_INSIDE_PAIR_ITERS 3

/* Called by every rank after a good sweep (and re-test). On one node:
 * every rank described, the re-test's processes mapped to their ranks, or
 * one process's GPUs tested pair by pair. On several nodes, only on a node
 * the re-test blamed: its own ranks described and the ones at fault named
 * (no traffic). */
pf_err pf_inside(struct pf_run *run, struct pf_engine *e, struct pf_boot *b,
                 int64_t deadline, char *err);

/* Blame among n local ranks from per-phase results: secs[ph * n + i] and
 * wrong[ph * n + i] are local rank i's in phase ph of
 * pf_straggler_nphases(n). Fills links (n entries, ranks a, b local) and
 * culprit (n entries); returns how many culprits (pf_straggler_blame). */
int pf_inside_blame(int n, const double *secs, const long *wrong, bool data,
                    uint64_t bytes, int iters, struct pf_link *links,
                    bool *culprit, char *note, size_t len);

#endif
