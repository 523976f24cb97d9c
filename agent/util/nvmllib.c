#include "nvmllib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_ENV "EFA_PREFLIGHT_NVML"
#define NVML_NAME "libnvidia-ml.so.1"

static void set_slot(void *slot, void *sym)
{
    memcpy(slot, &sym, sizeof(sym));
}

/* The optional entry points, by name and slot offset: one list for
 * resolving and for naming what a driver lacks. */
#define OPT(f) { #f, offsetof(struct pf_nvml, f) }
static const struct {
    const char *name;
    size_t off;
} optional[] = {
    OPT(nvmlSystemGetDriverVersion),
    OPT(nvmlSystemGetCudaDriverVersion_v2),
    OPT(nvmlDeviceGetPciInfo_v3),
    OPT(nvmlDeviceGetUUID),
    OPT(nvmlDeviceGetSerial),
    OPT(nvmlDeviceGetName),
    OPT(nvmlDeviceGetEccMode),
    OPT(nvmlDeviceGetTotalEccErrors),
    OPT(nvmlDeviceGetRetiredPages_v2),
    OPT(nvmlDeviceGetRetiredPagesPendingStatus),
    OPT(nvmlDeviceGetRemappedRows),
    OPT(nvmlDeviceGetNvLinkState),
    OPT(nvmlDeviceGetNvLinkErrorCounter),
    OPT(nvmlDeviceGetCurrPcieLinkGeneration),
    OPT(nvmlDeviceGetCurrPcieLinkWidth),
    OPT(nvmlDeviceGetMaxPcieLinkGeneration),
    OPT(nvmlDeviceGetMaxPcieLinkWidth),
    OPT(nvmlDeviceGetPcieReplayCounter),
    OPT(nvmlDeviceGetCurrentClocksEventReasons),
    OPT(nvmlDeviceGetPersistenceMode),
    OPT(nvmlDeviceGetMigMode),
    OPT(nvmlEventSetCreate),
    OPT(nvmlDeviceRegisterEvents),
    OPT(nvmlEventSetWait_v2),
    OPT(nvmlEventSetFree),
};
#undef OPT
#define N_OPTIONAL (sizeof(optional) / sizeof(optional[0]))

static void *slot_value(const struct pf_nvml *n, size_t off)
{
    void *v;
    memcpy(&v, (const char *)n + off, sizeof(v));
    return v;
}

pf_err pf_nvml_load(struct pf_nvml *n, char *err)
{
    const char *over = getenv(NVML_ENV);
    const char *name = over && *over ? over : NVML_NAME;
    static const struct {
        const char *name;
        size_t off;
    } required[] = {
        { "nvmlInit_v2", offsetof(struct pf_nvml, nvmlInit_v2) },
        { "nvmlShutdown", offsetof(struct pf_nvml, nvmlShutdown) },
        { "nvmlErrorString", offsetof(struct pf_nvml, nvmlErrorString) },
        { "nvmlDeviceGetCount_v2",
          offsetof(struct pf_nvml, nvmlDeviceGetCount_v2) },
        { "nvmlDeviceGetHandleByIndex_v2",
          offsetof(struct pf_nvml, nvmlDeviceGetHandleByIndex_v2) },
    };

    memset(n, 0, sizeof(*n));
    n->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!n->dl) {
        const char *why = dlerror();
        if (over && *over)
            return pf_fail(err, PF_ERR_UNSUPPORTED, "NVML not found (%s=%s: "
                           "%s)", NVML_ENV, over, why ? why : "?");
        return pf_fail(err, PF_ERR_UNSUPPORTED, "NVML not found (tried %s: "
                       "the NVIDIA driver's library is not mounted)", name);
    }
    snprintf(n->path, sizeof(n->path), "%s", name);
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        void *sym = dlsym(n->dl, required[i].name);
        if (!sym) {
            pf_fail(err, PF_ERR_UNSUPPORTED, "%s lacks symbol %s", n->path,
                    required[i].name);
            pf_nvml_unload(n);
            return PF_ERR_UNSUPPORTED;
        }
        set_slot((char *)n + required[i].off, sym);
    }
    for (size_t i = 0; i < N_OPTIONAL; i++)
        set_slot((char *)n + optional[i].off,
                 dlsym(n->dl, optional[i].name));
    /* Drivers before 535 name the clock-event call by its old name. */
    if (!n->nvmlDeviceGetCurrentClocksEventReasons)
        set_slot(&n->nvmlDeviceGetCurrentClocksEventReasons,
                 dlsym(n->dl, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    return PF_OK;
}

void pf_nvml_unload(struct pf_nvml *n)
{
    if (n->dl)
        dlclose(n->dl);
    memset(n, 0, sizeof(*n));
}

const char *pf_nvml_strerror(const struct pf_nvml *n, pf_nvml_return_t r)
{
    const char *s = n && n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;
    return s ? s : "unknown NVML error";
}

void pf_nvml_missing(const struct pf_nvml *n, char *out, size_t len)
{
    size_t used = 0;

    if (len == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < N_OPTIONAL; i++) {
        int w;
        if (slot_value(n, optional[i].off))
            continue;
        w = snprintf(out + used, len - used, "%s%s", used ? ", " : "",
                     optional[i].name);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}
