/* Test helper: a run->coll a test filled by hand (rows, engine, provider,
 * node count, NICs) made what the collective stage hands on, so the
 * re-tests, the verdict and the publishers read what they read in a run. */
#ifndef PF_TEST_COLL_FIXTURE_H
#define PF_TEST_COLL_FIXTURE_H

#include "collective/collective.h"
#include "judge/judge.h"

/* run->coll.judgement (the floor and the busbw judged against it) from
 * run->coll, run->instance and the floor options, as pf_collective leaves
 * it. Call it after the test's last change to any of those, before the
 * verdict or a publisher reads the run. */
static inline void pf_test_judged(struct pf_run *run)
{
    pf_judge(run);
}

#endif
