/* The run's deadline (run_clock.h). */
#include "run_clock.h"

#include "../types/run.h"
#include "../util/clock.h"

void pf_run_start_clock(struct pf_run *run)
{
    run->deadline_ms = pf_deadline_in((int64_t)run->cfg.timeout_s * 1000);
}

int64_t pf_run_deadline(const struct pf_run *run)
{
    return run->deadline_ms ? run->deadline_ms
                            : pf_deadline_in((int64_t)run->cfg.timeout_s * 1000);
}
