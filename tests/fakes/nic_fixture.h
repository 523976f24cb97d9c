/* Test helper: private copies of the sysfs fixture trees
 * (tests/fakes/make_sysfs.sh) whose EFA counters a test may rewrite
 * between the "before" and "after" reads. */
#ifndef PF_TEST_NIC_FIXTURE_H
#define PF_TEST_NIC_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "types/config.h"

/* Copy fixture `name` into a fresh temporary folder; its root in out. */
void pf_test_fixture_copy(const char *name, char *out, size_t len);
/* Remove a copy made above. */
void pf_test_fixture_drop(const char *root);
/* Write value into root's counter file of device dev (port 1). */
void pf_test_counter_set(const char *root, const char *dev,
                         const char *counter, uint64_t value);
/* Add delta to it. */
void pf_test_counter_add(const char *root, const char *dev,
                         const char *counter, uint64_t delta);
/* A config reading root (sysfs and dev), no IMDS, defaults otherwise. */
void pf_test_cfg_root(struct pf_config *cfg, const char *root);

#endif
