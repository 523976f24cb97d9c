#include "collective.h"

/* Placeholder until the collective lands (issue: Ring all_reduce). */
pf_err pf_collective(struct pf_run *run, char *err)
{
    (void)run;
    return pf_fail(err, PF_ERR_UNSUPPORTED, "collective is not built yet");
}
