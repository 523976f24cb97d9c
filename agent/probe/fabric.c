/* libfabric, loaded with dlopen (util/fabriclib) so the agent starts where
 * it is absent. Needs node->efa_count from the device scan (pf_probe_efa)
 * first. The library stays mapped for the process: the host engine loads
 * the same one, and libfabric's providers are not meant to be unloaded
 * and loaded again. */
#include "probe.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fabriclib.h"

/* Distinct efa RDM domains: one per NIC. libfabric 2.x lists each NIC
 * under two fabrics (efa, efa-direct), so infos are not counted raw: an
 * info counts when no earlier one names its domain. */
static int count_domains(const struct fi_info *info)
{
    int n = 0;

    for (const struct fi_info *i = info; i; i = i->next) {
        const char *name = i->domain_attr ? i->domain_attr->name : NULL;
        bool dup = false;

        if (!name)
            continue;
        for (const struct fi_info *j = info; j != i && !dup; j = j->next)
            dup = j->domain_attr && j->domain_attr->name &&
                  !strcmp(j->domain_attr->name, name);
        n += !dup;
    }
    return n;
}

void pf_probe_fabric(const struct pf_config *cfg, struct pf_node *node)
{
    struct pf_fi fi;
    struct fi_info *hints, *info = NULL;
    uint32_t runtime;
    char msg[PF_ERRLEN];
    int rc;

    node->libfabric_loaded = false;
    node->libfabric_path[0] = node->libfabric_version[0] = '\0';
    node->libfabric_error[0] = '\0';
    node->fi_efa_domains = 0;

    if (pf_fi_load(&fi, cfg->libfabric_path, msg) != PF_OK) {
        snprintf(node->libfabric_error, sizeof(node->libfabric_error), "%s",
                 msg);
        return;
    }
    snprintf(node->libfabric_path, sizeof(node->libfabric_path), "%s",
             fi.path);
    node->libfabric_loaded = true;
    runtime = fi.version();
    snprintf(node->libfabric_version, sizeof(node->libfabric_version), "%u.%u",
             FI_MAJOR(runtime), FI_MINOR(runtime));

    /* The efa provider finds its NICs through the same sysfs the device
     * scan read: with none there the answer is -FI_ENODATA, and asking
     * would only pay for every provider's start-up (a few hundred ms for
     * some system builds). */
    if (node->efa_count == 0) {
        snprintf(node->libfabric_error, sizeof(node->libfabric_error),
                 "fi_getinfo(prov=efa) not called: no EFA device in sysfs");
        return;
    }

    hints = fi.dupinfo(NULL);
    if (!hints || !hints->fabric_attr || !hints->ep_attr) {
        snprintf(node->libfabric_error, sizeof(node->libfabric_error),
                 "fi_dupinfo(NULL) failed");
        if (hints)
            fi.freeinfo(hints);
        return;
    }
    hints->fabric_attr->prov_name = strdup("efa");
    hints->ep_attr->type = FI_EP_RDM;
    rc = fi.getinfo(pf_fi_api_version(&fi), NULL, NULL, 0, hints, &info);
    fi.freeinfo(hints);  /* frees prov_name too */
    if (rc == 0) {
        node->fi_efa_domains = count_domains(info);
        fi.freeinfo(info);
    } else if (rc == -FI_ENODATA) {
        snprintf(node->libfabric_error, sizeof(node->libfabric_error),
                 "fi_getinfo(prov=efa, FI_EP_RDM): -FI_ENODATA (no efa "
                 "provider or no EFA device)");
    } else {
        snprintf(node->libfabric_error, sizeof(node->libfabric_error),
                 "fi_getinfo(prov=efa, FI_EP_RDM) failed: %d", rc);
    }
}

bool pf_fabric_lists_provider(const struct pf_config *cfg, const char *name)
{
    struct pf_fi fi;
    struct fi_info *hints, *info = NULL;
    char msg[PF_ERRLEN];
    bool found = false;

    if (pf_fi_load(&fi, cfg->libfabric_path, msg) != PF_OK ||
        !(hints = fi.dupinfo(NULL)))
        return false;
    if (hints->fabric_attr) {
        hints->fabric_attr->prov_name = strdup(name);
        found = hints->fabric_attr->prov_name &&
                fi.getinfo(pf_fi_api_version(&fi), NULL, NULL, 0, hints,
                           &info) == 0 && info;
    }
    if (info)
        fi.freeinfo(info);
    fi.freeinfo(hints);
    return found;
}
