#include "discover.h"

/* Placeholder until the Kubernetes bootstrap lands (issue: Kubernetes). */
pf_err pf_discover_k8s(struct pf_run *run, char *err)
{
    (void)run;
    return pf_fail(err, PF_ERR_UNSUPPORTED, "k8s bootstrap is not built yet");
}
