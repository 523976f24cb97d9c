/* probe: facts read from the fixture trees of tests/fakes/make_sysfs.sh
 * (built next to the unit_tests binary), the fake libfabric, and IMDS
 * refusals. Run from the repository root, as `make unit` does. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/catalog.h"
#include "config/config.h"
#include "probe/probe.h"
#include "util/clock.h"

#include "unit_files.h"

/* Root of one fixture tree, built on first use. */
static const char *fixture(const char *name)
{
    static char path[PATH_MAX];

    pf_test_sysfs_fixture(path, sizeof(path), name);
    return path;
}

static const char *fake_fabric(void)
{
    static char path[PATH_MAX];

    pf_test_helper_path(path, sizeof(path), "libfabric-fake.so.1");
    return path;
}

static void cfg_for(struct pf_config *cfg, const char *fx)
{
    pf_config_defaults(cfg);
    cfg->no_imds = true;
    if (fx) {
        const char *root = fixture(fx);
        snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "%s", root);
        snprintf(cfg->dev_root, sizeof(cfg->dev_root), "%s", root);
    }
}

/* pf_probe_efa on a fixture's tree. */
static void efa_of(const char *fx, struct pf_node *node)
{
    struct pf_config cfg;

    cfg_for(&cfg, fx);
    memset(node, 0, sizeof(*node));
    pf_probe_efa(&cfg, node);
}

/* pf_probe_instance with the Node's label (NULL: none). */
static void instance_of(const struct pf_config *cfg, const char *label,
                        struct pf_node *node)
{
    memset(node, 0, sizeof(*node));
    pf_probe_instance(cfg, node, label);
}

/* IMDS asked, at a closed loopback port: it fails fast. */
static void imds_at(struct pf_config *cfg, int port)
{
    cfg->no_imds = false;
    snprintf(cfg->imds_endpoint, sizeof(cfg->imds_endpoint),
             "http://127.0.0.1:%d", port);
}

Test(probe, instance_type_flag_strips_ml_prefix)
{
    struct pf_config cfg;
    struct pf_node node;

    cfg_for(&cfg, "p5.48xlarge");
    snprintf(cfg.instance_type, sizeof(cfg.instance_type), "ml.p4d.24xlarge");
    instance_of(&cfg, NULL, &node);
    cr_assert_str_eq(node.instance_type, "p4d.24xlarge");
    cr_assert_str_eq(node.instance_source, "flag");
}

Test(probe, instance_type_from_dmi_product_name)
{
    struct pf_config cfg;
    struct pf_node node;

    cfg_for(&cfg, "p6-b200.48xlarge");
    instance_of(&cfg, NULL, &node);
    cr_assert_str_eq(node.instance_type, "p6-b200.48xlarge");
    cr_assert_str_eq(node.instance_source, "dmi");
}

Test(probe, normalize_accepts_types_and_rejects_product_names)
{
    static const struct { const char *in, *want; } cases[] = {
        { "p5.48xlarge\n", "p5.48xlarge" },
        { " ml.trn1.32xlarge ", "trn1.32xlarge" },
        { "Standard PC (Q35 + ICH9, 2009)", NULL },   /* NULL: rejected */
        { "HVM domU", NULL },
        { "p5.", NULL },
        { "", NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        bool ok = pf_instance_type_normalize(cases[i].in, out, sizeof(out));

        cr_assert_eq(ok, cases[i].want != NULL, "case '%s'", cases[i].in);
        if (cases[i].want)
            cr_assert_str_eq(out, cases[i].want, "case '%s'", cases[i].in);
    }
}

/* A non-AWS DMI vendor means IMDS is never asked, even with IMDS on: the
 * endpoint here is a closed loopback port, and the note says why. */
Test(probe, non_amazon_dmi_never_asks_imds)
{
    struct pf_config cfg;
    struct pf_node node;

    cfg_for(&cfg, "plain");
    imds_at(&cfg, 35001);
    instance_of(&cfg, NULL, &node);
    cr_assert_str_eq(node.instance_type, "");
    cr_assert_str_eq(node.instance_source, "none");
    cr_assert(strstr(node.instance_note, "DMI vendor 'QEMU' is not Amazon EC2"),
              "note: %s", node.instance_note);
}

/* Unreadable DMI: IMDS is asked, fails fast on a closed port, and the
 * failure is a fact in the note rather than an error. */
Test(probe, unreadable_dmi_asks_imds_and_records_failure)
{
    struct pf_config cfg;
    struct pf_node node;
    char dir[] = "/tmp/pf-nodmi-XXXXXX";
    int64_t t0;

    cr_assert_not_null(mkdtemp(dir));
    cfg_for(&cfg, NULL);
    snprintf(cfg.sysfs_root, sizeof(cfg.sysfs_root), "%s", dir);
    imds_at(&cfg, 35002);
    t0 = pf_now_ms();
    instance_of(&cfg, NULL, &node);
    rmdir(dir);
    cr_assert_lt(pf_now_ms() - t0, 1500);
    cr_assert_str_eq(node.instance_source, "none");
    cr_assert(strstr(node.instance_note, "IMDS PUT http://127.0.0.1:35002/latest/api/token"),
              "note: %s", node.instance_note);
}

Test(probe, p5_has_32_efa_devices_with_pci_port_and_uverbs)
{
    struct pf_node node;

    efa_of("p5.48xlarge", &node);
    cr_assert_eq(node.efa_count, 32);
    cr_assert_eq(node.non_efa_ib_count, 0);
    cr_assert_eq(node.efa_ports_active, 32);
    cr_assert_eq(node.efa_pci_count, 32);
    cr_assert_eq(node.uverbs_present, 32);
    cr_assert_eq(node.uverbs_openable, 32);
    cr_assert_str_eq(node.efa[0].name, "rdmap16s27");
    cr_assert_str_eq(node.efa[0].pci_addr, "0000:10:1b.0");
    cr_assert_str_eq(node.efa[0].port_state, "4: ACTIVE");
    cr_assert_str_eq(node.efa[0].uverbs, "uverbs0");
    cr_assert_eq(node.efa[0].vendor, 0x1d0f);
    cr_assert_eq(node.efa[0].device, 0xefa2);
    cr_assert(node.efa_module_loaded);
    cr_assert_str_eq(node.efa_module_version, "2.13.0g");
    cr_assert(node.gdr_supported);
}

Test(probe, p6_b200_counts_8_efa_and_ignores_2_ibp)
{
    struct pf_node node;

    efa_of("p6-b200.48xlarge", &node);
    cr_assert_eq(node.efa_count, 8);
    cr_assert_eq(node.non_efa_ib_count, 2);
    /* only the EFA devices' own uverbs files are checked */
    cr_assert_eq(node.uverbs_present, 8);
    for (int i = 0; i < node.efa_count; i++)
        cr_assert_eq(strncmp(node.efa[i].name, "rdmap", 5), 0, "%s",
                     node.efa[i].name);
}

Test(probe, counts_by_fixture)
{
    static const struct { const char *fx; int efa; bool gdr; } cases[] = {
        { "p4d.24xlarge", 4, true },   { "p5en.48xlarge", 16, true },
        { "g5.48xlarge", 1, false },   { "p5-31", 31, true },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_node node;

        efa_of(cases[i].fx, &node);
        cr_assert_eq(node.efa_count, cases[i].efa, "%s", cases[i].fx);
        cr_assert_eq(node.uverbs_openable, cases[i].efa, "%s", cases[i].fx);
        cr_assert_eq(node.gdr_supported, cases[i].gdr, "%s", cases[i].fx);
    }
}

Test(probe, module_not_loaded_leaves_pci_functions_without_devices)
{
    struct pf_node node;

    efa_of("p5-nomodule", &node);
    cr_assert_not(node.efa_module_loaded);
    cr_assert_eq(node.efa_count, 0);
    cr_assert_eq(node.efa_pci_count, 32);
}

Test(probe, missing_uverbs_files_are_counted_and_named)
{
    struct pf_node node;

    efa_of("p5-nouverbs", &node);
    cr_assert_eq(node.efa_count, 32);
    cr_assert_eq(node.uverbs_present, 0);
    cr_assert_eq(node.uverbs_openable, 0);
    cr_assert(strstr(node.uverbs_error, "/dev/infiniband/uverbs0: No such file"),
              "%s", node.uverbs_error);
}

Test(probe, hugepages_from_fixture_meminfo)
{
    struct pf_config cfg;
    struct pf_node node;

    cfg_for(&cfg, "p5.48xlarge");
    memset(&node, 0, sizeof(node));
    pf_probe_limits(&cfg, &node);
    cr_assert_eq(node.hugepages_total, 5128);
    cr_assert_eq(node.hugepages_free, 5128);
    cr_assert_eq(node.hugepage_kb, 2048);
    cr_assert_neq(node.memlock_soft, 0);
}

Test(probe, libfabric_missing_is_a_fact)
{
    struct pf_config cfg;
    struct pf_node node;

    cfg_for(&cfg, NULL);
    snprintf(cfg.libfabric_path, sizeof(cfg.libfabric_path),
             "/nonexistent/libfabric.so.1");
    memset(&node, 0, sizeof(node));
    pf_probe_fabric(&cfg, &node);
    cr_assert_not(node.libfabric_loaded);
    cr_assert_eq(node.fi_efa_domains, 0);
    cr_assert(strstr(node.libfabric_error, "tried /nonexistent/libfabric.so.1"),
              "%s", node.libfabric_error);
}

/* pf_probe_fabric against the fake libfabric answering `domains` EFA
 * domains, after a device scan that found efa_count devices. */
static void fake_fabric_of(const char *domains, int efa_count,
                           struct pf_node *node)
{
    struct pf_config cfg;

    cfg_for(&cfg, NULL);
    snprintf(cfg.libfabric_path, sizeof(cfg.libfabric_path), "%s", fake_fabric());
    setenv("PF_FAKE_FI_EFA_DOMAINS", domains, 1);
    memset(node, 0, sizeof(*node));
    node->efa_count = efa_count;
    pf_probe_fabric(&cfg, node);
}

Test(probe, fake_libfabric_domains_and_version)
{
    struct pf_node node;

    setenv("PF_FAKE_FI_VERSION", "1.22", 1);
    fake_fabric_of("16", 16, &node);
    cr_assert(node.libfabric_loaded);
    cr_assert_str_eq(node.libfabric_version, "1.22");
    cr_assert_eq(node.fi_efa_domains, 16);
    cr_assert_str_eq(node.libfabric_error, "");
}

Test(probe, fake_libfabric_without_efa_reports_enodata)
{
    struct pf_node node;

    fake_fabric_of("0", 4, &node);
    cr_assert(node.libfabric_loaded);
    cr_assert_eq(node.fi_efa_domains, 0);
    cr_assert(strstr(node.libfabric_error, "-FI_ENODATA"), "%s",
              node.libfabric_error);
}

/* No EFA device in sysfs: fi_getinfo is not asked (the fake would have
 * answered 8), the version still is. */
Test(probe, no_efa_device_skips_fi_getinfo)
{
    struct pf_node node;

    fake_fabric_of("8", 0, &node);
    cr_assert(node.libfabric_loaded);
    cr_assert_str_eq(node.libfabric_version, "1.22");
    cr_assert_eq(node.fi_efa_domains, 0);
    cr_assert_str_eq(node.libfabric_error,
                     "fi_getinfo(prov=efa) not called: no EFA device in sysfs");
}

static void run_for(struct pf_run *run, const char *fx)
{
    char err[PF_ERRLEN];

    memset(run, 0, sizeof(*run));
    cr_assert_eq(pf_catalog_load(&run->catalog, "", err), PF_OK, "%s", err);
    cfg_for(&run->cfg, fx);
    snprintf(run->cfg.libfabric_path, sizeof(run->cfg.libfabric_path), "%s",
             fake_fabric());
}

Test(probe, pf_probe_sets_instance_from_catalog)
{
    struct pf_run run;
    char err[PF_ERRLEN];

    run_for(&run, "p5en.48xlarge");
    cr_assert_eq(pf_probe(&run, err), PF_OK, "%s", err);
    cr_assert_not_null(run.instance);
    cr_assert_str_eq(run.instance->name, "p5en.48xlarge");
    cr_assert_eq(run.node.efa_count, 16);
    cr_assert_eq(run.node.efa_recounts, 0);
    pf_catalog_free(&run.catalog);
}

Test(probe, missing_sysfs_root_is_usage_error)
{
    struct pf_run run;
    char err[PF_ERRLEN] = "";

    run_for(&run, NULL);
    snprintf(run.cfg.sysfs_root, sizeof(run.cfg.sysfs_root), "/nonexistent/fx");
    cr_assert_eq(pf_probe(&run, err), PF_ERR_USAGE);
    cr_assert_str_eq(err, "sysfs_root '/nonexistent/fx': No such file or directory");
    pf_catalog_free(&run.catalog);
}

/* p5en (recount_efa) with a device missing: re-counted over the window,
 * then left for the verdict. p5 (no quirk) is not re-counted. */
Test(probe, p5en_recounts_within_window_then_gives_up)
{
    struct pf_run run;
    char err[PF_ERRLEN];
    int64_t t0;

    run_for(&run, "p5en-15");
    run.cfg.efa_recount_ms = 120;
    t0 = pf_now_ms();
    cr_assert_eq(pf_probe(&run, err), PF_OK, "%s", err);
    /* bounded by the window (ms rounding aside), at most 6 tries */
    cr_assert_geq(pf_now_ms() - t0, 100);
    cr_assert_lt(pf_now_ms() - t0, 2000);
    cr_assert_eq(run.node.efa_count, 15);
    cr_assert_geq(run.node.efa_recounts, 1);
    cr_assert_leq(run.node.efa_recounts, 6);
    pf_catalog_free(&run.catalog);

    run_for(&run, "p5-31");
    run.cfg.efa_recount_ms = 120;
    cr_assert_eq(pf_probe(&run, err), PF_OK, "%s", err);
    cr_assert_eq(run.node.efa_count, 31);
    cr_assert_eq(run.node.efa_recounts, 0);
    pf_catalog_free(&run.catalog);
}

/* The 16th device appears while the probe re-counts: it is found. */
Test(probe, p5en_recount_finds_late_device)
{
    struct pf_run run;
    char err[PF_ERRLEN], dir[] = "/tmp/pf-p5en-XXXXXX", cmd[PATH_MAX * 2];
    pid_t pid;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", fixture("p5en-15"), dir);
    cr_assert_eq(system(cmd), 0);
    run_for(&run, NULL);
    snprintf(run.cfg.sysfs_root, sizeof(run.cfg.sysfs_root), "%s", dir);
    snprintf(run.cfg.dev_root, sizeof(run.cfg.dev_root), "%s", dir);
    run.cfg.efa_recount_ms = 3000;

    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* bring up rdmap31s27 (PCI 0000:1f:1b.0) 300 ms in */
        snprintf(cmd, sizeof(cmd),
                 "sleep 0.3; cd '%s' && p=sys/devices/pci0000:00/0000:1f:1b.0 && "
                 "mkdir -p $p/infiniband_verbs/uverbs15 sys/class/infiniband/.n/ports/1 && "
                 "echo 0x1d0f > $p/vendor && echo 0xefa2 > $p/device && "
                 "echo '4: ACTIVE' > sys/class/infiniband/.n/ports/1/state && "
                 "ln -s ../../../devices/pci0000:00/0000:1f:1b.0 sys/class/infiniband/.n/device && "
                 ": > dev/infiniband/uverbs15 && "
                 "mv sys/class/infiniband/.n sys/class/infiniband/rdmap31s27",
                 dir);
        _exit(system(cmd) == 0 ? 0 : 1);
    }
    cr_assert_eq(pf_probe(&run, err), PF_OK, "%s", err);
    waitpid(pid, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(run.node.efa_count, 16);
    cr_assert_eq(run.node.uverbs_openable, 16);
    cr_assert_geq(run.node.efa_recounts, 1);
    cr_assert_lt(run.node.efa_recounts, 6);
    pf_catalog_free(&run.catalog);
}

/* NCCL's net plugin lookup: each test runs in its own process, so what one
 * dlopen leaves loaded does not leak into the next. */
static const char *helper(const char *name)
{
    static char path[PATH_MAX];

    pf_test_helper_path(path, sizeof(path), name);
    return path;
}

/* pf_probe_net_plugin with NCCL_NET_PLUGIN set to plugin (NULL: unset). */
static void plugin_of(const char *plugin, struct pf_node *node)
{
    if (plugin)
        setenv("NCCL_NET_PLUGIN", plugin, 1);
    else
        unsetenv("NCCL_NET_PLUGIN");
    memset(node, 0, sizeof(*node));
    pf_probe_net_plugin(node);
}

Test(probe, net_plugin_by_path_reports_its_api)
{
    struct pf_node node;
    const char *fake = helper("libnccl-net-fake.so");

    plugin_of(fake, &node);
    cr_assert_str_eq(node.net_plugin_name, fake);
    cr_assert_str_eq(node.net_plugin_path, fake);
    cr_assert_eq(node.net_plugin_api, 9);
    cr_assert_str_eq(node.net_plugin_error, "");
}

Test(probe, net_plugin_missing_names_both_tries)
{
    struct pf_node node;

    plugin_of("pfnosuch", &node);
    cr_assert_str_eq(node.net_plugin_path, "");
    cr_assert_eq(node.net_plugin_api, 0);
    cr_assert_str_eq(node.net_plugin_name, "pfnosuch");
    cr_assert(strstr(node.net_plugin_error, "pfnosuch: cannot open shared "
                                            "object file") &&
              strstr(node.net_plugin_error, "; libnccl-net-pfnosuch.so: "
                                            "cannot open shared object file"),
              "%s", node.net_plugin_error);

    /* Unset: only NCCL's default name, no second try. */
    plugin_of(NULL, &node);
    cr_assert_str_eq(node.net_plugin_name, "libnccl-net.so");
    cr_assert_eq(node.net_plugin_path[0], '\0');
    cr_assert(strstr(node.net_plugin_error, "libnccl-net.so: cannot open") ==
                  node.net_plugin_error && !strchr(node.net_plugin_error, ';'),
              "%s", node.net_plugin_error);
}

Test(probe, net_plugin_with_missing_dependency_says_which)
{
    struct pf_node node;

    plugin_of(helper("libnccl-net-broken.so"), &node);
    cr_assert_str_eq(node.net_plugin_path, "");
    cr_assert(strstr(node.net_plugin_error, "libpf-plugin-dep.so: cannot open "
                                            "shared object file"),
              "%s", node.net_plugin_error);
}

Test(probe, library_without_plugin_table_is_not_a_plugin)
{
    struct pf_node node;

    plugin_of(fake_fabric(), &node);
    cr_assert_str_eq(node.net_plugin_path, fake_fabric());
    cr_assert_eq(node.net_plugin_api, 0);
    cr_assert(strstr(node.net_plugin_error, "exports no ncclNetPlugin_v2..v11 "
                                            "table: not an NCCL net plugin"),
              "%s", node.net_plugin_error);
}

/* DMI, then the Node's label, then IMDS: a pod without DMI takes the
 * label (ml. stripped) and never asks IMDS; DMI still wins where it names
 * a type; a label that is no type falls through. */
Test(probe, instance_type_from_the_node_label_when_dmi_is_absent)
{
    struct pf_config cfg;
    struct pf_node node;
    char dir[] = "/tmp/pf-nodmi-XXXXXX";

    cr_assert_not_null(mkdtemp(dir));
    cfg_for(&cfg, NULL);
    snprintf(cfg.sysfs_root, sizeof(cfg.sysfs_root), "%s", dir);
    imds_at(&cfg, 35003);
    instance_of(&cfg, "ml.p5en.48xlarge", &node);
    cr_assert_str_eq(node.instance_type, "p5en.48xlarge");
    cr_assert_str_eq(node.instance_source, "label");
    instance_of(&cfg, "not a type", &node);
    cr_assert_str_eq(node.instance_source, "none");
    cr_assert(strstr(node.instance_note, "IMDS"), "note: %s", node.instance_note);
    rmdir(dir);

    cfg_for(&cfg, "p6-b200.48xlarge");
    instance_of(&cfg, "p5.48xlarge", &node);
    cr_assert_str_eq(node.instance_type, "p6-b200.48xlarge");
    cr_assert_str_eq(node.instance_source, "dmi");
}

/* names.c: a provider name is judged layer by layer; addresses must be
 * this host's. */
Test(probe, provider_names_known_to_libfabric)
{
    static const struct { const char *name; bool known; } cases[] = {
        { "efa", true },     { "TCP", true },   { "ofi_rxm", true },
        { "efa-direct", true },
        { "tpc", false },    { "ofi_", false }, { "efax", false },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_assert_eq(pf_provider_name_known(cases[i].name, strlen(cases[i].name)),
                     cases[i].known, "case %s", cases[i].name);
}

Test(probe, config_names_nothing_is_a_usage_error)
{
    struct pf_config cfg;
    char err[PF_ERRLEN];

    pf_config_defaults(&cfg);
    cfg.command = PF_CMD_LOCAL;
    snprintf(cfg.fabric_provider, sizeof(cfg.fabric_provider), "tcp;ofi_rxm");
    cr_assert_eq(pf_probe_config_names(&cfg, err), PF_OK, "%s", err);
    snprintf(cfg.bind_addr, sizeof(cfg.bind_addr), "127.0.0.1");
    cfg.fabric_addrs = strdup("localhost,127.0.0.9,::1");
    cr_assert_eq(pf_probe_config_names(&cfg, err), PF_OK, "%s", err);
    free(cfg.fabric_addrs);
    cfg.fabric_addrs = strdup("127.0.0.1,10.254.99.99");
    cr_assert_eq(pf_probe_config_names(&cfg, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "ConfigNamesNothing: fabric_addrs entry 2 "
                          "'10.254.99.99' is not an address of this host"),
              "%s", err);
    free(cfg.fabric_addrs);
    cfg.fabric_addrs = NULL;
    snprintf(cfg.bind_addr, sizeof(cfg.bind_addr), "192.0.2.1");
    cr_assert_eq(pf_probe_config_names(&cfg, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "bind_addr '192.0.2.1'"), "%s", err);
    /* node opens no fabric: its addresses are not its business. */
    cfg.command = PF_CMD_NODE;
    cr_assert_eq(pf_probe_config_names(&cfg, err), PF_OK, "%s", err);
    snprintf(cfg.fabric_provider, sizeof(cfg.fabric_provider), "tcp;tpc");
    cr_assert_eq(pf_probe_config_names(&cfg, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "fabric_provider 'tpc'"), "%s", err);
}
