/* The run's one deadline: started once (main, before the probe) from
 * cfg.timeout_s; every stage reads the same one. */
#ifndef PF_RUN_CLOCK_H
#define PF_RUN_CLOCK_H

#include <stdint.h>

struct pf_run;

/* Start the run's clock: run->deadline_ms = now + cfg.timeout_s. */
void pf_run_start_clock(struct pf_run *run);
/* The deadline (util/clock.h ms); a run that was never started (unit
 * tests) gets timeout_s from now. */
int64_t pf_run_deadline(const struct pf_run *run);

#endif
