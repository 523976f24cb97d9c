/* libfabric, loaded with dlopen so the agent starts where it is absent.
 * Needs node->efa_count from the device scan (pf_probe_efa) first.
 *
 * Built against <rdma/fabric.h> for the fi_info layout and constants, never
 * linked: only the four entry points below are resolved. The EFA
 * installer's copy (/opt/amazon/efa) is preferred over the system one, as
 * aws-ofi-nccl does. */
#include "probe.h"

#include <dlfcn.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const default_paths[] = {
    "/opt/amazon/efa/lib64/libfabric.so.1",
    "/opt/amazon/efa/lib/libfabric.so.1",
    "libfabric.so.1",
};

struct fi_api {
    uint32_t (*version)(void);
    int (*getinfo)(uint32_t version, const char *node, const char *service,
                   uint64_t flags, const struct fi_info *hints,
                   struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
};

/* dlopen the first library that loads; the handle stays open for the
 * process (the host engine loads the same one, and libfabric's providers
 * are not meant to be unloaded and loaded again). */
static void *open_libfabric(const struct pf_config *cfg, struct pf_node *node)
{
    size_t npaths = sizeof(default_paths) / sizeof(default_paths[0]);
    const char *one[1] = { cfg->libfabric_path };
    const char *const *paths = default_paths;
    char tried[512] = "";
    const char *last = "";

    if (cfg->libfabric_path[0]) {
        paths = one;
        npaths = 1;
    }
    for (size_t i = 0; i < npaths; i++) {
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            snprintf(node->libfabric_path, sizeof(node->libfabric_path), "%s",
                     paths[i]);
            return h;
        }
        last = dlerror();
        snprintf(tried + strlen(tried), sizeof(tried) - strlen(tried), "%s%s",
                 i ? ", " : "", paths[i]);
    }
    snprintf(node->libfabric_error, sizeof(node->libfabric_error),
             "libfabric not loadable (tried %s): %s", tried, last ? last : "");
    return NULL;
}

static bool resolve(void *h, struct fi_api *api, struct pf_node *node)
{
    /* memcpy, not a cast: ISO C has no conversion from void * to a
     * function pointer. */
    void *sym[4];
    static const char *const names[4] = { "fi_version", "fi_getinfo",
                                          "fi_freeinfo", "fi_dupinfo" };

    for (int i = 0; i < 4; i++) {
        sym[i] = dlsym(h, names[i]);
        if (!sym[i]) {
            snprintf(node->libfabric_error, sizeof(node->libfabric_error),
                     "%s: symbol %s missing", node->libfabric_path, names[i]);
            return false;
        }
    }
    memcpy(&api->version, &sym[0], sizeof(sym[0]));
    memcpy(&api->getinfo, &sym[1], sizeof(sym[1]));
    memcpy(&api->freeinfo, &sym[2], sizeof(sym[2]));
    memcpy(&api->dupinfo, &sym[3], sizeof(sym[3]));
    return true;
}

/* Distinct efa RDM domains: one per NIC. libfabric 2.x lists each NIC
 * under two fabrics (efa, efa-direct), so infos are not counted raw. */
static int count_domains(const struct fi_info *info)
{
    const char *seen[256];
    int n = 0;

    for (const struct fi_info *i = info; i; i = i->next) {
        const char *name = i->domain_attr ? i->domain_attr->name : NULL;
        bool dup = false;

        if (!name)
            continue;
        for (int k = 0; k < n && !dup; k++)
            dup = !strcmp(seen[k], name);
        if (!dup && n < 256)
            seen[n++] = name;
    }
    return n;
}

void pf_probe_fabric(const struct pf_config *cfg, struct pf_node *node)
{
    struct fi_api api;
    struct fi_info *hints, *info = NULL;
    uint32_t runtime, want;
    void *h;
    int rc;

    node->libfabric_loaded = false;
    node->libfabric_path[0] = node->libfabric_version[0] = '\0';
    node->libfabric_error[0] = '\0';
    node->fi_efa_domains = 0;

    h = open_libfabric(cfg, node);
    if (!h)
        return;
    if (!resolve(h, &api, node))
        return;
    node->libfabric_loaded = true;
    runtime = api.version();
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

    /* Ask for the older of the library's API and the headers' API: the
     * hints layout we write is the headers'. */
    want = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    if (FI_VERSION_LT(runtime, want))
        want = runtime;
    hints = api.dupinfo(NULL);
    if (!hints || !hints->fabric_attr || !hints->ep_attr) {
        snprintf(node->libfabric_error, sizeof(node->libfabric_error),
                 "fi_dupinfo(NULL) failed");
        if (hints)
            api.freeinfo(hints);
        return;
    }
    hints->fabric_attr->prov_name = strdup("efa");
    hints->ep_attr->type = FI_EP_RDM;
    rc = api.getinfo(want, NULL, NULL, 0, hints, &info);
    api.freeinfo(hints);  /* frees prov_name too */
    if (rc == 0) {
        node->fi_efa_domains = count_domains(info);
        api.freeinfo(info);
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
    struct pf_node *scratch = calloc(1, sizeof(*scratch));
    struct fi_info *hints, *info = NULL;
    struct fi_api api;
    bool found = false;
    uint32_t want = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    void *h;

    if (!scratch)
        return false;
    h = open_libfabric(cfg, scratch);
    if (h && resolve(h, &api, scratch) && (hints = api.dupinfo(NULL))) {
        if (FI_VERSION_LT(api.version(), want))
            want = api.version();
        if (hints->fabric_attr) {
            hints->fabric_attr->prov_name = strdup(name);
            found = hints->fabric_attr->prov_name &&
                    api.getinfo(want, NULL, NULL, 0, hints,
                                &info) == 0 && info;
        }
        if (info)
            api.freeinfo(info);
        api.freeinfo(hints);
    }
    free(scratch);
    return found;
}
