/* Paths beside unit_tests, small files, the GPU double (unit_files.h). */
#include "unit_files.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pf_test_build_path(char *out, size_t len, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    cr_assert(n > 0, "readlink /proc/self/exe");
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(out, len, "%s/%s", exe, rel);
}

void pf_test_helper_path(char *out, size_t len, const char *name)
{
    char rel[PATH_MAX];

    snprintf(rel, sizeof(rel), "test-helpers/%s", name);
    pf_test_build_path(out, len, rel);
    cr_assert_eq(access(out, R_OK), 0, "%s missing: make test-helpers", out);
}

void pf_test_sysfs_fixture(char *out, size_t len, const char *name)
{
    char root[PATH_MAX], cmd[PATH_MAX + 64];

    pf_test_build_path(root, sizeof(root), "fixtures/sysfs");
    snprintf(cmd, sizeof(cmd), "tests/fakes/make_sysfs.sh '%s'", root);
    cr_assert_eq(system(cmd), 0, "%s failed (run from the repo root)", cmd);
    if (name)
        snprintf(out, len, "%s/%s", root, name);
    else
        snprintf(out, len, "%s", root);
}

void pf_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

char *pf_test_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text;
    long len;

    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len, "%s", path);
    fclose(f);
    return text;
}

void pf_test_use_gpu_double(char *lib, size_t len)
{
    pf_test_build_path(lib, len, "double/libgpu-double.so");
    cr_assert_eq(access(lib, R_OK), 0, "test double missing: %s", lib);
    setenv("EFA_PREFLIGHT_CUDART", lib, 1);
    setenv("EFA_PREFLIGHT_NCCL", lib, 1);
}
