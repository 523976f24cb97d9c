/* `efa-preflight baseline`: the fleet's baseline per type and size, from
 * the ConfigMap (k8s: in a pod or with --api-server), --baseline FILE and
 * --history-dir; --json prints it as a --baseline file; --reset deletes
 * the ConfigMap; --fold REPORT folds a passed run's report into it. */
#ifndef PF_BASELINE_COMMAND_H
#define PF_BASELINE_COMMAND_H

#include <stdio.h>

#include "../types/run.h"

int pf_baseline_command(struct pf_run *run);

/* The table `baseline` prints. */
void pf_base_print(const struct pf_baseline *b, double fraction, FILE *out);

#endif
