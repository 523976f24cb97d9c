/* Node checks, condition EFADevicesReady: the node's facts against what
 * its instance type must have.
 *
 * Expected counts come from the catalog entry, overridden by
 * cfg.expect_efa / cfg.expect_gpus (-1 = catalog). Semantics where the
 * type does not settle it:
 *   - type known but absent from the catalog, or no type at all, with EFA
 *     devices present: UnknownInstanceType (warn), and the devices found
 *     are checked as they are (no expected count);
 *   - no catalog entry (or no type found), no EFA device and no
 *     expect_efa: NotAnEFAInstance (fail), and the other EFA checks are
 *     skipped as not applicable; expect_efa 0 instead skips them all;
 *   - cfg.fabric_provider other than efa (tcp/shm asked for explicitly):
 *     every EFA check is skipped, "provider tcp requested: EFA not
 *     required", so a plain machine can run the rest.
 * Order matters: the first failing check is the run's headline reason,
 * so causes (module) come before symptoms (device count). */
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/catalog.h"
#include "../probe/hw_counters.h"

#define COND PF_COND_DEVICES
#define MIB (1024ull * 1024ull)

/* Libfabric that aws-ofi-nccl needs for EFA. */
#define LIBFABRIC_MIN_MAJOR 1
#define LIBFABRIC_MIN_MINOR 22

struct ctx {
    struct pf_run *run;
    const struct pf_node *node;
    const struct pf_instance *it;
    struct pf_verdict *v;
    int expect_efa;            /* -1 = no expectation */
    bool efa_required;         /* provider is efa */
    bool not_efa;              /* NotAnEFAInstance was raised */
    char skip_msg[96];         /* why EFA checks are skipped */
    enum pf_reason skip_reason;
};

static const char *type_label(const struct pf_node *n)
{
    return n->instance_type[0] ? n->instance_type : "(unknown type)";
}

static int stored_efa(const struct pf_node *n)
{
    return n->efa_count < PF_MAX_EFA ? n->efa_count : PF_MAX_EFA;
}

static bool is_gpu_type(const struct pf_instance *it)
{
    return it && !strcmp(it->accel_kind, "gpu");
}

/* Add a skipped EFA check when EFA checks do not apply; true if added. */
static bool skipped(struct ctx *c, const char *name)
{
    if (c->efa_required && !c->not_efa && c->expect_efa != 0)
        return false;
    pf_verdict_add(c->v, name, COND, PF_SKIP, c->skip_reason, "", "%s",
                   c->skip_msg);
    return true;
}

static void check_instance(struct ctx *c)
{
    const struct pf_node *n = c->node;
    char near[PF_NAME_MAX], mean[PF_NAME_MAX + 32] = "";

    /* A mistyped --instance-type (p5.48xlrge) names the entry it missed. */
    if (!c->it && pf_catalog_suggest(&c->run->catalog, n->instance_type, near,
                                     sizeof(near)))
        snprintf(mean, sizeof(mean), " (did you mean %s?)", near);

    if (c->it) {
        pf_verdict_add(c->v, "instance_type", COND, PF_PASS,
                       PF_R_InstanceTypeKnown, "",
                       "%s (from %s): %d EFA, %d x %s%s", type_label(n),
                       n->instance_source, c->it->efa_count,
                       c->it->accel_count,
                       c->it->accel_model[0] ? c->it->accel_model : "CPU",
                       c->it->verified ? "" : " (catalog entry unverified)");
        return;
    }
    if (!c->efa_required) {
        pf_verdict_add(c->v, "instance_type", COND, PF_SKIP, PF_R_EFANotRequired,
                       "", "%s; %s", c->skip_msg,
                       n->instance_type[0] ? n->instance_type
                                           : "instance type unknown");
        return;
    }
    if (c->expect_efa == 0) {
        pf_verdict_add(c->v, "instance_type", COND, PF_SKIP, PF_R_NotApplicable,
                       "", "%s (from %s): not in the catalog; no EFA device "
                       "expected (expect_efa 0)", type_label(n),
                       n->instance_source);
        return;
    }
    if (n->efa_count > 0 || c->expect_efa > 0) {
        pf_verdict_add(c->v, "instance_type", COND, PF_WARN,
                       PF_R_UnknownInstanceType, "",
                       "%s%s%s is not in the catalog%s; checking the %d EFA "
                       "devices found%s",
                       n->instance_type[0] ? "'" : "",
                       type_label(n), n->instance_type[0] ? "'" : "", mean,
                       n->efa_count,
                       c->expect_efa > 0 ? " against expect_efa" : "");
        return;
    }
    c->not_efa = true;
    c->skip_reason = PF_R_NotApplicable;
    snprintf(c->skip_msg, sizeof(c->skip_msg), "not an EFA node: nothing to "
             "check");
    if (n->instance_type[0])
        pf_verdict_add(c->v, "instance_type", COND, PF_FAIL, PF_R_NotAnEFAInstance,
                       "",
                       "'%s' (from %s) has no catalog entry%s and no EFA "
                       "device was found",
                       n->instance_type, n->instance_source, mean);
    else
        pf_verdict_add(c->v, "instance_type", COND, PF_FAIL, PF_R_NotAnEFAInstance,
                       "",
                       "instance type unknown (%s) and no EFA device under "
                       "/sys/class/infiniband: this is not an EFA node",
                       n->instance_note[0] ? n->instance_note
                                           : "no flag, DMI or IMDS answer");
}

static void check_module(struct ctx *c)
{
    const struct pf_node *n = c->node;

    if (skipped(c, "efa_module"))
        return;
    if (n->efa_module_loaded) {
        pf_verdict_add(c->v, "efa_module", COND, PF_PASS, PF_R_EFAModuleLoaded, "",
                       "efa kernel module loaded%s%s",
                       n->efa_module_version[0] ? ", version " : "",
                       n->efa_module_version);
        return;
    }
    pf_verdict_add(c->v, "efa_module", COND, PF_FAIL, PF_R_EFAModuleNotLoaded,
                   "",
                   "efa kernel module not loaded (/sys/module/efa absent); "
                   "%d EFA PCI functions present", n->efa_pci_count);
}

static void check_devices(struct ctx *c)
{
    const struct pf_node *n = c->node;
    char extra[160] = "";

    if (skipped(c, "efa_devices"))
        return;
    if (n->non_efa_ib_count > 0)
        snprintf(extra, sizeof(extra), "; %d non-EFA RDMA device%s ignored",
                 n->non_efa_ib_count, n->non_efa_ib_count == 1 ? "" : "s");
    if (n->efa_recounts > 0)
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                 "; re-counted %d times over %d ms", n->efa_recounts,
                 c->run->cfg.efa_recount_ms);

    if (c->expect_efa < 0) {
        pf_verdict_add(c->v, "efa_devices", COND, PF_PASS,
                       PF_R_EFADeviceCountMatches, "",
                       "%d EFA devices (no expected count for %s)%s",
                       n->efa_count, type_label(n), extra);
    } else if (n->efa_count < c->expect_efa) {
        pf_verdict_add(c->v, "efa_devices", COND, PF_FAIL,
                       PF_R_EFADeviceCountMismatch, "",
                       "found %d of %d EFA devices (PCI 1d0f:efa0-efa3) "
                       "expected for %s%s",
                       n->efa_count, c->expect_efa, type_label(n), extra);
    } else if (n->efa_count > c->expect_efa) {
        pf_verdict_add(c->v, "efa_devices", COND, PF_WARN,
                       PF_R_EFADeviceCountMismatch, "",
                       "found %d EFA devices, more than the %d expected for "
                       "%s%s",
                       n->efa_count, c->expect_efa, type_label(n), extra);
    } else {
        pf_verdict_add(c->v, "efa_devices", COND, PF_PASS,
                       PF_R_EFADeviceCountMatches, "",
                       "%d of %d EFA devices%s", n->efa_count, c->expect_efa,
                       extra);
    }
}

/* No device to look at: the count check has said what matters. */
static bool no_devices(struct ctx *c, const char *name)
{
    if (c->node->efa_count > 0)
        return false;
    pf_verdict_add(c->v, name, COND, PF_SKIP, PF_R_NotApplicable, "",
                   "no EFA device found");
    return true;
}

static void check_ports(struct ctx *c)
{
    const struct pf_node *n = c->node;
    char down[256] = "";
    int ndown = 0;

    if (skipped(c, "efa_ports") || no_devices(c, "efa_ports"))
        return;
    for (int i = 0; i < stored_efa(n); i++) {
        if (n->efa[i].port_active)
            continue;
        if (ndown++ < 4)
            snprintf(down + strlen(down), sizeof(down) - strlen(down),
                     "%s%s (%s)", ndown > 1 ? ", " : "", n->efa[i].name,
                     n->efa[i].port_state);
    }
    if (ndown == 0) {
        pf_verdict_add(c->v, "efa_ports", COND, PF_PASS, PF_R_EFAPortsActive, "",
                       "%d of %d EFA ports ACTIVE", n->efa_ports_active,
                       stored_efa(n));
        return;
    }
    pf_verdict_add(c->v, "efa_ports", COND, PF_FAIL, PF_R_EFAPortDown, "",
                   "%d of %d EFA ports not ACTIVE: %s%s", ndown, stored_efa(n),
                   down, ndown > 4 ? ", ..." : "");
}

/* "3.2 d", "5.0 h", "40 min": how long the host has been up. */
static void fmt_age(double s, char *out, size_t len)
{
    if (s < 0)
        snprintf(out, len, "unknown");
    else if (s >= 86400)
        snprintf(out, len, "%.1f d", s / 86400);
    else if (s >= 3600)
        snprintf(out, len, "%.1f h", s / 3600);
    else
        snprintf(out, len, "%.0f min", s / 60);
}

/* Error counters the EFA devices accumulated since they came up: a
 * warning only, they may be old news; errors that move during a run fail
 * it (EFANICErrors). Counters the driver lacks are named, never failed. */
static void check_nic_errors(struct ctx *c)
{
    const struct pf_node *n = c->node;
    struct pf_hwc_snap all[PF_MAX_EFA];
    char list[300] = "", absent[256], age[32];
    int stored = stored_efa(n), bad = 0, with = 0;

    if (skipped(c, "efa_nic_errors") || no_devices(c, "efa_nic_errors"))
        return;
    for (int i = 0; i < stored; i++) {
        const struct pf_hwc_snap *h = &n->efa[i].hwc;
        char moved[192];

        all[i] = *h;
        with += h->nports > 0;
        if (pf_hwc_errors(h->v, h->present) <=
            (uint64_t)c->run->cfg.nic_boot_max_errors)
            continue;
        if (bad++ < 3) {
            pf_hwc_errors_text(h->v, h->present, "", moved, sizeof(moved));
            snprintf(list + strlen(list), sizeof(list) - strlen(list),
                     "%s%s %s", bad > 1 ? "; " : "", n->efa[i].name, moved);
        }
    }
    fmt_age(n->uptime_s, age, sizeof(age));
    if (with == 0) {
        pf_verdict_add(c->v, "efa_nic_errors", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "the EFA driver exposes no "
                       "hardware counters (ports/*/hw_counters) on %d "
                       "device(s): errors not read", stored);
        return;
    }
    pf_hwc_absent_text(all, stored, absent, sizeof(absent));
    if (bad == 0) {
        pf_verdict_add(c->v, "efa_nic_errors", COND, PF_PASS, PF_R_None, "",
                       "no error counter above %d on %d EFA device(s) since "
                       "they came up (host up %s)%s%s",
                       c->run->cfg.nic_boot_max_errors, with, age,
                       absent[0] ? "; absent on this driver: " : "", absent);
        return;
    }
    pf_verdict_add(c->v, "efa_nic_errors", COND, PF_WARN,
                   PF_R_EFANICErrorsSinceBoot, "", "%d of %d EFA device(s) "
                   "counted errors since they came up, at most the host's "
                   "uptime of %s ago: %s%s", bad, with, age, list,
                   bad > 3 ? "; ..." : "");
}

static void check_files(struct ctx *c)
{
    const struct pf_node *n = c->node;

    if (skipped(c, "efa_device_files") || no_devices(c, "efa_device_files"))
        return;
    if (n->uverbs_present < n->efa_count) {
        pf_verdict_add(c->v, "efa_device_files", COND, PF_FAIL,
                       PF_R_EFADeviceFilesMissing, "",
                       "%d /dev/infiniband/uverbs* files for %d EFA devices%s%s",
                       n->uverbs_present, n->efa_count,
                       n->uverbs_error[0] ? ": " : "", n->uverbs_error);
    } else if (n->uverbs_openable < n->uverbs_present) {
        pf_verdict_add(c->v, "efa_device_files", COND, PF_FAIL,
                       PF_R_EFADeviceFilesMissing, "",
                       "%d of %d uverbs files cannot be opened: %s",
                       n->uverbs_present - n->uverbs_openable,
                       n->uverbs_present, n->uverbs_error);
    } else {
        pf_verdict_add(c->v, "efa_device_files", COND, PF_PASS,
                       PF_R_EFADeviceFilesPresent, "",
                       "%d uverbs files present and openable",
                       n->uverbs_openable);
    }
}

static void check_provider(struct ctx *c)
{
    const struct pf_node *n = c->node;

    if (skipped(c, "efa_provider"))
        return;
    if (!n->libfabric_loaded) {
        pf_verdict_add(c->v, "efa_provider", COND, PF_FAIL,
                       PF_R_EFAProviderUnavailable, "", "%s",
                       n->libfabric_error);
    } else if (n->fi_efa_domains == 0) {
        pf_verdict_add(c->v, "efa_provider", COND, PF_FAIL,
                       PF_R_EFAProviderUnavailable, "",
                       "libfabric %s (%s): no efa RDM domain: %s",
                       n->libfabric_version, n->libfabric_path,
                       n->libfabric_error);
    } else if (n->fi_efa_domains < n->efa_count) {
        pf_verdict_add(c->v, "efa_provider", COND, PF_WARN,
                       PF_R_EFAProviderUnavailable, "",
                       "libfabric %s sees %d efa RDM domains for %d EFA "
                       "devices", n->libfabric_version, n->fi_efa_domains,
                       n->efa_count);
    } else {
        pf_verdict_add(c->v, "efa_provider", COND, PF_PASS,
                       PF_R_EFAProviderAvailable, "",
                       "libfabric %s (%s): %d efa RDM domains",
                       n->libfabric_version, n->libfabric_path,
                       n->fi_efa_domains);
    }
}

/* NCCL reaches EFA only through its net plugin (aws-ofi-nccl); without
 * one it sends inter-node traffic over sockets. Judged only where NCCL
 * itself loads: a node-check image without NCCL says nothing about the
 * job's image. A warning, not a failure: it is the image, not the node. */
static void check_net_plugin(struct ctx *c)
{
    const struct pf_node *n = c->node;

    if (skipped(c, "nccl_net_plugin"))
        return;
    if (!is_gpu_type(c->it) || c->it->no_nccl || !n->nccl_loaded) {
        pf_verdict_add(c->v, "nccl_net_plugin", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "%s",
                       n->nccl_loaded ? "not a GPU instance type: NCCL's net "
                                        "plugin not used"
                                      : "NCCL not loaded: no plugin to look for");
        return;
    }
    if (n->net_plugin_path[0] && n->net_plugin_api > 0) {
        pf_verdict_add(c->v, "nccl_net_plugin", COND, PF_PASS,
                       PF_R_NetPluginFound, "", "%s -> %s (ncclNetPlugin_v%d)",
                       n->net_plugin_name, n->net_plugin_path,
                       n->net_plugin_api);
        return;
    }
    pf_verdict_add(c->v, "nccl_net_plugin", COND, PF_WARN,
                   PF_R_NetPluginNotFound, "",
                   "NCCL would load no net plugin, so traffic between nodes "
                   "would go over sockets: %s", n->net_plugin_error);
}

static void check_libfabric_version(struct ctx *c)
{
    const struct pf_node *n = c->node;
    int major = 0, minor = 0;

    if (skipped(c, "libfabric_version"))
        return;
    if (!is_gpu_type(c->it) || c->it->no_nccl || !n->libfabric_loaded) {
        pf_verdict_add(c->v, "libfabric_version", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "%s",
                       n->libfabric_loaded ? "not a GPU instance type: "
                                             "aws-ofi-nccl not used"
                                           : "libfabric not loaded");
        return;
    }
    if (n->nccl_loaded && !n->net_plugin_path[0]) {
        pf_verdict_add(c->v, "libfabric_version", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "libfabric %s: no aws-ofi-nccl "
                       "found to use it (see nccl_net_plugin)",
                       n->libfabric_version);
        return;
    }
    if (sscanf(n->libfabric_version, "%d.%d", &major, &minor) != 2 ||
        major < LIBFABRIC_MIN_MAJOR ||
        (major == LIBFABRIC_MIN_MAJOR && minor < LIBFABRIC_MIN_MINOR)) {
        pf_verdict_add(c->v, "libfabric_version", COND, PF_WARN,
                       PF_R_LibfabricTooOld, "",
                       "libfabric %s (%s): aws-ofi-nccl needs >= %d.%d for EFA",
                       n->libfabric_version, n->libfabric_path,
                       LIBFABRIC_MIN_MAJOR, LIBFABRIC_MIN_MINOR);
        return;
    }
    pf_verdict_add(c->v, "libfabric_version", COND, PF_PASS,
                   PF_R_LibfabricVersionOK, "", "libfabric %s >= %d.%d",
                   n->libfabric_version, LIBFABRIC_MIN_MAJOR,
                   LIBFABRIC_MIN_MINOR);
}

static void fmt_limit(uint64_t v, char *buf, size_t len)
{
    if (v == UINT64_MAX)
        snprintf(buf, len, "unlimited");
    else if (v >= MIB)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(v / MIB));
    else
        snprintf(buf, len, "%llu KiB", (unsigned long long)(v / 1024));
}

static void check_memlock(struct ctx *c)
{
    const struct pf_node *n = c->node;
    int min = c->run->cfg.min_memlock_mib;
    char have[32], want[32];
    bool ok;

    if (skipped(c, "memlock"))
        return;
    fmt_limit(n->memlock_soft, have, sizeof(have));
    if (min < 0) {
        ok = n->memlock_soft == UINT64_MAX;
        snprintf(want, sizeof(want), "unlimited");
    } else {
        ok = n->memlock_soft >= (uint64_t)min * MIB;
        snprintf(want, sizeof(want), "%d MiB", min);
    }
    if (ok)
        pf_verdict_add(c->v, "memlock", COND, PF_PASS, PF_R_MemlockSufficient, "",
                       "RLIMIT_MEMLOCK %s (need %s)", have, want);
    else
        pf_verdict_add(c->v, "memlock", COND, PF_FAIL, PF_R_MemlockTooLow, "",
                       "RLIMIT_MEMLOCK soft limit is %s; EFA needs %s", have,
                       want);
}

static void check_hugepages(struct ctx *c)
{
    const struct pf_node *n = c->node;

    if (skipped(c, "hugepages"))
        return;
    if (n->hugepages_total < 0)
        pf_verdict_add(c->v, "hugepages", COND, PF_WARN, PF_R_HugePagesUnavailable,
                       "", "/proc/meminfo has no HugePages_Total");
    else if (n->hugepages_free <= 0)
        pf_verdict_add(c->v, "hugepages", COND, PF_WARN, PF_R_HugePagesUnavailable,
                       "",
                       "%ld free of %ld huge pages: libfabric's EFA provider "
                       "falls back to regular pages",
                       n->hugepages_free < 0 ? 0 : n->hugepages_free,
                       n->hugepages_total);
    else
        pf_verdict_add(c->v, "hugepages", COND, PF_PASS, PF_R_HugePagesAvailable,
                       "", "%ld free of %ld huge pages of %ld kB",
                       n->hugepages_free, n->hugepages_total, n->hugepage_kb);
}

static void check_gdr(struct ctx *c)
{
    const struct pf_node *n = c->node;

    if (skipped(c, "gdr") || no_devices(c, "gdr"))
        return;
    if (!c->it || !c->it->gdr_required)
        pf_verdict_add(c->v, "gdr", COND, PF_SKIP, PF_R_NotApplicable, "",
                       "GPUDirect RDMA not required for %s (RDMA read %s)",
                       type_label(n), n->gdr_supported ? "supported" : "absent");
    else if (n->gdr_supported)
        pf_verdict_add(c->v, "gdr", COND, PF_PASS, PF_R_GDRSupported, "",
                       "EFA device 0x%04x supports RDMA read", n->efa[0].device);
    else
        pf_verdict_add(c->v, "gdr", COND, PF_WARN, PF_R_GDRUnsupported, "",
                       "%s requires GPUDirect RDMA but EFA device 0x%04x shows "
                       "no RDMA read", type_label(n), n->efa[0].device);
}

static void check_gpus(struct ctx *c)
{
    const struct pf_node *n = c->node;
    int expect = c->run->cfg.expect_gpus >= 0 ? c->run->cfg.expect_gpus
                 : is_gpu_type(c->it)         ? c->it->accel_count
                                              : -1;
    char why[300] = "";

    if (expect < 0) {
        pf_verdict_add(c->v, "gpu_count", COND, PF_SKIP, PF_R_NotApplicable, "",
                       "no GPU count expected for %s; %d GPUs found",
                       type_label(n), n->gpu_count);
        return;
    }
    if (!n->cuda_loaded || n->cuda_error[0])
        snprintf(why, sizeof(why), " (%s)", n->cuda_error);
    if (n->gpu_count == expect)
        pf_verdict_add(c->v, "gpu_count", COND, PF_PASS, PF_R_GPUCountMatches, "",
                       "%d of %d GPUs%s%s", n->gpu_count, expect,
                       n->gpu_count > 0 ? ": " : "",
                       n->gpu_count > 0 ? n->gpus[0].model : "");
    else
        pf_verdict_add(c->v, "gpu_count", COND,
                       n->gpu_count < expect ? PF_FAIL : PF_WARN,
                       PF_R_GPUCountMismatch, "",
                       "found %d of %d GPUs expected for %s%s", n->gpu_count,
                       expect, type_label(n), why);
}

void pf_verdict_node(struct pf_run *run)
{
    const char *prov = run->cfg.fabric_provider;
    struct ctx c;

    memset(&c, 0, sizeof(c));
    c.run = run;
    c.node = &run->node;
    c.it = run->instance;
    c.v = &run->verdict;
    c.expect_efa = run->cfg.expect_efa >= 0 ? run->cfg.expect_efa
                   : c.it                  ? c.it->efa_count
                                           : -1;
    c.efa_required = !prov[0] || !strncmp(prov, "efa", 3);
    if (!c.efa_required) {
        c.skip_reason = PF_R_EFANotRequired;
        snprintf(c.skip_msg, sizeof(c.skip_msg),
                 "provider %s requested: EFA not required", prov);
    } else if (c.expect_efa == 0) {
        c.skip_reason = PF_R_NotApplicable;
        snprintf(c.skip_msg, sizeof(c.skip_msg), "no EFA device expected");
    }

    check_instance(&c);
    check_module(&c);
    check_devices(&c);
    check_ports(&c);
    check_nic_errors(&c);
    check_files(&c);
    check_provider(&c);
    check_net_plugin(&c);
    check_libfabric_version(&c);
    check_memlock(&c);
    check_hugepages(&c);
    check_gdr(&c);
    check_gpus(&c);
}
