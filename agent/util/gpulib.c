#include "gpulib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDART_ENV "EFA_PREFLIGHT_CUDART"
#define NCCL_ENV "EFA_PREFLIGHT_NCCL"

static const char *const cudart_names[] = {
    "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11",
};
static const char *const nccl_names[] = { "libnccl.so.2" };

/* Try the override (when set, it is the only candidate: a test double or a
 * pinned library must not silently fall back to another one), then names. */
static void *open_first(const char *env, const char *const *names, size_t n,
                        char *path, size_t pathlen, char *tried,
                        size_t triedlen)
{
    const char *over = getenv(env);
    size_t used = 0;

    tried[0] = '\0';
    if (over && *over) {
        void *dl = dlopen(over, RTLD_NOW | RTLD_LOCAL);
        if (dl)
            snprintf(path, pathlen, "%s", over);
        else
            snprintf(tried, triedlen, "%s=%s (%s)", env, over, dlerror());
        return dl;
    }
    for (size_t i = 0; i < n; i++) {
        void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (dl) {
            snprintf(path, pathlen, "%s", names[i]);
            return dl;
        }
        int w = snprintf(tried + used, triedlen - used, "%s%s",
                         used ? ", " : "", names[i]);
        if (w > 0 && (size_t)w < triedlen - used)
            used += (size_t)w;
    }
    return NULL;
}

/* dlsym into a function pointer without a cast warning per call site. */
static pf_err need(void *dl, const char *lib, const char *name, void *slot,
                   char *err)
{
    void *sym = dlsym(dl, name);
    if (!sym)
        return pf_fail(err, PF_ERR_UNSUPPORTED, "%s lacks symbol %s", lib,
                       name);
    memcpy(slot, &sym, sizeof(sym));
    return PF_OK;
}

/* ------------------------------------------------------- CUDA runtime */

pf_err pf_cudart_load(struct pf_cudart *c, char *err)
{
    char tried[PF_ERRLEN / 2];
    pf_err rc = PF_OK;

    memset(c, 0, sizeof(*c));
    c->dl = open_first(CUDART_ENV, cudart_names,
                       sizeof(cudart_names) / sizeof(cudart_names[0]),
                       c->path, sizeof(c->path), tried, sizeof(tried));
    if (!c->dl)
        return pf_fail(err, PF_ERR_UNSUPPORTED,
                       "CUDA runtime not found (tried %s)", tried);

#define NEED(f) \
    if (rc == PF_OK) rc = need(c->dl, c->path, #f, &c->f, err)
    NEED(cudaGetDeviceCount);
    NEED(cudaSetDevice);
    NEED(cudaDeviceGetPCIBusId);
    NEED(cudaRuntimeGetVersion);
    NEED(cudaDriverGetVersion);
    NEED(cudaGetErrorString);
    NEED(cudaMalloc);
    NEED(cudaFree);
    NEED(cudaMallocHost);
    NEED(cudaFreeHost);
    NEED(cudaMemcpyAsync);
    NEED(cudaMemsetAsync);
    NEED(cudaStreamCreateWithFlags);
    NEED(cudaStreamDestroy);
    NEED(cudaStreamQuery);
    NEED(cudaEventCreateWithFlags);
    NEED(cudaEventDestroy);
    NEED(cudaEventRecord);
    NEED(cudaEventQuery);
    NEED(cudaEventElapsedTime);
#undef NEED
    /* CUDA 12 exports the current struct layout as _v2 and keeps the old
     * name for binaries built against 11; 11 and 13 have only the name. */
    if (rc == PF_OK) {
        const char *name = dlsym(c->dl, "cudaGetDeviceProperties_v2")
                               ? "cudaGetDeviceProperties_v2"
                               : "cudaGetDeviceProperties";
        rc = need(c->dl, c->path, name, &c->cudaGetDeviceProperties, err);
    }
    if (rc != PF_OK)
        pf_cudart_unload(c);
    return rc;
}

void pf_cudart_unload(struct pf_cudart *c)
{
    if (c->dl)
        dlclose(c->dl);
    memset(c, 0, sizeof(*c));
}

const char *pf_cuda_strerror(const struct pf_cudart *c, pf_cuda_error_t e)
{
    const char *s = (c && c->cudaGetErrorString) ? c->cudaGetErrorString(e)
                                                 : NULL;
    return s ? s : "unknown CUDA error";
}

pf_err pf_cuda_versions(const struct pf_cudart *c, int *runtime, int *driver,
                        char *err)
{
    pf_cuda_error_t e;

    *runtime = *driver = 0;
    e = c->cudaRuntimeGetVersion(runtime);
    if (e != PF_CUDA_SUCCESS)
        return pf_fail(err, PF_ERR_ENGINE, "cudaRuntimeGetVersion: %s (%d)",
                       pf_cuda_strerror(c, e), e);
    e = c->cudaDriverGetVersion(driver);
    if (e != PF_CUDA_SUCCESS)
        return pf_fail(err, PF_ERR_ENGINE, "cudaDriverGetVersion: %s (%d)",
                       pf_cuda_strerror(c, e), e);
    return PF_OK;
}

pf_err pf_cuda_device_count(const struct pf_cudart *c, int *count, char *err)
{
    pf_cuda_error_t e = c->cudaGetDeviceCount(count);

    if (e == PF_CUDA_ERROR_NO_DEVICE) {
        *count = 0;
        return PF_OK;
    }
    if (e != PF_CUDA_SUCCESS) {
        *count = 0;
        return pf_fail(err, PF_ERR_ENGINE, "cudaGetDeviceCount: %s (%d)",
                       pf_cuda_strerror(c, e), e);
    }
    return PF_OK;
}

pf_err pf_cuda_device_info(const struct pf_cudart *c, int device,
                           struct pf_cuda_device *out, char *err)
{
    /* aligned for the size_t inside */
    _Alignas(16) unsigned char prop[PF_CUDA_PROP_BUF];
    char name[PF_CUDA_PROP_NAME_LEN + 1];
    size_t total;
    pf_cuda_error_t e;

    memset(out, 0, sizeof(*out));
    memset(prop, 0, sizeof(prop));
    e = c->cudaGetDeviceProperties((pf_cuda_device_prop *)prop, device);
    if (e != PF_CUDA_SUCCESS)
        return pf_fail(err, PF_ERR_ENGINE,
                       "cudaGetDeviceProperties(device %d): %s (%d)", device,
                       pf_cuda_strerror(c, e), e);
    memcpy(name, prop + PF_CUDA_PROP_NAME_OFF, PF_CUDA_PROP_NAME_LEN);
    name[PF_CUDA_PROP_NAME_LEN] = '\0';
    snprintf(out->model, sizeof(out->model), "%s", name);
    memcpy(&total, prop + PF_CUDA_PROP_TOTALMEM_OFF, sizeof(total));
    out->mem_bytes = total;

    e = c->cudaDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof(out->pci_bus_id),
                                 device);
    if (e != PF_CUDA_SUCCESS)
        return pf_fail(err, PF_ERR_ENGINE,
                       "cudaDeviceGetPCIBusId(device %d): %s (%d)", device,
                       pf_cuda_strerror(c, e), e);
    out->pci_bus_id[sizeof(out->pci_bus_id) - 1] = '\0';
    return PF_OK;
}

/* ---------------------------------------------------------------- NCCL */

void pf_nccl_config_init(pf_nccl_config_t *cfg)
{
    cfg->size = sizeof(*cfg);
    cfg->magic = PF_NCCL_CONFIG_MAGIC;
    cfg->version = PF_NCCL_CONFIG_VERSION;
    cfg->blocking = PF_NCCL_CONFIG_UNDEF_INT;
    cfg->cgaClusterSize = PF_NCCL_CONFIG_UNDEF_INT;
    cfg->minCTAs = PF_NCCL_CONFIG_UNDEF_INT;
    cfg->maxCTAs = PF_NCCL_CONFIG_UNDEF_INT;
    cfg->netName = NULL;
    cfg->splitShare = PF_NCCL_CONFIG_UNDEF_INT;
}

pf_err pf_nccl_load(struct pf_nccl *n, char *err)
{
    char tried[PF_ERRLEN / 2];
    pf_err rc = PF_OK;

    memset(n, 0, sizeof(*n));
    n->dl = open_first(NCCL_ENV, nccl_names,
                       sizeof(nccl_names) / sizeof(nccl_names[0]), n->path,
                       sizeof(n->path), tried, sizeof(tried));
    if (!n->dl)
        return pf_fail(err, PF_ERR_UNSUPPORTED, "NCCL not found (tried %s)",
                       tried);

#define NEED(f) \
    if (rc == PF_OK) rc = need(n->dl, n->path, #f, &n->f, err)
    NEED(ncclGetVersion);
    NEED(ncclGetUniqueId);
    NEED(ncclCommInitRankConfig);
    NEED(ncclCommSplit);
    NEED(ncclCommDestroy);
    NEED(ncclCommAbort);
    NEED(ncclCommGetAsyncError);
    NEED(ncclGetErrorString);
    NEED(ncclAllReduce);
    NEED(ncclGroupStart);
    NEED(ncclGroupEnd);
#undef NEED
    if (rc != PF_OK) {
        pf_nccl_unload(n);
        return rc;
    }
    /* optional: better messages where present */
    void *sym = dlsym(n->dl, "ncclGetLastError");
    memcpy(&n->ncclGetLastError, &sym, sizeof(sym));
    return PF_OK;
}

void pf_nccl_unload(struct pf_nccl *n)
{
    if (n->dl)
        dlclose(n->dl);
    memset(n, 0, sizeof(*n));
}

const char *pf_nccl_strerror(const struct pf_nccl *n, pf_nccl_result_t r)
{
    const char *s = (n && n->ncclGetErrorString) ? n->ncclGetErrorString(r)
                                                 : NULL;
    return s ? s : "unknown NCCL error";
}

pf_err pf_nccl_version(const struct pf_nccl *n, int *version, char *err)
{
    int v = 0;
    pf_nccl_result_t r = n->ncclGetVersion(&v);

    *version = 0;
    if (r != PF_NCCL_SUCCESS)
        return pf_fail(err, PF_ERR_ENGINE, "ncclGetVersion: %s (%d)",
                       pf_nccl_strerror(n, r), (int)r);
    /* NCCL_VERSION() was X*1000+Y*100+Z up to 2.8 */
    if (v > 0 && v < 10000)
        v = (v / 1000) * 10000 + ((v % 1000) / 100) * 100 + v % 100;
    *version = v;
    return PF_OK;
}

void pf_nccl_version_str(int version, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", version / 10000, (version / 100) % 100,
             version % 100);
}
