#include "discover.h"

/* Placeholder until the local launcher lands (issue: Ring all_reduce). */
pf_err pf_local_spawn(struct pf_run *run, bool *is_child, int *exit_code, char *err)
{
    (void)run; *is_child = false; *exit_code = 2;
    return pf_fail(err, PF_ERR_UNSUPPORTED, "local is not built yet");
}
