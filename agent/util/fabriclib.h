/* libfabric, loaded at run time, for the probe and the host engine alike.
 * The agent never links libfabric (a node without it must still run
 * `efa-preflight node`); only the six entry points below are real symbols, every other fi_* call in <rdma/fabric.h>
 * is an inline wrapper over the provider's function tables. Do not call
 * fi_allocinfo() (it calls fi_dupinfo directly): use fi->dupinfo(NULL). */
#ifndef PF_FABRICLIB_H
#define PF_FABRICLIB_H

#include <rdma/fabric.h>

#include "err.h"
#include "sizes.h"

struct pf_fi {
    void *dl;
    char path[PF_PATH_MAX];           /* library actually opened */
    int (*getinfo)(uint32_t version, const char *node, const char *service,
                   uint64_t flags, const struct fi_info *hints,
                   struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                  void *context);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    const char *(*strerror)(int errnum);
    uint32_t (*version)(void);
};

/* dlopen path (cfg.libfabric_path) when non-empty, else libfabric.so.1
 * from /opt/amazon/efa/lib64, /opt/amazon/efa/lib, then the default
 * search path (the EFA installer's copy first, as aws-ofi-nccl does).
 * PF_ERR_UNSUPPORTED when none loads, err naming what was tried. */
pf_err pf_fi_load(struct pf_fi *fi, const char *path, char *err);
void pf_fi_unload(struct pf_fi *fi);

/* The API version to ask for: the older of the library and our headers. */
uint32_t pf_fi_api_version(const struct pf_fi *fi);

#endif
