/* Test helper: paths beside the unit_tests binary (its fixtures and test
 * doubles live there, wherever the checkout is), small files, and the GPU
 * double named as CUDA and NCCL. */
#ifndef PF_TEST_UNIT_FILES_H
#define PF_TEST_UNIT_FILES_H

#include <stddef.h>

/* <folder of unit_tests>/<rel> in out. */
void pf_test_build_path(char *out, size_t len, const char *rel);
/* <folder of unit_tests>/test-helpers/<name> (make test-helpers), which
 * must exist, in out. */
void pf_test_helper_path(char *out, size_t len, const char *name);
/* The sysfs fixture trees (tests/fakes/make_sysfs.sh, run from the repo
 * root) built beside unit_tests; the root of tree name in out (name NULL:
 * the folder holding them all). */
void pf_test_sysfs_fixture(char *out, size_t len, const char *name);
/* path holds text and nothing else. */
void pf_test_write_file(const char *path, const char *text);
/* What path holds, NUL-terminated (free it); it must be readable. */
char *pf_test_read_file(const char *path);
/* EFA_PREFLIGHT_CUDART and EFA_PREFLIGHT_NCCL name the host-memory double
 * (build/double/libgpu-double.so), which must exist; its path in lib. */
void pf_test_use_gpu_double(char *lib, size_t len);

#endif
