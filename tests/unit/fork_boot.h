/* Test helper: run a function in N forked rank processes joined by a
 * socketpair star around rank 0 that implements struct pf_boot, so engine
 * and sweep tests need no rendezvous, launcher or network set-up. */
#ifndef PF_TEST_FORK_BOOT_H
#define PF_TEST_FORK_BOOT_H

#include "collective/bootstrap.h"

/* fn runs in each child with its rank's boot; its return value is the
 * child's exit code. Fills codes[world] (exit code, 128+signal, or 255
 * when killed at timeout_s). Returns the number of non-zero codes. */
int pf_test_fork_ranks(int world, int (*fn)(struct pf_boot *b, void *arg),
                       void *arg, int timeout_s, int *codes);

/* Shared memory the children can write results into (MAP_SHARED). */
void *pf_test_shared(size_t len);

#endif
