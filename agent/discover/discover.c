#include "discover.h"

#include <stdlib.h>

/* Placeholder until the bootstraps land (issue: Ring all_reduce). */
pf_err pf_discover(struct pf_run *run, char *err)
{
    (void)run;
    return pf_fail(err, PF_ERR_UNSUPPORTED, "discovery is not built yet");
}

void pf_peers_free(struct pf_peers *p)
{
    free(p->list);
    p->list = NULL;
}
