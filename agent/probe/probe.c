/* pf_probe: gather the node facts in a fixed order, then look the
 * instance type up in the catalog. Only bad input (a root that does not
 * exist) is an error; everything else found or missing is a fact. */
#include "probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_health.h"

#include "../config/catalog.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "../util/sanitize.h"

/* Re-count tries spread over cfg.efa_recount_ms. */
#define RECOUNT_TRIES 6

/* p5en and friends (catalog quirk recount_efa) may bring EFA devices up
 * after boot: when fewer are seen than expected, look again a few times
 * within cfg.efa_recount_ms before the verdict calls it a mismatch. */
static void recount_efa(const struct pf_run *run, struct pf_node *node)
{
    const struct pf_config *cfg = &run->cfg;
    int expected = cfg->expect_efa >= 0 ? cfg->expect_efa
                   : run->instance       ? run->instance->efa_count
                                         : -1;
    int64_t deadline, step;

    if (!run->instance || !run->instance->recount_efa || expected <= 0 ||
        cfg->efa_recount_ms <= 0)
        return;
    deadline = pf_deadline_in(cfg->efa_recount_ms);
    step = cfg->efa_recount_ms / RECOUNT_TRIES;
    if (step < 1)
        step = 1;
    while (node->efa_count < expected && pf_ms_left(deadline) > 0 &&
           node->efa_recounts < RECOUNT_TRIES) {
        int64_t left = pf_ms_left(deadline);
        pf_sleep_ms(left < step ? left : step);
        pf_probe_efa(cfg, node);
        node->efa_recounts++;
        pf_info("EFA re-count %d: %d of %d devices", node->efa_recounts,
                node->efa_count, expected);
    }
}

/* Seconds since boot, the age bound of the EFA counters read at probe
 * time; -1 when unreadable. */
static double read_uptime(const struct pf_config *cfg)
{
    char path[PF_PATH_MAX], buf[64], err[PF_ERRLEN], *end;
    double up;

    if (pf_path_join(path, sizeof(path), cfg->sysfs_root, "/proc/uptime",
                     err) != PF_OK ||
        pf_read_line(path, buf, sizeof(buf), err) != PF_OK)
        return -1;
    up = strtod(buf, &end);
    return end != buf && up >= 0 ? up : -1;
}

pf_err pf_probe(struct pf_run *run, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_node *node = &run->node;
    pf_err rc;

    rc = pf_check_root_dir(cfg->sysfs_root, "sysfs_root", err);
    if (rc == PF_OK)
        rc = pf_check_root_dir(cfg->dev_root, "dev_root", err);
    if (rc != PF_OK)
        return rc;

    memset(node, 0, sizeof(*node));
    if (gethostname(node->hostname, sizeof(node->hostname) - 1) != 0)
        node->hostname[0] = '\0';
    /* The UTS hostname is anyone's to set in a namespace; peers see it. */
    pf_sanitize_inplace(node->hostname, sizeof(node->hostname));

    /* k8s: the Node as pf_publish_begin read it, before this stage. */
    pf_probe_instance(cfg, node, run->mark.instance_type_label[0]
                                     ? run->mark.instance_type_label : NULL);
    run->instance = node->instance_type[0]
                        ? pf_catalog_find(&run->catalog, node->instance_type)
                        : NULL;
    pf_probe_efa(cfg, node);
    recount_efa(run, node);
    node->uptime_s = read_uptime(cfg);
    pf_probe_limits(cfg, node);
    pf_probe_fabric(cfg, node);
    pf_probe_gpu(node);
    pf_probe_gpu_health(run);
    pf_debug("probe: type %s (%s), %d EFA, libfabric %s, %d GPUs",
             node->instance_type[0] ? node->instance_type : "-",
             node->instance_source, node->efa_count,
             node->libfabric_loaded ? node->libfabric_version : "-",
             node->gpu_count);
    return PF_OK;
}
