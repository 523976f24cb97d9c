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
        pf_test_nccl_image(&run->node, "libnccl-net.so");
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

/* ------------------------------------------------ one judge per case */

#define ANY (-1)                      /* a status or exit code not held */

/* What one check must show: its status (ANY), reason (PF_R_None: any),
 * message exactly or words in it (NULL: any), a remedy. */
struct check_want {
    const char *name;
    int status;
    enum pf_reason reason;
    const char *message, *words;
    bool remedy;
};

/* A fixture probed with the fake libfabric answering domains, changed by
 * change (NULL: as probed), judged once: its status (ANY), exit code
 * (ANY), headline (NULL: any) and up to three of its checks. */
struct node_case {
    const char *fx;
    int domains;
    void (*change)(struct pf_run *run);
    int overall, exit_code;
    const char *headline;
    struct check_want checks[3];
};

static void expect_31(struct pf_run *run) { run->cfg.expect_efa = 31; }
static void expect_16(struct pf_run *run) { run->cfg.expect_efa = 16; }
static void expect_none(struct pf_run *run) { run->cfg.expect_efa = 0; }
static void no_hugepages(struct pf_run *run) { run->node.hugepages_free = 0; }
static void no_gdr(struct pf_run *run) { run->node.gdr_supported = false; }

static void named_m5(struct pf_run *run)
{
    snprintf(run->node.instance_type, sizeof(run->node.instance_type),
             "m5.large");
}

static void type_unknown(struct pf_run *run)
{
    snprintf(run->node.instance_type, sizeof(run->node.instance_type),
             "p9.huge");
    run->instance = NULL;
}

static void tcp_7_gpus(struct pf_run *run)
{
    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider),
             "tcp");
    run->node.gpu_count = 7;
}

static void judged_as(const struct node_case *k)
{
    struct pf_run *run = probe_fixture(k->fx, k->domains);

    if (k->change)
        k->change(run);
    judge(run);
    if (k->overall != ANY)
        cr_assert_eq(run->verdict.overall, k->overall, "%s: status %s",
                     k->fx, pf_status_name(run->verdict.overall));
    if (k->exit_code != ANY)
        cr_assert_eq(run->verdict.exit_code, k->exit_code, "%s: exit %d",
                     k->fx, run->verdict.exit_code);
    if (k->headline)
        cr_assert_str_eq(headline(run), k->headline, "%s", k->fx);
    for (int i = 0; i < 3 && k->checks[i].name; i++) {
        const struct check_want *w = &k->checks[i];
        const struct pf_check *c = check(run, w->name);

        if (w->status != ANY)
            cr_assert_eq(c->status, w->status, "%s: %s %s (%s)", k->fx,
                         w->name, pf_status_name(c->status), c->message);
        if (w->reason != PF_R_None)
            cr_assert_eq(c->reason, w->reason, "%s: %s %s", k->fx, w->name,
                         pf_reason_name(c->reason));
        if (w->message)
            cr_assert_str_eq(c->message, w->message, "%s: %s", k->fx,
                             w->name);
        if (w->words)
            cr_assert(strstr(c->message, w->words), "%s: %s: %s", k->fx,
                      w->name, c->message);
        if (w->remedy)
            cr_assert_neq(c->remedy[0], '\0', "%s: %s", k->fx, w->name);
    }
    pf_test_run_free(run);
}

/* A test that is its case and nothing more. */
#define NODE_CASE(test, ...)                                                   \
    Test(node_verdict, test)                                                   \
    {                                                                          \
        static const struct node_case k = { __VA_ARGS__ };                     \
        judged_as(&k);                                                         \
    }

NODE_CASE(p6_b200_passes_ignoring_ibp_devices,
    "p6-b200.48xlarge", 8, NULL, PF_PASS, ANY, NULL,
    { { "efa_devices", ANY, PF_R_None,
        .message = "8 of 8 EFA devices; 2 non-EFA RDMA devices ignored" } })

NODE_CASE(p5_with_31_devices_fails_count,
    "p5-31", 31, NULL, PF_FAIL, 1, "EFADeviceCountMismatch",
    { { "efa_devices", ANY, PF_R_None,
        .message = "found 31 of 32 EFA devices (PCI 1d0f:efa0-efa3) "
                   "expected for p5.48xlarge",
        .remedy = true } })

NODE_CASE(p5_module_not_loaded_fails_module_first,
    "p5-nomodule", 0, NULL, ANY, 1, "EFAModuleNotLoaded",
    { { "efa_module", ANY, PF_R_None,
        .message = "efa kernel module not loaded (/sys/module/efa absent); "
                   "32 EFA PCI functions present" },
      { "efa_devices", PF_FAIL, PF_R_None, .message = NULL } })

NODE_CASE(p5_port_down_fails,
    "p5-portdown", 32, NULL, ANY, ANY, "EFAPortDown",
    { { "efa_ports", ANY, PF_R_None,
        .message = "1 of 32 EFA ports not ACTIVE: rdmap16s27 (1: DOWN)" } })

NODE_CASE(expect_efa_overrides_catalog,
    "p5-31", 31, expect_31, PF_PASS, ANY, NULL,
    { { "efa_devices", ANY, PF_R_EFADeviceCountMatches, .message = NULL } })

NODE_CASE(more_devices_than_catalog_warns,
    "p5.48xlarge", 32, expect_16, ANY, 0, NULL,
    { { "efa_devices", PF_WARN, PF_R_None, .message = NULL } })

NODE_CASE(plain_machine_is_not_an_efa_instance,
    "plain", 0, NULL, ANY, 1, "NotAnEFAInstance",
    { { "instance_type", ANY, PF_R_None, .words = "instance type unknown" },
      { "efa_devices", PF_SKIP, PF_R_None, .message = NULL },
      { "memlock", PF_SKIP, PF_R_None, .message = NULL } })

NODE_CASE(named_type_without_catalog_entry_or_efa_fails,
    "plain", 0, named_m5, ANY, ANY, "NotAnEFAInstance",
    { { "instance_type", ANY, PF_R_None,
        .message = "'m5.large' (from none) has no catalog entry and no EFA "
                   "device was found" } })

NODE_CASE(unknown_type_with_efa_warns_and_checks_what_is_found,
    "p4d.24xlarge", 4, type_unknown, PF_WARN, 0, "UnknownInstanceType",
    { { "efa_devices", PF_PASS, PF_R_None, .message = NULL },
      { "efa_provider", PF_PASS, PF_R_None, .message = NULL },
      { "gpu_count", PF_SKIP, PF_R_None, .message = NULL } })

NODE_CASE(expect_efa_zero_on_unknown_machine_expects_nothing,
    "plain", 0, expect_none, PF_PASS, ANY, NULL,
    { { "instance_type", PF_SKIP, PF_R_None, .message = NULL },
      { "efa_devices", PF_SKIP, PF_R_None,
        .message = "no EFA device expected" } })

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

NODE_CASE(tcp_provider_still_checks_gpus_of_a_known_type,
    "p5-31", 31, tcp_7_gpus, ANY, ANY, "GPUCountMismatch",
    { { "efa_devices", PF_SKIP, PF_R_None, .message = NULL } })

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

NODE_CASE(no_free_hugepages_warns,
    "p5.48xlarge", 32, no_hugepages, PF_WARN, 0, "HugePagesUnavailable",
    { { NULL, ANY, PF_R_None, .message = NULL } })

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

NODE_CASE(gdr_missing_on_gdr_type_warns,
    "p5.48xlarge", 32, no_gdr, ANY, 0, "GDRUnsupported",
    { { NULL, ANY, PF_R_None, .message = NULL } })
