/* Test helper: a run as the checks' tests start from - the built-in
 * catalog loaded, the config's defaults, optionally an instance type. */
#ifndef PF_TEST_RUN_FIXTURE_H
#define PF_TEST_RUN_FIXTURE_H

#include "types/run.h"

/* A fresh run (freed with pf_test_run_free); with type (NULL: none) its
 * node's instance type and the catalog's entry for it. */
struct pf_run *pf_test_run_new(const char *type);
/* The run's check called name; NULL: none. */
const struct pf_check *pf_test_check(const struct pf_run *run,
                                     const char *name);
/* The run's check called name, which must exist, with reason and a
 * message holding words (NULL: any message). */
const struct pf_check *pf_test_check_says(const struct pf_run *run,
                                          const char *name,
                                          enum pf_reason reason,
                                          const char *words);
/* NCCL 2.28.9 and aws-ofi-nccl (net plugin API v10, loaded as
 * plugin_name) as an EFA training image has them, whatever this machine's
 * library path holds. */
void pf_test_nccl_image(struct pf_node *node, const char *plugin_name);
/* The catalog and the run. */
void pf_test_run_free(struct pf_run *run);

#endif
