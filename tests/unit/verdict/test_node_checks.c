/* Node verdict: every fixture tree gives its exact status and headline
 * reason; the semantic corners (unknown type, no type, tcp provider,
 * overrides, limits) are checked on facts filled in directly.
 *
 * Fixture runs use the fake libfabric (domains = devices found) and a
 * healthy memlock / GPU set, so each broken fixture fails for its own
 * reason only. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/catalog.h"
#include "config/config.h"
#include "probe/probe.h"
#include "verdict/verdict.h"

#include "run_fixture.h"
#include "unit_files.h"

static void use_fixture(struct pf_config *cfg, const char *name)
{
    char root[PATH_MAX];

    pf_test_sysfs_fixture(root, sizeof(root), name);
    snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "%s", root);
    snprintf(cfg->dev_root, sizeof(cfg->dev_root), "%s", root);
}

static struct pf_run *new_run(void)
{
    struct pf_run *run = pf_test_run_new(NULL);

    run->cfg.no_imds = true;
    return run;
}

/* The limits and GPUs a healthy node of the run's type would show. */
static void healthy_host(struct pf_run *run)
{
    run->node.memlock_soft = run->node.memlock_hard = UINT64_MAX;
    if (run->instance && !strcmp(run->instance->accel_kind, "gpu")) {
        run->node.cuda_loaded = true;
        run->node.gpu_count = run->instance->accel_count;
        snprintf(run->node.gpus[0].model, sizeof(run->node.gpus[0].model),
                 "NVIDIA %s", run->instance->accel_model);
        /* NCCL and aws-ofi-nccl as an EFA training image has them, whatever
         * this machine's library path holds. */
        run->node.nccl_loaded = true;
        run->node.nccl_version = 22809;
        snprintf(run->node.net_plugin_name, sizeof(run->node.net_plugin_name),
                 "libnccl-net.so");
        snprintf(run->node.net_plugin_path, sizeof(run->node.net_plugin_path),
                 "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
        run->node.net_plugin_api = 10;
        run->node.net_plugin_error[0] = '\0';
    }
}

/* Probe a fixture with the fake libfabric answering `domains` domains. */
static struct pf_run *probe_fixture(const char *fx, int domains)
{
    struct pf_run *run = new_run();
    char path[PATH_MAX], err[PF_ERRLEN], num[16];

    use_fixture(&run->cfg, fx);
    pf_test_helper_path(path, sizeof(path), "libfabric-fake.so.1");
    snprintf(run->cfg.libfabric_path, sizeof(run->cfg.libfabric_path), "%s", path);
    snprintf(num, sizeof(num), "%d", domains);
    setenv("PF_FAKE_FI_EFA_DOMAINS", num, 1);
    setenv("PF_FAKE_FI_VERSION", "1.22", 1);
    run->cfg.efa_recount_ms = 0;
    cr_assert_eq(pf_probe(run, err), PF_OK, "%s", err);
    healthy_host(run);
    return run;
}

static void judge(struct pf_run *run)
{
    run->verdict.n = 0;
    pf_verdict_node(run);
    pf_verdict_finish(run);
}

static const struct pf_check *check(const struct pf_run *run, const char *name)
{
    const struct pf_check *c = pf_test_check(run, name);

    cr_assert_not_null(c, "no check named %s", name);
    return c;
}

/* First failing reason, else first warning: what the summary leads with. */
static const char *headline(const struct pf_run *run)
{
    for (int i = 0; i < run->verdict.n; i++)
        if (run->verdict.checks[i].status == PF_FAIL)
            return pf_reason_name(run->verdict.checks[i].reason);
    for (int i = 0; i < run->verdict.n; i++)
        if (run->verdict.checks[i].status == PF_WARN)
            return pf_reason_name(run->verdict.checks[i].reason);
    return "";
}

/* Each fixture as probed, with the fake libfabric answering `domains`
 * domains: its status, exit code and headline reason, and every check
 * under the EFADevicesReady condition. */
Test(node_verdict, fixtures_give_their_status_and_headline)
{
    static const struct {
        const char *name, *fx;
        int domains;
        enum pf_status status;
        int exit_code;
        const char *reason;
    } cases[] = {
        { "p4d passes", "p4d.24xlarge", 4, PF_PASS, 0, "" },
        { "p5 passes", "p5.48xlarge", 32, PF_PASS, 0, "" },
        { "p5en passes", "p5en.48xlarge", 16, PF_PASS, 0, "" },
        { "g5 passes", "g5.48xlarge", 1, PF_PASS, 0, "" },
        { "p5 without uverbs fails device files", "p5-nouverbs", 32, PF_FAIL,
          1, "EFADeviceFilesMissing" },
        { "p5en missing a device fails", "p5en-15", 15, PF_FAIL, 1,
          "EFADeviceCountMismatch" },
        { "no EFA provider fails", "p5.48xlarge", 0, PF_FAIL, 1,
          "EFAProviderUnavailable" },
    };

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct pf_run *run = probe_fixture(cases[c].fx, cases[c].domains);

        judge(run);
        cr_assert_eq(run->verdict.overall, cases[c].status,
                     "case %s: status %s", cases[c].name,
                     pf_status_name(run->verdict.overall));
        cr_assert_eq(run->verdict.exit_code, cases[c].exit_code, "case %s",
                     cases[c].name);
        cr_assert_str_eq(headline(run), cases[c].reason, "case %s",
                         cases[c].name);
        for (int i = 0; i < run->verdict.n; i++)
            cr_assert_str_eq(run->verdict.checks[i].condition,
                             "EFADevicesReady", "case %s", cases[c].name);
        pf_test_run_free(run);
    }
}

Test(node_verdict, p6_b200_passes_ignoring_ibp_devices)
{
    struct pf_run *run = probe_fixture("p6-b200.48xlarge", 8);

    judge(run);
    cr_assert_eq(run->verdict.overall, PF_PASS);
    cr_assert_str_eq(check(run, "efa_devices")->message,
                     "8 of 8 EFA devices; 2 non-EFA RDMA devices ignored");
    pf_test_run_free(run);
}

Test(node_verdict, p5_with_31_devices_fails_count)
{
    struct pf_run *run = probe_fixture("p5-31", 31);

    judge(run);
    cr_assert_eq(run->verdict.overall, PF_FAIL);
    cr_assert_eq(run->verdict.exit_code, 1);
    cr_assert_str_eq(headline(run), "EFADeviceCountMismatch");
    cr_assert_str_eq(check(run, "efa_devices")->message,
                     "found 31 of 32 EFA devices (PCI 1d0f:efa0-efa3) expected "
                     "for p5.48xlarge");
    cr_assert_neq(check(run, "efa_devices")->remedy[0], '\0');
    pf_test_run_free(run);
}

Test(node_verdict, p5_module_not_loaded_fails_module_first)
{
    struct pf_run *run = probe_fixture("p5-nomodule", 0);

    judge(run);
    cr_assert_eq(run->verdict.exit_code, 1);
    cr_assert_str_eq(headline(run), "EFAModuleNotLoaded");
    cr_assert_str_eq(check(run, "efa_module")->message,
                     "efa kernel module not loaded (/sys/module/efa absent); "
                     "32 EFA PCI functions present");
    cr_assert_eq(check(run, "efa_devices")->status, PF_FAIL);
    pf_test_run_free(run);
}

Test(node_verdict, p5_port_down_fails)
{
    struct pf_run *run = probe_fixture("p5-portdown", 32);

    judge(run);
    cr_assert_str_eq(headline(run), "EFAPortDown");
    cr_assert_str_eq(check(run, "efa_ports")->message,
                     "1 of 32 EFA ports not ACTIVE: rdmap16s27 (1: DOWN)");
    pf_test_run_free(run);
}

Test(node_verdict, expect_efa_overrides_catalog)
{
    struct pf_run *run = probe_fixture("p5-31", 31);

    run->cfg.expect_efa = 31;
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_PASS);
    cr_assert_eq(check(run, "efa_devices")->reason, PF_R_EFADeviceCountMatches);
    pf_test_run_free(run);
}

Test(node_verdict, more_devices_than_catalog_warns)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    run->cfg.expect_efa = 16;
    judge(run);
    cr_assert_eq(check(run, "efa_devices")->status, PF_WARN);
    cr_assert_eq(run->verdict.exit_code, 0);
    pf_test_run_free(run);
}

Test(node_verdict, plain_machine_is_not_an_efa_instance)
{
    struct pf_run *run = probe_fixture("plain", 0);

    judge(run);
    cr_assert_eq(run->verdict.exit_code, 1);
    cr_assert_str_eq(headline(run), "NotAnEFAInstance");
    cr_assert(strstr(check(run, "instance_type")->message,
                     "instance type unknown"), "%s",
              check(run, "instance_type")->message);
    cr_assert_eq(check(run, "efa_devices")->status, PF_SKIP);
    cr_assert_eq(check(run, "memlock")->status, PF_SKIP);
    pf_test_run_free(run);
}

Test(node_verdict, named_type_without_catalog_entry_or_efa_fails)
{
    struct pf_run *run = probe_fixture("plain", 0);

    snprintf(run->node.instance_type, sizeof(run->node.instance_type), "m5.large");
    judge(run);
    cr_assert_str_eq(headline(run), "NotAnEFAInstance");
    cr_assert_str_eq(check(run, "instance_type")->message,
                     "'m5.large' (from none) has no catalog entry and no EFA "
                     "device was found");
    pf_test_run_free(run);
}

Test(node_verdict, unknown_type_with_efa_warns_and_checks_what_is_found)
{
    struct pf_run *run = probe_fixture("p4d.24xlarge", 4);

    snprintf(run->node.instance_type, sizeof(run->node.instance_type), "p9.huge");
    run->instance = NULL;
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_WARN);
    cr_assert_eq(run->verdict.exit_code, 0);
    cr_assert_str_eq(headline(run), "UnknownInstanceType");
    cr_assert_eq(check(run, "efa_devices")->status, PF_PASS);
    cr_assert_eq(check(run, "efa_provider")->status, PF_PASS);
    cr_assert_eq(check(run, "gpu_count")->status, PF_SKIP);
    pf_test_run_free(run);
}

Test(node_verdict, expect_efa_zero_on_unknown_machine_expects_nothing)
{
    struct pf_run *run = probe_fixture("plain", 0);

    run->cfg.expect_efa = 0;
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_PASS);
    cr_assert_eq(check(run, "instance_type")->status, PF_SKIP);
    cr_assert_eq(check(run, "efa_devices")->status, PF_SKIP);
    cr_assert_str_eq(check(run, "efa_devices")->message, "no EFA device expected");
    pf_test_run_free(run);
}

Test(node_verdict, tcp_provider_skips_every_efa_check)
{
    struct pf_run *run = probe_fixture("plain", 0);

    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider), "tcp");
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_PASS);
    cr_assert_eq(run->verdict.exit_code, 0);
    for (int i = 0; i < run->verdict.n; i++) {
        const struct pf_check *c = &run->verdict.checks[i];
        if (!strcmp(c->name, "gpu_count"))
            continue;
        cr_assert_eq(c->status, PF_SKIP, "%s", c->name);
        cr_assert(strstr(c->message, "provider tcp requested: EFA not required"),
                  "%s: %s", c->name, c->message);
    }
    pf_test_run_free(run);
}

Test(node_verdict, tcp_provider_still_checks_gpus_of_a_known_type)
{
    struct pf_run *run = probe_fixture("p5-31", 31);

    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider), "tcp");
    run->node.gpu_count = 7;
    judge(run);
    cr_assert_eq(check(run, "efa_devices")->status, PF_SKIP);
    cr_assert_str_eq(headline(run), "GPUCountMismatch");
    pf_test_run_free(run);
}

Test(node_verdict, memlock_limits)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    run->node.memlock_soft = 64 * 1024;
    judge(run);
    cr_assert_str_eq(headline(run), "MemlockTooLow");
    cr_assert_str_eq(check(run, "memlock")->message,
                     "RLIMIT_MEMLOCK soft limit is 64 KiB; EFA needs unlimited");

    run->cfg.min_memlock_mib = 0;
    judge(run);
    cr_assert_eq(check(run, "memlock")->status, PF_PASS);

    run->cfg.min_memlock_mib = 1;
    judge(run);
    cr_assert_eq(check(run, "memlock")->status, PF_FAIL);
    pf_test_run_free(run);
}

Test(node_verdict, no_free_hugepages_warns)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    run->node.hugepages_free = 0;
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_WARN);
    cr_assert_eq(run->verdict.exit_code, 0);
    cr_assert_str_eq(headline(run), "HugePagesUnavailable");
    pf_test_run_free(run);
}

Test(node_verdict, old_libfabric_warns_on_gpu_types_only)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    snprintf(run->node.libfabric_version, sizeof(run->node.libfabric_version), "1.17");
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_WARN);
    cr_assert_str_eq(headline(run), "LibfabricTooOld");

    /* trn1: Neuron, no aws-ofi-nccl */
    run->instance = pf_catalog_find(&run->catalog, "trn1.32xlarge");
    cr_assert_not_null(run->instance);
    run->cfg.expect_efa = 32;
    judge(run);
    cr_assert_eq(check(run, "libfabric_version")->status, PF_SKIP);
    pf_test_run_free(run);
}

Test(node_verdict, net_plugin_found_missing_or_not_applicable)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    judge(run);
    cr_assert_eq(check(run, "nccl_net_plugin")->status, PF_PASS);
    cr_assert_str_eq(check(run, "nccl_net_plugin")->message,
                     "libnccl-net.so -> /opt/amazon/ofi-nccl/lib/"
                     "libnccl-net-ofi.so (ncclNetPlugin_v10)");

    /* NCCL loads, no plugin: a warning naming what dlopen said, and the
     * libfabric version is then not judged (nothing would use it). */
    run->node.net_plugin_path[0] = '\0';
    run->node.net_plugin_api = 0;
    snprintf(run->node.net_plugin_error, sizeof(run->node.net_plugin_error),
             "libnccl-net.so: cannot open shared object file");
    snprintf(run->node.libfabric_version, sizeof(run->node.libfabric_version),
             "1.17");
    judge(run);
    cr_assert_eq(run->verdict.overall, PF_WARN);
    cr_assert_eq(run->verdict.exit_code, 0);
    cr_assert_str_eq(headline(run), "NetPluginNotFound");
    cr_assert_str_eq(check(run, "nccl_net_plugin")->message,
                     "NCCL would load no net plugin, so traffic between nodes "
                     "would go over sockets: libnccl-net.so: cannot open "
                     "shared object file");
    cr_assert_eq(check(run, "libfabric_version")->status, PF_SKIP);

    /* A library that loads but is no plugin is not found either. */
    snprintf(run->node.net_plugin_path, sizeof(run->node.net_plugin_path),
             "/usr/lib/libnccl-net.so");
    judge(run);
    cr_assert_eq(check(run, "nccl_net_plugin")->reason,
                 PF_R_NetPluginNotFound);

    /* No NCCL in this image: nothing to say about the job's plugin. */
    run->node.nccl_loaded = false;
    judge(run);
    cr_assert_eq(check(run, "nccl_net_plugin")->status, PF_SKIP);
    cr_assert_str_eq(headline(run), "LibfabricTooOld");

    /* CPU type: not used. */
    run->node.nccl_loaded = true;
    run->instance = pf_catalog_find(&run->catalog, "c5n.18xlarge");
    cr_assert_not_null(run->instance);
    run->cfg.expect_efa = 32;
    judge(run);
    cr_assert_eq(check(run, "nccl_net_plugin")->status, PF_SKIP);
    cr_assert_eq(check(run, "nccl_net_plugin")->reason, PF_R_NotApplicable);
    pf_test_run_free(run);
}

Test(node_verdict, gpu_count_mismatch_names_cuda_error)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    run->node.gpu_count = 0;
    run->node.cuda_loaded = false;
    snprintf(run->node.cuda_error, sizeof(run->node.cuda_error),
             "libcudart.so: not found");
    judge(run);
    cr_assert_str_eq(headline(run), "GPUCountMismatch");
    cr_assert_str_eq(check(run, "gpu_count")->message,
                     "found 0 of 8 GPUs expected for p5.48xlarge "
                     "(libcudart.so: not found)");

    run->cfg.expect_gpus = 0;
    judge(run);
    cr_assert_eq(check(run, "gpu_count")->status, PF_PASS);
    pf_test_run_free(run);
}

Test(node_verdict, gdr_missing_on_gdr_type_warns)
{
    struct pf_run *run = probe_fixture("p5.48xlarge", 32);

    run->node.gdr_supported = false;
    judge(run);
    cr_assert_str_eq(headline(run), "GDRUnsupported");
    cr_assert_eq(run->verdict.exit_code, 0);
    pf_test_run_free(run);
}
