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

static void build_path(char *out, size_t len, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    cr_assert(n > 0, "readlink /proc/self/exe");
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(out, len, "%s/%s", exe, rel);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* A run of type `type` whose NVML is the double with `fixture` and whose
 * kernel log is `kmsg` (NULL: none), read around a sweep when window. */
static struct pf_run *run_with(const char *name, const char *type,
                               const char *fixture, const char *kmsg,
                               bool window)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    char dir[PATH_MAX], path[PATH_MAX + 32], lib[PATH_MAX], err[PF_ERRLEN];

    cr_assert_not_null(run);
    cr_assert_eq(pf_catalog_load(&run->catalog, "", err), PF_OK, "%s", err);
    pf_config_defaults(&run->cfg);
    build_path(dir, sizeof(dir), "fixtures");
    mkdir(dir, 0755);
    build_path(dir, sizeof(dir), "fixtures/nvml");
    mkdir(dir, 0755);
    snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/%s", name);
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/dev", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/dev/kmsg", dir);
    unlink(path);
    if (kmsg)
        write_file(path, kmsg);
    snprintf(path, sizeof(path), "%s/fixture", dir);
    write_file(path, fixture);
    setenv("PF_NVML_FIXTURE", path, 1);
    build_path(lib, sizeof(lib), "double/libnvml-double.so");
    if (!getenv("EFA_PREFLIGHT_NVML"))
        setenv("EFA_PREFLIGHT_NVML", lib, 1);
    snprintf(run->cfg.dev_root, sizeof(run->cfg.dev_root), "%s", dir);
    snprintf(run->node.instance_type, sizeof(run->node.instance_type), "%s",
             type);
    run->instance = pf_catalog_find(&run->catalog, type);

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

static void free_run(struct pf_run *run)
{
    pf_catalog_free(&run->catalog);
    free(run);
}

static const struct pf_check *check(const struct pf_run *run, const char *name)
{
    for (int i = 0; i < run->verdict.n; i++)
        if (!strcmp(run->verdict.checks[i].name, name))
            return &run->verdict.checks[i];
    return NULL;
}

/* The fault's check, its reason, status, the run's class and exit code,
 * and the words the message must hold (the GPU's naming). */
static void expect(const struct pf_run *run, const char *name,
                   enum pf_status st, enum pf_reason reason, int exit_code,
                   const char *words)
{
    const struct pf_check *c = check(run, name);

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
    cr_assert(check(run, "nvlink") && strstr(check(run, "nvlink")->message,
                                             "144 of 144"));
    cr_assert_eq(run->verdict.exit_code, 0);
    cr_assert(pf_verdict_condition_of(&run->verdict, PF_COND_GPU, &cond));
    cr_assert_str_eq(cond.status, "True");
    cr_assert_eq(cond.reason, PF_R_PreflightPassed);
    cr_assert_str_eq(run->node.gpuh.gpus[2].serial, "1650000000002");
    cr_assert(run->node.gpuh.window);
    free_run(run);
}

Test(gpu_checks, lost_gpu_fell_off_the_bus)
{
    struct pf_run *run = run_with("lost", "p5e.48xlarge", "gpu.2.lost 1\n",
                                  NULL, true);
    expect(run, "gpu_bus", PF_FAIL, PF_R_GPUFellOffBus, 1, "GPU 2 (");
    cr_assert(strstr(check(run, "gpu_bus")->message, "GPU_IS_LOST"));
    free_run(run);
}

Test(gpu_checks, handle_that_cannot_open_is_lost)
{
    struct pf_run *run = run_with("handle", "p5e.48xlarge",
                                  "gpu.5.handle_lost 1\n", NULL, false);
    expect(run, "gpu_bus", PF_FAIL, PF_R_GPUFellOffBus, 1, "GPU 5");
    free_run(run);
}

Test(gpu_checks, a_gpu_this_container_may_not_open_is_not_blamed)
{
    struct pf_run *run = run_with("noperm", "p5e.48xlarge",
                                  "gpu.5.handle_lost 4\n", NULL, true);
    cr_assert_eq(check(run, "gpu_bus")->status, PF_PASS);
    cr_assert_eq(run->node.gpuh.gpus[5].f[PF_GF_PCI], PF_GFS_ERROR);
    cr_assert(strstr(run->node.gpuh.gpus[5].field_err, "(4)"), "%s",
              run->node.gpuh.gpus[5].field_err);
    cr_assert_eq(run->verdict.exit_code, 0);
    free_run(run);
}

Test(gpu_checks, volatile_uncorrectable_ecc_fails)
{
    struct pf_run *run = run_with("ecc", "p5e.48xlarge",
                                  "gpu.2.ecc_volatile 2\n", NULL, true);
    expect(run, "gpu_ecc", PF_FAIL, PF_R_GPUUncorrectableECC, 1, GPU2);
    cr_assert(strstr(check(run, "gpu_ecc")->remedy, "reset"));
    free_run(run);
}

Test(gpu_checks, lifetime_uncorrectable_ecc_only_warns)
{
    struct pf_run *run = run_with("ecc_agg", "p5e.48xlarge",
                                  "gpu.2.ecc_aggregate 4\n", NULL, true);
    expect(run, "gpu_ecc", PF_WARN, PF_R_GPUUncorrectableECC, 0, GPU2);
    free_run(run);
}

Test(gpu_checks, ecc_disabled_warns)
{
    struct pf_run *run = run_with("ecc_off", "p5e.48xlarge",
                                  "gpu.2.ecc_mode 0\n", NULL, true);
    expect(run, "gpu_ecc_mode", PF_WARN, PF_R_GPUECCDisabled, 0, GPU2);
    free_run(run);
}

Test(gpu_checks, pending_row_remap_says_reset)
{
    struct pf_run *run = run_with("remap_pending", "p5e.48xlarge",
                                  "gpu.2.remap_pending 1\n", NULL, true);
    expect(run, "gpu_row_remap", PF_FAIL, PF_R_GPURowRemapPending, 1, GPU2);
    cr_assert(strstr(check(run, "gpu_row_remap")->remedy, "reset"));
    free_run(run);
}

Test(gpu_checks, failed_row_remap_says_replace)
{
    struct pf_run *run = run_with("remap_failed", "p5e.48xlarge",
                                  "gpu.2.remap_failure 1\ngpu.2.remap_unc 9\n"
                                  "gpu.3.remap_pending 1\n", NULL, true);
    expect(run, "gpu_row_remap", PF_FAIL, PF_R_GPURowRemapFailed, 1, GPU2);
    cr_assert(strstr(check(run, "gpu_row_remap")->remedy, "replace"));
    free_run(run);
}

Test(gpu_checks, pending_page_retirement_says_reset)
{
    struct pf_run *run = run_with("retired", "p4d.24xlarge",
                                  "gpu.2.retired_pending 1\n"
                                  "gpu.*.nvlinks 12\ngpu.*.pcie_gen 4\n"
                                  "gpu.*.pcie_max_gen 4\n", NULL, true);
    expect(run, "gpu_row_remap", PF_FAIL, PF_R_GPURowRemapPending, 1,
           "page retirement pending");
    free_run(run);
}

Test(gpu_checks, node_xid_during_the_run_fails)
{
    struct pf_run *run = run_with("xid48", "p5e.48xlarge", "gpu.2.xid 48\n",
                                  NULL, true);
    expect(run, "gpu_xid", PF_FAIL, PF_R_GPUXid, 1,
           GPU2 ": XID 48 (double-bit ECC error) x1 during the all_reduce");
    free_run(run);
}

Test(gpu_checks, xid_79_is_a_gpu_off_the_bus)
{
    struct pf_run *run = run_with("xid79", "p5e.48xlarge", "gpu.2.xid 79\n",
                                  NULL, false);
    expect(run, "gpu_bus", PF_FAIL, PF_R_GPUFellOffBus, 1, "XID 79");
    cr_assert_eq(check(run, "gpu_xid")->status, PF_FAIL);
    free_run(run);
}

Test(gpu_checks, application_xid_only_warns)
{
    struct pf_run *run = run_with("xid13", "p5e.48xlarge", "gpu.2.xid 13\n",
                                  NULL, true);
    expect(run, "gpu_xid", PF_WARN, PF_R_GPUXid, 0, "XID 13");
    free_run(run);
}

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
    free_run(run);
}

Test(gpu_checks, nvlink_down_against_the_catalog)
{
    struct pf_run *run = run_with("nvlink_down", "p5e.48xlarge",
                                  "gpu.2.nvlink_active 16\n", NULL, true);
    expect(run, "nvlink", PF_FAIL, PF_R_NVLinkDown, 1,
           GPU2 ": 16 of 18 NVLink links active, down: 16,17");
    free_run(run);
}

Test(gpu_checks, an_nvlink_gap_is_not_a_link_down)
{
    /* link 5 not supported: 17 links, none of them named down */
    struct pf_run *run = run_with("nvlink_gap", "x9.unknown",
                                  "gpu.2.nvlink_gap 5\n", NULL, true);
    cr_assert_eq(run->node.gpuh.gpus[2].nvlinks, 17);
    cr_assert_eq(run->node.gpuh.gpus[2].nvlinks_active, 17);
    cr_assert_eq(check(run, "nvlink")->status, PF_PASS);
    free_run(run);
}

Test(gpu_checks, nvlink_not_judged_without_a_catalog_count)
{
    struct pf_run *run = run_with("nvlink_unknown", "x9.unknown",
                                  "gpu.2.nvlink_active 16\n", NULL, true);
    cr_assert_eq(check(run, "nvlink")->status, PF_PASS);
    cr_assert_eq(run->verdict.exit_code, 0);
    free_run(run);
}

Test(gpu_checks, nvlink_recovery_during_the_all_reduce_fails)
{
    struct pf_run *run = run_with("nvlink_rec", "p5e.48xlarge",
                                  "gpu.2.nvlink_recovery_step 1\n", NULL, true);
    expect(run, "nvlink_errors", PF_FAIL, PF_R_NVLinkErrors, 1,
           GPU2 ": +1 recovery");
    free_run(run);
}

Test(gpu_checks, nvlink_crc_during_the_all_reduce_warns)
{
    struct pf_run *run = run_with("nvlink_crc", "p5e.48xlarge",
                                  "gpu.2.nvlink_crc_step 3\n", NULL, true);
    expect(run, "nvlink_errors", PF_WARN, PF_R_NVLinkErrors, 0,
           "+3 CRC during the all_reduce");
    free_run(run);
}

Test(gpu_checks, pcie_trained_at_x8_fails)
{
    struct pf_run *run = run_with("pcie_x8", "p5e.48xlarge",
                                  "gpu.2.pcie_width 8\n", NULL, true);
    expect(run, "pcie", PF_FAIL, PF_R_PCIeDowntrained, 1,
           GPU2 ": x8, the type's slot is x16");
    free_run(run);
}

Test(gpu_checks, pcie_gen4_at_most_in_a_gen5_slot_warns)
{
    /* a warning until a real p5 shows what NVML's maximum reads there */
    struct pf_run *run = run_with("pcie_gen4", "p5e.48xlarge",
                                  "gpu.2.pcie_max_gen 4\ngpu.2.pcie_gen 4\n",
                                  NULL, true);
    expect(run, "pcie", PF_WARN, PF_R_PCIeDowntrained, 0, "Gen4 at most");
    free_run(run);
}

Test(gpu_checks, pcie_idling_at_gen1_is_not_a_fault)
{
    /* a link idles at a low generation: only a read under load counts */
    struct pf_run *run = run_with("pcie_idle", "p5e.48xlarge",
                                  "gpu.*.pcie_gen 1\n", NULL, false);
    cr_assert_eq(check(run, "pcie")->status, PF_PASS, "%s",
                 check(run, "pcie")->message);
    cr_assert_eq(run->verdict.exit_code, 0);
    free_run(run);
}

Test(gpu_checks, pcie_low_generation_under_load_warns)
{
    struct pf_run *run = run_with("pcie_load", "p5e.48xlarge",
                                  "gpu.2.pcie_gen_after 3\n", NULL, true);
    expect(run, "pcie", PF_WARN, PF_R_PCIeDowntrained, 0,
           GPU2 ": Gen3 of Gen5 right after the all_reduce");
    free_run(run);
}

Test(gpu_checks, pcie_replays_rising_warn)
{
    struct pf_run *run = run_with("pcie_replay", "p5e.48xlarge",
                                  "gpu.2.pcie_replay_step 5\n", NULL, true);
    expect(run, "pcie_replays", PF_WARN, PF_R_PCIeReplaysRising, 0, GPU2);
    free_run(run);
}

Test(gpu_checks, hw_slowdown_in_both_reads_fails)
{
    struct pf_run *run = run_with("throttle", "p5e.48xlarge",
                                  "gpu.2.clocks 0x8\n", NULL, true);
    expect(run, "gpu_clocks", PF_FAIL, PF_R_GPUThrottled, 1,
           GPU2 ": HW slowdown at the probe and during the all_reduce");
    free_run(run);
}

Test(gpu_checks, power_brake_in_one_read_warns)
{
    struct pf_run *run = run_with("brake_once", "p5e.48xlarge",
                                  "gpu.2.clocks 0x80\ngpu.2.clocks_after 0x1\n",
                                  NULL, true);
    expect(run, "gpu_clocks", PF_WARN, PF_R_GPUThrottled, 0, "power brake");
    free_run(run);
}

Test(gpu_checks, software_clock_reasons_are_not_faults)
{
    /* idle, SW power cap, SW thermal: what a healthy GPU shows */
    struct pf_run *run = run_with("sw_clocks", "p5e.48xlarge",
                                  "gpu.*.clocks 0x25\n", NULL, true);
    cr_assert_eq(check(run, "gpu_clocks")->status, PF_PASS);
    free_run(run);
}

Test(gpu_checks, driver_below_an_estimated_minimum_warns)
{
    struct pf_run *run = run_with("driver_old", "p5e.48xlarge",
                                  "driver 535.104.05\n", NULL, true);
    expect(run, "gpu_driver", PF_WARN, PF_R_GPUDriverTooOld, 0,
           "535.104.05 is older than 550");
    free_run(run);
}

Test(gpu_checks, driver_below_a_verified_minimum_fails)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_instance it;
    char err[PF_ERRLEN];

    /* the same reads against a catalog entry whose minimum is verified */
    cr_assert_eq(pf_catalog_load(&run->catalog, "", err), PF_OK, "%s", err);
    it = *pf_catalog_find(&run->catalog, "p5e.48xlarge");
    pf_catalog_free(&run->catalog);
    free(run);
    run = run_with("driver_old_v", "p5e.48xlarge", "driver 545.23.08\n", NULL,
                   true);
    it.gpu.driver_verified = true;
    run->instance = &it;
    run->verdict.n = 0;
    pf_verdict_gpu(run);
    pf_verdict_settle(&run->verdict);
    expect(run, "gpu_driver", PF_FAIL, PF_R_GPUDriverTooOld, 1, "545.23.08");
    free_run(run);
}

Test(gpu_checks, driver_at_the_minimum_passes)
{
    struct pf_run *run = run_with("driver_ok", "p5e.48xlarge", "driver 550\n",
                                  NULL, true);
    cr_assert_eq(check(run, "gpu_driver")->status, PF_PASS);
    free_run(run);
}

Test(gpu_checks, mig_on_where_the_type_expects_it_off_fails)
{
    struct pf_run *run = run_with("mig", "p5e.48xlarge", "gpu.2.mig 1\n",
                                  NULL, true);
    expect(run, "gpu_mig", PF_FAIL, PF_R_GPUMIGEnabled, 1, GPU2);
    free_run(run);
}

Test(gpu_checks, persistence_off_warns)
{
    struct pf_run *run = run_with("persist", "p5e.48xlarge",
                                  "gpu.*.persistence 0\n", NULL, true);
    expect(run, "gpu_persistence", PF_WARN, PF_R_GPUPersistenceModeOff, 0,
           "and 5 more GPUs");
    free_run(run);
}

Test(gpu_checks, nvml_missing_is_a_warning_naming_what_was_not_checked)
{
    struct pf_run *run;

    setenv("EFA_PREFLIGHT_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    run = run_with("missing", "p5e.48xlarge", "", NULL, true);
    expect(run, "gpu_nvml", PF_WARN, PF_R_GPUHealthUnchecked, 0,
           "not checked: XIDs during the run, ECC, row remapping, NVLink");
    cr_assert(strstr(check(run, "gpu_nvml")->message,
                     "/nonexistent/libnvidia-ml.so.1"));
    cr_assert_eq(run->verdict.n, 1, "nothing else is judged");
    free_run(run);
}

Test(gpu_checks, nvml_missing_on_a_cpu_node_adds_no_check)
{
    struct pf_run *run;

    setenv("EFA_PREFLIGHT_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    run = run_with("cpu", "c5n.18xlarge", "", NULL, false);
    cr_assert_eq(run->verdict.n, 0);
    free_run(run);
}

Test(gpu_checks, nvml_init_failure_is_a_warning)
{
    struct pf_run *run = run_with("init", "p5e.48xlarge", "init 9\n", NULL,
                                  true);
    expect(run, "gpu_nvml", PF_WARN, PF_R_GPUHealthUnchecked, 0,
           "Driver Not Loaded");
    free_run(run);
}

Test(gpu_checks, fields_not_supported_are_skipped_per_field)
{
    struct pf_run *run = run_with(
        "notsup", "p5e.48xlarge",
        "gpu.*.ecc notsupported\ngpu.*.remap notsupported\n"
        "gpu.*.retired_pending notsupported\ngpu.*.nvlink_errors notsupported\n"
        "gpu.*.clocks notsupported\ngpu.*.events notsupported\n",
        NULL, true);

    cr_assert_eq(check(run, "gpu_ecc")->status, PF_SKIP);
    cr_assert_eq(check(run, "gpu_row_remap")->status, PF_SKIP);
    cr_assert_eq(check(run, "nvlink_errors")->status, PF_SKIP);
    cr_assert_eq(check(run, "gpu_clocks")->status, PF_SKIP);
    cr_assert_eq(check(run, "nvlink")->status, PF_PASS);
    cr_assert_eq(check(run, "pcie")->status, PF_PASS);
    cr_assert(strstr(check(run, "gpu_nvml")->message, "ecc_volatile"));
    cr_assert_eq(run->node.gpuh.gpus[0].f[PF_GF_ECC_VOLATILE],
                 PF_GFS_UNSUPPORTED);
    cr_assert_eq(run->verdict.exit_code, 0);
    free_run(run);
}

Test(gpu_checks, one_gpu_not_supporting_a_field_leaves_the_others_judged)
{
    struct pf_run *run = run_with("notsup_one", "p5e.48xlarge",
                                  "gpu.3.ecc notsupported\n"
                                  "gpu.2.ecc_volatile 1\n", NULL, true);
    expect(run, "gpu_ecc", PF_FAIL, PF_R_GPUUncorrectableECC, 1, GPU2);
    free_run(run);
}

Test(gpu_checks, a_type_without_nvlink_skips_the_link_check)
{
    struct pf_run *run = run_with("g5", "g5.48xlarge",
                                  "gpu.*.nvlinks 0\ngpu.*.pcie_gen 4\n"
                                  "gpu.*.pcie_max_gen 4\n", NULL, true);
    cr_assert_eq(check(run, "nvlink")->status, PF_SKIP);
    cr_assert_eq(run->verdict.exit_code, 0);
    free_run(run);
}

Test(gpu_checks, cuda_driver_below_the_types_minimum_warns)
{
    /* p5e: min_cuda 11.8, an estimate: a warning, never a failure */
    struct pf_run *run = run_with("cuda_old", "p5e.48xlarge", "cuda 11020\n",
                                  NULL, true);
    expect(run, "gpu_cuda_driver", PF_WARN, PF_R_GPUDriverTooOld, 0,
           "CUDA driver 11.2 is older than 11.8");
    free_run(run);
}

Test(gpu_checks, cuda_driver_at_or_above_the_minimum_passes)
{
    struct pf_run *run = run_with("cuda_ok", "p5e.48xlarge", "cuda 13000\n",
                                  NULL, true);
    cr_assert_eq(check(run, "gpu_cuda_driver")->status, PF_PASS);
    cr_assert(strstr(check(run, "gpu_cuda_driver")->message,
                     "CUDA driver 13.0 (minimum 11.8)"));
    free_run(run);
}
