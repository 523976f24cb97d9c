#include "fabriclib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *const lib_paths[] = {
    "/opt/amazon/efa/lib64/libfabric.so.1",
    "/opt/amazon/efa/lib/libfabric.so.1",
    "libfabric.so.1",
};

static void *sym(void *dl, const char *name, int *missing)
{
    void *p = dlsym(dl, name);
    if (!p)
        (*missing)++;
    return p;
}

pf_err pf_fi_load(struct pf_fi *fi, const char *path, char *err)
{
    size_t npaths = sizeof(lib_paths) / sizeof(lib_paths[0]);
    const char *const *paths = lib_paths;
    const char *last = "";
    int missing = 0;

    memset(fi, 0, sizeof(*fi));
    if (path && path[0]) {
        paths = &path;
        npaths = 1;
    }
    for (size_t i = 0; i < npaths; i++) {
        fi->dl = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (fi->dl) {
            snprintf(fi->path, sizeof(fi->path), "%s", paths[i]);
            break;
        }
        last = dlerror();
    }
    if (!fi->dl)
        return pf_fail(err, PF_ERR_UNSUPPORTED,
                       "libfabric not loadable (tried %s): %s",
                       npaths == 1 ? paths[0]
                                   : "/opt/amazon/efa/lib64, /opt/amazon/efa/"
                                     "lib, the library path",
                       last ? last : "");

    /* POSIX allows converting dlsym's void * to a function pointer. */
    *(void **)&fi->getinfo = sym(fi->dl, "fi_getinfo", &missing);
    *(void **)&fi->freeinfo = sym(fi->dl, "fi_freeinfo", &missing);
    *(void **)&fi->fabric = sym(fi->dl, "fi_fabric", &missing);
    *(void **)&fi->dupinfo = sym(fi->dl, "fi_dupinfo", &missing);
    *(void **)&fi->strerror = sym(fi->dl, "fi_strerror", &missing);
    *(void **)&fi->version = sym(fi->dl, "fi_version", &missing);
    if (missing) {
        pf_fail(err, PF_ERR_UNSUPPORTED,
                "%s lacks %d of the fi_* entry points the agent needs",
                fi->path, missing);
        pf_fi_unload(fi);
        return PF_ERR_UNSUPPORTED;
    }
    return PF_OK;
}

/* The library stays mapped: its providers are not meant to be unloaded
 * and loaded again within one process (the probe keeps it open too). */
void pf_fi_unload(struct pf_fi *fi)
{
    memset(fi, 0, sizeof(*fi));
}

uint32_t pf_fi_api_version(const struct pf_fi *fi)
{
    uint32_t ours = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    uint32_t lib = fi->version();

    return lib < ours ? lib : ours;
}
