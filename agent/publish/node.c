#include "publish.h"

/* Placeholder until the Kubernetes publisher lands (issue: Kubernetes). */
pf_err pf_publish_node(const struct pf_run *run, char *err)
{
    (void)run;
    return pf_fail(err, PF_ERR_UNSUPPORTED, "node publishing is not built yet");
}
