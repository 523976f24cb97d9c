/* probe: node facts, no network (IMDSv2 aside). Fills run->node and
 * run->instance. Every path is read under cfg.sysfs_root / cfg.dev_root so
 * tests run on fixture trees. A missing library or device is a fact, not an
 * error: pf_probe only fails on bad input (PF_ERR_USAGE). */
#ifndef PF_PROBE_H
#define PF_PROBE_H

#include "../pf.h"

pf_err pf_probe(struct pf_run *run, char *err);

#endif
