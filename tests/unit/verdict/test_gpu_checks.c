/* GPU health end to end below the pipeline: the NVML double
 * (build/double/libnvml-double.so) with one fixture per fault, read by the
 * probe (probe/gpu_health.c) as a run does - probe, the window around a
 * sweep, the last read - then judged (verdict/gpu_checks.c). Each fault
 * gives its reason, status, class, exit code and names the GPU (index, bus
 * id, serial); the healthy fixture passes; NVML missing and
 * NVML_ERROR_NOT_SUPPORTED are handled per field. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/catalog.h"
#include "config/config.h"
#include "probe/gpu_health.h"
#include "verdict/verdict.h"

#include "run_fixture.h"
#include "unit_files.h"

/* A run of type `type` whose NVML is the double with `fixture` and whose
 * kernel log is `kmsg` (NULL: none), read around a sweep when window. */
static struct pf_run *run_with(const char *name, const char *type,
                               const char *fixture, const char *kmsg,
                               bool window)
{
    struct pf_run *run = pf_test_run_new(type);
    char dir[PATH_MAX], path[PATH_MAX + 32], lib[PATH_MAX];

    pf_test_build_path(dir, sizeof(dir), "fixtures");
    mkdir(dir, 0755);
    pf_test_build_path(dir, sizeof(dir), "fixtures/nvml");
    mkdir(dir, 0755);
    snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/dev", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/dev/kmsg", dir);
    unlink(path);
    if (kmsg)
        pf_test_write_file(path, kmsg);
    snprintf(path, sizeof(path), "%s/fixture", dir);
    pf_test_write_file(path, fixture);
    setenv("PF_NVML_FIXTURE", path, 1);
    pf_test_build_path(lib, sizeof(lib), "double/libnvml-double.so");
    if (!getenv("EFA_PREFLIGHT_NVML"))
        setenv("EFA_PREFLIGHT_NVML", lib, 1);
    snprintf(run->cfg.dev_root, sizeof(run->cfg.dev_root), "%s", dir);

    pf_probe_gpu_health(run);
    if (window) {
        pf_gpu_health_begin(run);
        pf_gpu_health_end(run);
    }
    pf_gpu_health_finish(run);
    cr_assert_null(run->gpu_session, "the session is closed after finish");
    pf_verdict_gpu(run);
    pf_verdict_settle(&run->verdict);
    return run;
}

/* The fault's check, its reason, status, the run's class and exit code,
 * and the words the message must hold (the GPU's naming). */
static void expect(const struct pf_run *run, const char *name,
                   enum pf_status st, enum pf_reason reason, int exit_code,
                   const char *words)
{
    const struct pf_check *c = pf_test_check(run, name);

    cr_assert_not_null(c, "no check %s", name);
    cr_assert_eq(c->status, st, "%s: status %s, want %s (%s)", name,
                 pf_status_name(c->status), pf_status_name(st), c->message);
    cr_assert_eq(c->reason, reason, "%s: reason %s, want %s", name,
                 pf_reason_name(c->reason), pf_reason_name(reason));
    cr_assert_str_eq(c->condition, PF_COND_GPU);
    cr_assert_eq(run->verdict.exit_code, exit_code, "exit %d, want %d (%s)",
                 run->verdict.exit_code, exit_code,
                 pf_reason_name(run->verdict.headline));
    if (words)
        cr_assert(strstr(c->message, words), "%s: '%s' lacks '%s'", name,
                  c->message, words);
    if (st == PF_FAIL) {
        cr_assert_eq(run->verdict.headline, reason);
        cr_assert(pf_class_may_taint(run->verdict.cls));
        cr_assert_str_eq(pf_class_status_word(run->verdict.cls), "fail");
        cr_assert(c->remedy[0], "a failure carries its remedy");
    }
}

#define GPU2 "GPU 2 (00000000:38:00.0, serial 1650000000002)"
#define P5E "p5e.48xlarge"

/* One case: the double's fixture (in its own folder dir) read on a node of
 * `type`, around a sweep when window; then check `check` has status st. A
 * warning or failure is held to expect() (reason, exit code, the words
 * its message names the GPU with); a pass or skip leaves the run at exit
 * 0 and its message holds words. words2 and remedy: what else the
 * message and the remedy must hold. */
struct gpu_case {
    const char *dir, *type, *fixture;
    bool window;
    const char *check;
    enum pf_status st;
    enum pf_reason reason;
    int exit_code;
    const char *words, *words2, *remedy;
};

static const struct gpu_case cases[] = {
    {"lost", P5E, "gpu.2.lost 1\n", true, "gpu_bus", PF_FAIL,
     PF_R_GPUFellOffBus, 1, .words = "GPU 2 (", .words2 = "GPU_IS_LOST"},
    {"handle", P5E, "gpu.5.handle_lost 1\n", false, "gpu_bus", PF_FAIL,
     PF_R_GPUFellOffBus, 1, .words = "GPU 5"},
    {"ecc", P5E, "gpu.2.ecc_volatile 2\n", true, "gpu_ecc", PF_FAIL,
     PF_R_GPUUncorrectableECC, 1, .words = GPU2, .remedy = "reset"},
    {"ecc_agg", P5E, "gpu.2.ecc_aggregate 4\n", true, "gpu_ecc", PF_WARN,
     PF_R_GPUUncorrectableECC, 0, .words = GPU2},
    {"ecc_off", P5E, "gpu.2.ecc_mode 0\n", true, "gpu_ecc_mode", PF_WARN,
     PF_R_GPUECCDisabled, 0, .words = GPU2},
    {"remap_pending", P5E, "gpu.2.remap_pending 1\n", true, "gpu_row_remap",
     PF_FAIL, PF_R_GPURowRemapPending, 1, .words = GPU2, .remedy = "reset"},
    {"remap_failed", P5E,
     "gpu.2.remap_failure 1\ngpu.2.remap_unc 9\ngpu.3.remap_pending 1\n",
     true, "gpu_row_remap", PF_FAIL, PF_R_GPURowRemapFailed, 1, .words = GPU2,
     .remedy = "replace"},
    {"retired", "p4d.24xlarge",
     "gpu.2.retired_pending 1\ngpu.*.nvlinks 12\ngpu.*.pcie_gen 4\n"
     "gpu.*.pcie_max_gen 4\n",
     true, "gpu_row_remap", PF_FAIL, PF_R_GPURowRemapPending, 1,
     .words = "page retirement pending"},
    {"xid48", P5E, "gpu.2.xid 48\n", true, "gpu_xid", PF_FAIL, PF_R_GPUXid, 1,
     .words = GPU2 ": XID 48 (double-bit ECC error) x1 during the all_reduce"},
    {"xid79", P5E, "gpu.2.xid 79\n", false, "gpu_bus", PF_FAIL,
     PF_R_GPUFellOffBus, 1, .words = "XID 79"},
    {"xid13", P5E, "gpu.2.xid 13\n", true, "gpu_xid", PF_WARN, PF_R_GPUXid, 0,
     .words = "XID 13"},
    {"nvlink_down", P5E, "gpu.2.nvlink_active 16\n", true, "nvlink", PF_FAIL,
     PF_R_NVLinkDown, 1, .words = GPU2 ": 16 of 18 NVLink links active, down: 16,17"},
    {"nvlink_unknown", "x9.unknown", "gpu.2.nvlink_active 16\n", true,
     "nvlink", .st = PF_PASS},
    {"nvlink_rec", P5E, "gpu.2.nvlink_recovery_step 1\n", true,
     "nvlink_errors", PF_FAIL, PF_R_NVLinkErrors, 1, .words = GPU2 ": +1 recovery"},
    {"nvlink_crc", P5E, "gpu.2.nvlink_crc_step 3\n", true, "nvlink_errors",
     PF_WARN, PF_R_NVLinkErrors, 0, .words = "+3 CRC during the all_reduce"},
    {"pcie_x8", P5E, "gpu.2.pcie_width 8\n", true, "pcie", PF_FAIL,
     PF_R_PCIeDowntrained, 1, .words = GPU2 ": x8, the type's slot is x16"},
    /* a warning until a real p5 shows what NVML's maximum reads there */
    {"pcie_gen4", P5E, "gpu.2.pcie_max_gen 4\ngpu.2.pcie_gen 4\n", true,
     "pcie", PF_WARN, PF_R_PCIeDowntrained, 0, .words = "Gen4 at most"},
    /* a link idles at a low generation: only a read under load counts */
    {"pcie_idle", P5E, "gpu.*.pcie_gen 1\n", false, "pcie", .st = PF_PASS},
    {"pcie_load", P5E, "gpu.2.pcie_gen_after 3\n", true, "pcie", PF_WARN,
     PF_R_PCIeDowntrained, 0, .words = GPU2 ": Gen3 of Gen5 right after the all_reduce"},
    {"pcie_replay", P5E, "gpu.2.pcie_replay_step 5\n", true, "pcie_replays",
     PF_WARN, PF_R_PCIeReplaysRising, 0, .words = GPU2},
    {"throttle", P5E, "gpu.2.clocks 0x8\n", true, "gpu_clocks", PF_FAIL,
     PF_R_GPUThrottled, 1,
     .words = GPU2 ": HW slowdown at the probe and during the all_reduce"},
    {"brake_once", P5E, "gpu.2.clocks 0x80\ngpu.2.clocks_after 0x1\n", true,
     "gpu_clocks", PF_WARN, PF_R_GPUThrottled, 0, .words = "power brake"},
    /* idle, SW power cap, SW thermal: what a healthy GPU shows */
    {"sw_clocks", P5E, "gpu.*.clocks 0x25\n", true, "gpu_clocks", .st = PF_PASS},
    {"driver_old", P5E, "driver 535.104.05\n", true, "gpu_driver", PF_WARN,
     PF_R_GPUDriverTooOld, 0, .words = "535.104.05 is older than 550"},
    {"driver_ok", P5E, "driver 550\n", true, "gpu_driver", .st = PF_PASS},
    {"mig", P5E, "gpu.2.mig 1\n", true, "gpu_mig", PF_FAIL, PF_R_GPUMIGEnabled,
     1, .words = GPU2},
    {"persist", P5E, "gpu.*.persistence 0\n", true, "gpu_persistence",
     PF_WARN, PF_R_GPUPersistenceModeOff, 0, .words = "and 5 more GPUs"},
    {"init", P5E, "init 9\n", true, "gpu_nvml", PF_WARN,
     PF_R_GPUHealthUnchecked, 0, .words = "Driver Not Loaded"},
    {"notsup_one", P5E, "gpu.3.ecc notsupported\ngpu.2.ecc_volatile 1\n",
     true, "gpu_ecc", PF_FAIL, PF_R_GPUUncorrectableECC, 1, .words = GPU2},
    {"g5", "g5.48xlarge",
     "gpu.*.nvlinks 0\ngpu.*.pcie_gen 4\ngpu.*.pcie_max_gen 4\n", true,
     "nvlink", .st = PF_SKIP},
    /* p5e: min_cuda 11.8, an estimate: a warning, never a failure */
    {"cuda_old", P5E, "cuda 11020\n", true, "gpu_cuda_driver", PF_WARN,
     PF_R_GPUDriverTooOld, 0, .words = "CUDA driver 11.2 is older than 11.8"},
    {"cuda_ok", P5E, "cuda 13000\n", true, "gpu_cuda_driver", .st = PF_PASS,
     .words = "CUDA driver 13.0 (minimum 11.8)"},
};

/* Case dir's run, judged and held to its row. */
static struct pf_run *judged(const char *dir)
{
    const struct gpu_case *c = NULL;
    const struct pf_check *k;
    struct pf_run *run;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (!strcmp(cases[i].dir, dir))
            c = &cases[i];
    cr_assert_not_null(c, "no case %s", dir);
    run = run_with(c->dir, c->type, c->fixture, NULL, c->window);
    k = pf_test_check(run, c->check);
    cr_assert_not_null(k, "no check %s", c->check);
    if (c->st == PF_WARN || c->st == PF_FAIL) {
        expect(run, c->check, c->st, c->reason, c->exit_code, c->words);
    } else {
        cr_assert_eq(k->status, c->st, "%s: status %s, want %s (%s)",
                     c->check, pf_status_name(k->status),
                     pf_status_name(c->st), k->message);
        cr_assert_eq(run->verdict.exit_code, 0);
        if (c->words)
            cr_assert(strstr(k->message, c->words), "%s: '%s' lacks '%s'",
                      c->check, k->message, c->words);
    }
    if (c->words2)
        cr_assert(strstr(k->message, c->words2), "%s: '%s' lacks '%s'",
                  c->check, k->message, c->words2);
    if (c->remedy)
        cr_assert(strstr(k->remedy, c->remedy), "%s: remedy '%s' lacks '%s'",
                  c->check, k->remedy, c->remedy);
    return run;
}

/* A test that is its case's row and nothing more. */
#define GPU_CASE(test, dir)                                                    \
    Test(gpu_checks, test) { pf_test_run_free(judged(dir)); }

Test(gpu_checks, healthy_h200s_pass_every_check)
{
    struct pf_run *run = run_with("healthy", "p5e.48xlarge", "gpus 8\n",
                                  NULL, true);
    struct pf_condition cond;

    cr_assert_eq(run->node.gpuh.count, 8);
    for (int i = 0; i < run->verdict.n; i++)
        cr_assert_eq(run->verdict.checks[i].status, PF_PASS, "%s: %s",
                     run->verdict.checks[i].name,
                     run->verdict.checks[i].message);
    cr_assert(pf_test_check(run, "nvlink") && strstr(pf_test_check(run, "nvlink")->message,
                                             "144 of 144"));
    cr_assert_eq(run->verdict.exit_code, 0);
    cr_assert(pf_verdict_condition_of(&run->verdict, PF_COND_GPU, &cond));
    cr_assert_str_eq(cond.status, "True");
    cr_assert_eq(cond.reason, PF_R_PreflightPassed);
    cr_assert_str_eq(run->node.gpuh.gpus[2].serial, "1650000000002");
    cr_assert(run->node.gpuh.window);
    pf_test_run_free(run);
}

GPU_CASE(lost_gpu_fell_off_the_bus, "lost")
GPU_CASE(handle_that_cannot_open_is_lost, "handle")

Test(gpu_checks, a_gpu_this_container_may_not_open_is_not_blamed)
{
    struct pf_run *run = run_with("noperm", "p5e.48xlarge",
                                  "gpu.5.handle_lost 4\n", NULL, true);
    cr_assert_eq(pf_test_check(run, "gpu_bus")->status, PF_PASS);
    cr_assert_eq(run->node.gpuh.gpus[5].f[PF_GF_PCI], PF_GFS_ERROR);
    cr_assert(strstr(run->node.gpuh.gpus[5].field_err, "(4)"), "%s",
              run->node.gpuh.gpus[5].field_err);
    cr_assert_eq(run->verdict.exit_code, 0);
    pf_test_run_free(run);
}

GPU_CASE(volatile_uncorrectable_ecc_fails, "ecc")
GPU_CASE(lifetime_uncorrectable_ecc_only_warns, "ecc_agg")
GPU_CASE(ecc_disabled_warns, "ecc_off")
GPU_CASE(pending_row_remap_says_reset, "remap_pending")
GPU_CASE(failed_row_remap_says_replace, "remap_failed")
GPU_CASE(pending_page_retirement_says_reset, "retired")
GPU_CASE(node_xid_during_the_run_fails, "xid48")

Test(gpu_checks, xid_79_is_a_gpu_off_the_bus)
{
    struct pf_run *run = judged("xid79");

    cr_assert_eq(pf_test_check(run, "gpu_xid")->status, PF_FAIL);
    pf_test_run_free(run);
}

GPU_CASE(application_xid_only_warns, "xid13")

Test(gpu_checks, node_xid_since_boot_warns_and_names_the_gpu)
{
    struct pf_run *run = run_with(
        "kmsg", "p5e.48xlarge", "gpus 8\n",
        "6,1234,5000000,-;NVRM: Xid (PCI:0000:38:00): 79, pid=77, name=python,"
        " GPU has fallen off the bus.\n SUBSYSTEM=pci\n"
        "6,1235,5000001,-;NVRM: Xid (PCI:0000:38:00): 79, pid=77, again\n",
        true);
    expect(run, "gpu_xid", PF_WARN, PF_R_GPUXid, 0,
           GPU2 ": XID 79 (GPU has fallen off the bus) x2 in the kernel log");
    cr_assert(run->node.gpuh.kmsg_read);
    pf_test_run_free(run);
}

GPU_CASE(nvlink_down_against_the_catalog, "nvlink_down")

Test(gpu_checks, an_nvlink_gap_is_not_a_link_down)
{
    /* link 5 not supported: 17 links, none of them named down */
    struct pf_run *run = run_with("nvlink_gap", "x9.unknown",
                                  "gpu.2.nvlink_gap 5\n", NULL, true);
    cr_assert_eq(run->node.gpuh.gpus[2].nvlinks, 17);
    cr_assert_eq(run->node.gpuh.gpus[2].nvlinks_active, 17);
    cr_assert_eq(pf_test_check(run, "nvlink")->status, PF_PASS);
    pf_test_run_free(run);
}

GPU_CASE(nvlink_not_judged_without_a_catalog_count, "nvlink_unknown")
GPU_CASE(nvlink_recovery_during_the_all_reduce_fails, "nvlink_rec")
GPU_CASE(nvlink_crc_during_the_all_reduce_warns, "nvlink_crc")
GPU_CASE(pcie_trained_at_x8_fails, "pcie_x8")
GPU_CASE(pcie_gen4_at_most_in_a_gen5_slot_warns, "pcie_gen4")
GPU_CASE(pcie_idling_at_gen1_is_not_a_fault, "pcie_idle")
GPU_CASE(pcie_low_generation_under_load_warns, "pcie_load")
GPU_CASE(pcie_replays_rising_warn, "pcie_replay")
GPU_CASE(hw_slowdown_in_both_reads_fails, "throttle")
GPU_CASE(power_brake_in_one_read_warns, "brake_once")
GPU_CASE(software_clock_reasons_are_not_faults, "sw_clocks")
GPU_CASE(driver_below_an_estimated_minimum_warns, "driver_old")

Test(gpu_checks, driver_below_a_verified_minimum_fails)
{
    struct pf_run *run = pf_test_run_new("p5e.48xlarge");
    struct pf_instance it = *run->instance;

    /* the same reads against a catalog entry whose minimum is verified */
    pf_test_run_free(run);
    run = run_with("driver_old_v", "p5e.48xlarge", "driver 545.23.08\n", NULL,
                   true);
    it.gpu.driver_verified = true;
    run->instance = &it;
    run->verdict.n = 0;
    pf_verdict_gpu(run);
    pf_verdict_settle(&run->verdict);
    expect(run, "gpu_driver", PF_FAIL, PF_R_GPUDriverTooOld, 1, "545.23.08");
    pf_test_run_free(run);
}

GPU_CASE(driver_at_the_minimum_passes, "driver_ok")
GPU_CASE(mig_on_where_the_type_expects_it_off_fails, "mig")
GPU_CASE(persistence_off_warns, "persist")

Test(gpu_checks, nvml_missing_is_a_warning_naming_what_was_not_checked)
{
    struct pf_run *run;

    setenv("EFA_PREFLIGHT_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    run = run_with("missing", "p5e.48xlarge", "", NULL, true);
    expect(run, "gpu_nvml", PF_WARN, PF_R_GPUHealthUnchecked, 0,
           "not checked: XIDs during the run, ECC, row remapping, NVLink");
    cr_assert(strstr(pf_test_check(run, "gpu_nvml")->message,
                     "/nonexistent/libnvidia-ml.so.1"));
    cr_assert_eq(run->verdict.n, 1, "nothing else is judged");
    pf_test_run_free(run);
}

Test(gpu_checks, nvml_missing_on_a_cpu_node_adds_no_check)
{
    struct pf_run *run;

    setenv("EFA_PREFLIGHT_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    run = run_with("cpu", "c5n.18xlarge", "", NULL, false);
    cr_assert_eq(run->verdict.n, 0);
    pf_test_run_free(run);
}

GPU_CASE(nvml_init_failure_is_a_warning, "init")

Test(gpu_checks, fields_not_supported_are_skipped_per_field)
{
    struct pf_run *run = run_with(
        "notsup", "p5e.48xlarge",
        "gpu.*.ecc notsupported\ngpu.*.remap notsupported\n"
        "gpu.*.retired_pending notsupported\ngpu.*.nvlink_errors notsupported\n"
        "gpu.*.clocks notsupported\ngpu.*.events notsupported\n",
        NULL, true);

    cr_assert_eq(pf_test_check(run, "gpu_ecc")->status, PF_SKIP);
    cr_assert_eq(pf_test_check(run, "gpu_row_remap")->status, PF_SKIP);
    cr_assert_eq(pf_test_check(run, "nvlink_errors")->status, PF_SKIP);
    cr_assert_eq(pf_test_check(run, "gpu_clocks")->status, PF_SKIP);
    cr_assert_eq(pf_test_check(run, "nvlink")->status, PF_PASS);
    cr_assert_eq(pf_test_check(run, "pcie")->status, PF_PASS);
    cr_assert(strstr(pf_test_check(run, "gpu_nvml")->message, "ecc_volatile"));
    cr_assert_eq(run->node.gpuh.gpus[0].f[PF_GF_ECC_VOLATILE],
                 PF_GFS_UNSUPPORTED);
    cr_assert_eq(run->verdict.exit_code, 0);
    pf_test_run_free(run);
}

GPU_CASE(one_gpu_not_supporting_a_field_leaves_the_others_judged, "notsup_one")
GPU_CASE(a_type_without_nvlink_skips_the_link_check, "g5")
GPU_CASE(cuda_driver_below_the_types_minimum_warns, "cuda_old")
GPU_CASE(cuda_driver_at_or_above_the_minimum_passes, "cuda_ok")
