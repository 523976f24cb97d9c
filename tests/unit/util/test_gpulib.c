/* util/gpulib.c against the host-memory double: the facts the probe reads
 * (device count, model, PCI bus id, memory, versions) and the errors for a
 * missing library. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/sizes.h"
#include "util/gpulib.h"

#include "unit_files.h"

static char lib[PF_PATH_MAX + 32];

static void find_double(void)
{
    pf_test_use_gpu_double(lib, sizeof(lib));
    unsetenv("CUDA_VISIBLE_DEVICES");
}

TestSuite(nccl_gpulib, .init = find_double);

Test(nccl_gpulib, device_facts_for_the_probe)
{
    struct pf_cudart c;
    struct pf_cuda_device gpu;
    char err[PF_ERRLEN] = "";
    int n = -1, rt = 0, drv = 0;

    setenv("PF_DOUBLE_GPUS", "3", 1);
    cr_assert_eq(pf_cudart_load(&c, err), PF_OK, "%s", err);
    cr_assert_str_eq(c.path, lib);
    cr_assert_eq(pf_cuda_device_count(&c, &n, err), PF_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(pf_cuda_versions(&c, &rt, &drv, err), PF_OK);
    cr_assert_eq(rt, 13000);
    cr_assert_eq(drv, 13000);
    cr_assert_eq(pf_cuda_device_info(&c, 1, &gpu, err), PF_OK, "%s", err);
    cr_assert_str_eq(gpu.model, "Double GPU 1");
    cr_assert_str_eq(gpu.pci_bus_id, "0000:19:00.0");
    cr_assert_eq(gpu.mem_bytes, 141ull << 30);
    cr_assert_eq(pf_cuda_device_info(&c, 7, &gpu, err), PF_ERR_ENGINE);
    cr_assert(strstr(err, "device 7"), "%s", err);
    pf_cudart_unload(&c);
}

Test(nccl_gpulib, no_device_is_zero_not_an_error)
{
    struct pf_cudart c;
    char err[PF_ERRLEN] = "";
    int n = -1;

    setenv("PF_DOUBLE_GPUS", "0", 1);
    cr_assert_eq(pf_cudart_load(&c, err), PF_OK, "%s", err);
    cr_assert_eq(pf_cuda_device_count(&c, &n, err), PF_OK);
    cr_assert_eq(n, 0);
    pf_cudart_unload(&c);
}

Test(nccl_gpulib, nccl_version_in_both_encodings)
{
    struct pf_nccl nc;
    char err[PF_ERRLEN] = "", s[32];
    int v = 0;

    cr_assert_eq(pf_nccl_load(&nc, err), PF_OK, "%s", err);
    cr_assert_eq(pf_nccl_version(&nc, &v, err), PF_OK);
    cr_assert_eq(v, 22809);
    pf_nccl_version_str(v, s, sizeof(s));
    cr_assert_str_eq(s, "2.28.9");
    setenv("PF_DOUBLE_NCCL_VERSION", "2708", 1);   /* 2.7.8, old encoding */
    cr_assert_eq(pf_nccl_version(&nc, &v, err), PF_OK);
    cr_assert_eq(v, 20708);
    cr_assert_not_null(nc.ncclGetLastError);
    pf_nccl_unload(&nc);
}

Test(nccl_gpulib, missing_libraries_name_what_was_tried)
{
    struct pf_cudart c;
    struct pf_nccl nc;
    char err[PF_ERRLEN] = "";

    setenv("EFA_PREFLIGHT_CUDART", "/nonexistent/libcudart.so.12", 1);
    cr_assert_eq(pf_cudart_load(&c, err), PF_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "EFA_PREFLIGHT_CUDART=/nonexistent/libcudart.so.12"),
              "%s", err);
    cr_assert_null(c.dl);
    setenv("EFA_PREFLIGHT_NCCL", "/nonexistent/libnccl.so.2", 1);
    cr_assert_eq(pf_nccl_load(&nc, err), PF_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "NCCL not found"), "%s", err);
    cr_assert_null(nc.dl);
}

Test(nccl_gpulib, a_library_without_the_symbols_is_refused)
{
    struct pf_nccl nc;
    char err[PF_ERRLEN] = "";

    /* libc is a real library without any NCCL entry point */
    setenv("EFA_PREFLIGHT_NCCL", "libc.so.6", 1);
    cr_assert_eq(pf_nccl_load(&nc, err), PF_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "lacks symbol ncclGetVersion"), "%s", err);
    cr_assert_null(nc.dl);
}
