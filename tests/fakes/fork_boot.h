/* Test helper: run a function in N forked rank processes joined by a
 * socketpair star around rank 0 that implements struct pf_boot, so engine
 * and sweep tests need no rendezvous, launcher or network set-up. */
#ifndef PF_TEST_FORK_BOOT_H
#define PF_TEST_FORK_BOOT_H

#include <stdio.h>

#include "collective/collective.h"
#include "transport/bootstrap.h"

/* fn runs in each child with its rank's boot; its return value is the
 * child's exit code. Fills codes[world] (exit code, 128+signal, or 255
 * when killed at timeout_s). Returns the number of non-zero codes. */
int pf_test_fork_ranks(int world, int (*fn)(struct pf_boot *b, void *arg),
                       void *arg, int timeout_s, int *codes);

/* Shared memory the children can write results into (MAP_SHARED). */
void *pf_test_shared(size_t len);

/* Open an engine with the arguments the collective would give it for
 * this run (its settings and fault injection). */
static inline pf_err pf_test_engine_open(struct pf_engine *e,
                                         struct pf_run *run,
                                         struct pf_boot *b, uint64_t max_count,
                                         int64_t deadline, char *err)
{
    struct pf_engine_args a;

    pf_engine_args_for(run, b, max_count, &a);
    return e->ops->open(e, &a, deadline, err);
}

/* A rank's end: the fork boot has no orderly goodbye, so a rank that went
 * well meets the others at a barrier before it leaves (one that exits
 * early would look lost to them); a failure is printed with its rank.
 * Returns rc, else the barrier's. */
static inline pf_err pf_test_rank_done(struct pf_boot *b, pf_err rc,
                                       int64_t deadline, char *err)
{
    if (rc == PF_OK)
        rc = pf_boot_barrier(b, deadline, err);
    if (rc != PF_OK)
        fprintf(stderr, "rank %d: %s\n", b->rank, err);
    return rc;
}

#endif
