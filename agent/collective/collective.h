/* collective: connect the ranks (transport/), pick an engine (nccl when
 * GPUs are present, host otherwise, --engine to force), run the sweep and
 * fill run->coll. Failures of the fabric itself are recorded in run->coll
 * (err, reason) for the verdict; only bad input returns an error. */
#ifndef PF_COLLECTIVE_H
#define PF_COLLECTIVE_H

#include "../types/run.h"
#include "engine.h"

pf_err pf_collective(struct pf_run *run, char *err);
/* Release what the collective sized by the run (per-rank timings, the
 * re-test's links); run->coll stays usable. */
void pf_coll_free(struct pf_coll *c);

/* An engine's arguments from the run: the one place that maps the run's
 * settings to what an engine takes. */
void pf_engine_args_for(struct pf_run *run, struct pf_boot *boot,
                        uint64_t max_count, struct pf_engine_args *a);

/* The sweep itself and the busbw factor: sweep.h. */
#include "sweep.h"

#endif
