/* The monitor's GPU health (monitor/gpu.c) on the NVML double: the same
 * hysteresis as the NICs (raised after K bad intervals in a row, cleared
 * after M good ones), the condition naming the GPU, and every field as an
 * efa_preflight_gpu_* sample - none for a field the GPU does not
 * support. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/catalog.h"
#include "monitor/gpu.h"

#include "unit_files.h"

static char fixture_path[PATH_MAX + 64];

/* The double reads its fixture once, at nvmlInit (the first step). */
static void drop_fixture(void)
{
    if (fixture_path[0])
        unlink(fixture_path);
}

static void use_double(const char *fixture)
{
    char lib[PATH_MAX], rel[64];

    pf_test_build_path(lib, sizeof(lib), "double/libnvml-double.so");
    snprintf(rel, sizeof(rel), "monitor_gpu_fixture.%d", (int)getpid());
    pf_test_build_path(fixture_path, sizeof(fixture_path), rel);
    pf_test_write_file(fixture_path, fixture);
    setenv("EFA_PREFLIGHT_NVML", lib, 1);
    setenv("PF_NVML_FIXTURE", fixture_path, 1);
    atexit(drop_fixture);
}

static struct pf_catalog cat;

/* The GPU watch of a p5e node on the double with fixture: raised after k
 * bad intervals, cleared after m good ones. */
static struct pf_mon_gpu *watch(const char *fixture, int k, int m_good)
{
    struct pf_mon_gpu *m = calloc(1, sizeof(*m));
    char err[PF_ERRLEN];

    cr_assert_not_null(m);
    use_double(fixture);
    cr_assert_eq(pf_catalog_load(&cat, "", err), PF_OK, "%s", err);
    pf_mon_gpu_init(m, k, m_good, pf_catalog_find(&cat, "p5e.48xlarge"));
    return m;
}

static void unwatch(struct pf_mon_gpu *m)
{
    pf_mon_gpu_free(m);
    pf_catalog_free(&cat);
    free(m);
}

Test(monitor_gpu, a_fault_is_raised_after_k_bad_intervals)
{
    struct pf_mon_gpu *m = watch("gpu.2.remap_pending 1\n", 3, 2);
    char msg[512];

    for (int i = 1; i <= 2; i++) {
        pf_mon_gpu_step(m);
        cr_assert_eq(m->nchanges, 0, "interval %d", i);
        cr_assert_eq(pf_mon_gpu_condition(m, msg, sizeof(msg)),
                     PF_R_GPUsHealthy);
    }
    pf_mon_gpu_step(m);
    cr_assert_eq(m->nchanges, 1);
    cr_assert(m->changes[0].raised);
    cr_assert_eq(m->changes[0].reason, PF_R_GPURowRemapPending);
    cr_assert_eq(pf_mon_gpu_condition(m, msg, sizeof(msg)),
                 PF_R_GPURowRemapPending);
    cr_assert(strstr(msg, "GPU 2 (00000000:38:00.0, serial 1650000000002): "
                          "row remap pending"), "%s", msg);
    cr_assert(pf_mon_gpu_faulted(m));
    pf_mon_gpu_step(m);
    cr_assert_eq(m->nchanges, 0, "a standing fault is raised once");
    unwatch(m);
}

Test(monitor_gpu, a_fault_clears_after_m_good_intervals)
{
    /* HW slowdown in the first read only */
    struct pf_mon_gpu *m = watch("gpu.4.clocks 0x8\ngpu.4.clocks_after 0\n",
                                 1, 2);
    char msg[512];

    pf_mon_gpu_step(m);
    cr_assert_eq(m->nchanges, 1);
    cr_assert_eq(m->changes[0].reason, PF_R_GPUThrottled);
    pf_mon_gpu_step(m);
    cr_assert_eq(m->nchanges, 0, "one good interval is not enough");
    cr_assert(pf_mon_gpu_faulted(m));
    pf_mon_gpu_step(m);
    cr_assert_eq(m->nchanges, 1);
    cr_assert_not(m->changes[0].raised);
    cr_assert_not(pf_mon_gpu_faulted(m));
    cr_assert_eq(pf_mon_gpu_condition(m, msg, sizeof(msg)), PF_R_GPUsHealthy);
    unwatch(m);
}

Test(monitor_gpu, every_field_is_exported_unsupported_ones_left_out)
{
    struct pf_mon_gpu *m = watch("gpus 2\ngpu.1.ecc notsupported\n"
                                 "gpu.0.xid 48\ngpu.0.nvlink_replay_step 2\n",
                                 2, 2);
    struct pf_mon_buf b = { 0 };

    pf_mon_gpu_step(m);
    pf_mon_gpu_step(m);
    pf_mon_gpu_expose(m, "node-a", &b);
    cr_assert_not(b.oom);
    cr_assert(strstr(b.p, "efa_preflight_gpu_nvml_up{node=\"node-a\"} 1\n"));
    cr_assert(strstr(b.p, "efa_preflight_gpu_nvlink_links_active{node=\"node-a\","
                          "gpu=\"1\",bus_id=\"00000000:28:00.0\",serial="
                          "\"1650000000001\","), "%s", b.p);
    cr_assert(strstr(b.p, "efa_preflight_gpu_ecc_volatile_uncorrected_total"
                          "{node=\"node-a\",gpu=\"0\""));
    cr_assert_null(strstr(b.p, "efa_preflight_gpu_ecc_volatile_uncorrected_total"
                               "{node=\"node-a\",gpu=\"1\""),
                   "a field GPU 1 does not support has no sample");
    cr_assert(strstr(b.p, "efa_preflight_gpu_xid_total{node=\"node-a\",gpu=\"0\""));
    cr_assert(strstr(b.p, "xid=\"48\",class=\"node\"} 1\n"), "%s", b.p);
    cr_assert(strstr(b.p, "# TYPE efa_preflight_gpu_pcie_replays_total counter"));
    pf_mon_buf_free(&b);
    unwatch(m);
}

Test(monitor_gpu, no_nvml_on_a_cpu_node_writes_no_condition)
{
    struct pf_mon_gpu *m = calloc(1, sizeof(*m));
    struct pf_mon_buf b = { 0 };
    char msg[512];

    setenv("EFA_PREFLIGHT_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    pf_mon_gpu_init(m, 2, 2, NULL);
    pf_mon_gpu_step(m);
    cr_assert_eq(pf_mon_gpu_condition(m, msg, sizeof(msg)), PF_R_None);
    pf_mon_gpu_expose(m, "n", &b);
    cr_assert(strstr(b.p, "efa_preflight_gpu_nvml_up{node=\"n\"} 0\n"));
    cr_assert_null(strstr(b.p, "efa_preflight_gpu_up"));
    pf_mon_buf_free(&b);
    pf_mon_gpu_free(m);
    free(m);
}
