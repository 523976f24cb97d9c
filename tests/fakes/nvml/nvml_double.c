/* A test double of the NVML entry points agent/util/nvmllib.h loads, for
 * CI machines without a GPU. The agent loads it through
 * EFA_PREFLIGHT_NVML. Its GPUs are healthy H200s unless a fixture says
 * otherwise.
 *
 * PF_NVML_FIXTURE=path names a file of "key value" lines ('#' comments):
 *   init CODE              nvmlInit_v2 returns CODE (e.g. 9, driver not
 *                          loaded)
 *   gpus N                 devices (default 8, at most 16)
 *   driver V, cuda N       nvmlSystemGetDriverVersion / CudaDriverVersion
 *                          (default 550.54.15, 12040)
 *   gpu.I.KEY VALUE        GPU I (or * for all) field KEY, one of
 *     serial, uuid, bus    names (default serial 1650000000I, bus
 *                          00000000:1I:00.0)
 *     lost 1               every call on it: NVML_ERROR_GPU_IS_LOST
 *     handle_lost 1        nvmlDeviceGetHandleByIndex_v2 says so (4: it
 *                          says NVML_ERROR_NO_PERMISSION instead)
 *     ecc_mode, ecc_volatile, ecc_aggregate, retired_sbe, retired_dbe,
 *     retired_pending, remap_corr, remap_unc, remap_pending,
 *     remap_failure, nvlinks (18), nvlink_active (all), pcie_gen (5),
 *     pcie_width (16), pcie_max_gen (5), pcie_max_width (16),
 *     pcie_replay, persistence (1), mig (0), clocks (hex bits)
 *     nvlink_recovery_step, nvlink_replay_step, nvlink_crc_step,
 *     pcie_replay_step     added to the counter at each read
 *     pcie_gen_after, clocks_after
 *                          what the second and later reads return
 *     xid N                one XID event waiting for the event set
 *     nvlink_gap L         link L answers NOT_SUPPORTED (a gap)
 *   gpu.I.FIELD notsupported
 *                          NVML_ERROR_NOT_SUPPORTED for FIELD: serial,
 *                          uuid, pci, ecc_mode, ecc, retired,
 *                          retired_pending, remap, nvlink, nvlink_errors,
 *                          pcie, pcie_max, pcie_replay, clocks,
 *                          persistence, mig, events
 *
 * Process-wide state, like the library it stands in for. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXG 16

typedef int nvmlReturn_t;
enum { OK = 0, E_UNINIT = 1, E_ARG = 2, E_NOTSUP = 3, E_SIZE = 7,
       E_TIMEOUT = 10, E_LOST = 15 };

enum key {
    K_LOST, K_HANDLE_LOST, K_ECC_MODE, K_ECC_VOL, K_ECC_AGG, K_RET_SBE,
    K_RET_DBE, K_RET_PENDING, K_REMAP_CORR, K_REMAP_UNC, K_REMAP_PENDING,
    K_REMAP_FAILURE, K_NVLINKS, K_NVLINK_ACTIVE, K_PCIE_GEN, K_PCIE_WIDTH,
    K_PCIE_MAX_GEN, K_PCIE_MAX_WIDTH, K_PCIE_REPLAY, K_PERSIST, K_MIG,
    K_CLOCKS, K_NVL_REC_STEP, K_NVL_REP_STEP, K_NVL_CRC_STEP,
    K_REPLAY_STEP, K_PCIE_GEN_AFTER, K_CLOCKS_AFTER, K_XID, K_NVLINK_GAP,
    K_COUNT
};
static const char *const key_names[K_COUNT] = {
    "lost", "handle_lost", "ecc_mode", "ecc_volatile", "ecc_aggregate",
    "retired_sbe", "retired_dbe", "retired_pending", "remap_corr",
    "remap_unc", "remap_pending", "remap_failure", "nvlinks",
    "nvlink_active", "pcie_gen", "pcie_width", "pcie_max_gen",
    "pcie_max_width", "pcie_replay", "persistence", "mig", "clocks",
    "nvlink_recovery_step", "nvlink_replay_step", "nvlink_crc_step",
    "pcie_replay_step", "pcie_gen_after", "clocks_after", "xid",
    "nvlink_gap",
};

enum nsf {
    N_SERIAL, N_UUID, N_PCI, N_ECC_MODE, N_ECC, N_RETIRED, N_RET_PENDING,
    N_REMAP, N_NVLINK, N_NVLINK_ERR, N_PCIE, N_PCIE_MAX, N_PCIE_REPLAY,
    N_CLOCKS, N_PERSIST, N_MIG, N_EVENTS, N_COUNT
};
static const char *const nsf_names[N_COUNT] = {
    "serial", "uuid", "pci", "ecc_mode", "ecc", "retired", "retired_pending",
    "remap", "nvlink", "nvlink_errors", "pcie", "pcie_max", "pcie_replay",
    "clocks", "persistence", "mig", "events",
};

struct gpu {
    int index;
    long long v[K_COUNT];
    bool notsup[N_COUNT];
    char serial[32], uuid[96], bus[32];
    long long nvl_reads, replay_reads, pcie_reads, clock_reads;
    bool xid_sent, registered;
};

static struct {
    bool loaded, inited;
    int init_rc;
    int n;
    char driver[80];
    int cuda;
    struct gpu g[MAXG];
} st;

typedef struct gpu *nvmlDevice_t;
typedef struct evset { int dummy; } *nvmlEventSet_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

static struct evset the_set;

static void defaults(void)
{
    memset(&st, 0, sizeof(st));
    st.n = 8;
    snprintf(st.driver, sizeof(st.driver), "550.54.15");
    st.cuda = 12040;
    for (int i = 0; i < MAXG; i++) {
        struct gpu *g = &st.g[i];
        g->index = i;
        g->v[K_ECC_MODE] = 1;
        g->v[K_NVLINKS] = 18;
        g->v[K_NVLINK_ACTIVE] = -1;
        g->v[K_PCIE_GEN] = g->v[K_PCIE_MAX_GEN] = 5;
        g->v[K_PCIE_WIDTH] = g->v[K_PCIE_MAX_WIDTH] = 16;
        g->v[K_PERSIST] = 1;
        g->v[K_PCIE_GEN_AFTER] = -1;
        g->v[K_CLOCKS_AFTER] = -1;
        g->v[K_NVLINK_GAP] = -1;
        snprintf(g->serial, sizeof(g->serial), "16500000000%02d", i);
        snprintf(g->uuid, sizeof(g->uuid),
                 "GPU-00000000-0000-0000-0000-0000000000%02d", i);
        snprintf(g->bus, sizeof(g->bus), "00000000:%02X:00.0", 0x18 + i * 0x10);
    }
}

static void set_key(struct gpu *g, const char *key, const char *val)
{
    if (!strcmp(val, "notsupported")) {
        for (int k = 0; k < N_COUNT; k++)
            if (!strcmp(key, nsf_names[k]))
                g->notsup[k] = true;
        return;
    }
    if (!strcmp(key, "serial")) {
        snprintf(g->serial, sizeof(g->serial), "%s", val);
        return;
    }
    if (!strcmp(key, "uuid")) {
        snprintf(g->uuid, sizeof(g->uuid), "%s", val);
        return;
    }
    if (!strcmp(key, "bus")) {
        snprintf(g->bus, sizeof(g->bus), "%s", val);
        return;
    }
    for (int k = 0; k < K_COUNT; k++)
        if (!strcmp(key, key_names[k]))
            g->v[k] = strtoll(val, NULL, 0);
}

static void load_fixture(void)
{
    const char *path = getenv("PF_NVML_FIXTURE");
    char line[512];
    FILE *f;

    defaults();
    st.loaded = true;
    if (!path || !*path || !(f = fopen(path, "r")))
        return;
    while (fgets(line, sizeof(line), f)) {
        char key[128], val[256];
        if (line[0] == '#' || sscanf(line, "%127s %255s", key, val) != 2)
            continue;
        if (!strcmp(key, "init"))
            st.init_rc = atoi(val);
        else if (!strcmp(key, "gpus"))
            st.n = atoi(val) < 0 ? 0 : atoi(val) > MAXG ? MAXG : atoi(val);
        else if (!strcmp(key, "driver"))
            snprintf(st.driver, sizeof(st.driver), "%s", val);
        else if (!strcmp(key, "cuda"))
            st.cuda = atoi(val);
        else if (!strncmp(key, "gpu.", 4)) {
            char *dot = strchr(key + 4, '.');
            if (!dot)
                continue;
            *dot = '\0';
            for (int i = 0; i < MAXG; i++)
                if (!strcmp(key + 4, "*") || atoi(key + 4) == i)
                    set_key(&st.g[i], dot + 1, val);
        }
    }
    fclose(f);
}

/* The common prologue of a device call. */
#define DEV(d, field)                                                      \
    do {                                                                   \
        if (!st.inited) return E_UNINIT;                                   \
        if (!(d)) return E_ARG;                                            \
        if ((d)->v[K_LOST]) return E_LOST;                                 \
        if ((d)->notsup[field]) return E_NOTSUP;                           \
    } while (0)

/* A getter that answers one fixture value (as type T) unless the field is
 * not supported. */
#define READS(fn, T, field, key)                                           \
    nvmlReturn_t fn(nvmlDevice_t d, T *out)                                \
    {                                                                      \
        DEV(d, field);                                                     \
        *out = (T)d->v[key];                                               \
        return OK;                                                         \
    }

nvmlReturn_t nvmlInit_v2(void)
{
    load_fixture();
    if (st.init_rc)
        return st.init_rc;
    st.inited = true;
    return OK;
}

nvmlReturn_t nvmlShutdown(void)
{
    st.inited = false;
    return OK;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case OK: return "Success";
    case E_NOTSUP: return "Not Supported";
    case E_LOST: return "GPU is lost";
    case 9: return "Driver Not Loaded";
    case E_TIMEOUT: return "Timeout";
    }
    return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
    if (!st.inited)
        return E_UNINIT;
    snprintf(v, len, "%s", st.driver);
    return OK;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = st.cuda;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!st.inited)
        return E_UNINIT;
    *n = (unsigned)st.n;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (!st.inited)
        return E_UNINIT;
    if (i >= (unsigned)st.n)
        return E_ARG;
    if (st.g[i].v[K_HANDLE_LOST])
        return st.g[i].v[K_HANDLE_LOST] == 4 ? 4 : E_LOST;
    *d = &st.g[i];
    return OK;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    DEV(d, N_PCI);
    memset(p, 0, sizeof(*p));
    snprintf(p->busId, sizeof(p->busId), "%s", d->bus);
    return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *s, unsigned len)
{
    DEV(d, N_UUID);
    snprintf(s, len, "%s", d->uuid);
    return OK;
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *s, unsigned len)
{
    DEV(d, N_SERIAL);
    snprintf(s, len, "%s", d->serial);
    return OK;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *s, unsigned len)
{
    DEV(d, N_PCI);
    snprintf(s, len, "NVIDIA H200 (double)");
    return OK;
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *cur, int *pend)
{
    DEV(d, N_ECC_MODE);
    *cur = *pend = (int)d->v[K_ECC_MODE];
    return OK;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
                                         unsigned long long *v)
{
    DEV(d, N_ECC);
    if (type != 1)
        return E_ARG;
    *v = (unsigned long long)(counter == 0 ? d->v[K_ECC_VOL] : d->v[K_ECC_AGG]);
    return OK;
}

nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t d, int cause,
                                          unsigned *count,
                                          unsigned long long *addr,
                                          unsigned long long *ts)
{
    unsigned have;

    DEV(d, N_RETIRED);
    (void)addr;
    (void)ts;
    have = (unsigned)(cause == 0 ? d->v[K_RET_SBE] : d->v[K_RET_DBE]);
    if (*count < have) {
        *count = have;
        return E_SIZE;
    }
    *count = have;
    return OK;
}

READS(nvmlDeviceGetRetiredPagesPendingStatus, int, N_RET_PENDING, K_RET_PENDING)

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr,
                                       unsigned *unc, unsigned *pending,
                                       unsigned *failure)
{
    DEV(d, N_REMAP);
    *corr = (unsigned)d->v[K_REMAP_CORR];
    *unc = (unsigned)d->v[K_REMAP_UNC];
    *pending = (unsigned)d->v[K_REMAP_PENDING];
    *failure = (unsigned)d->v[K_REMAP_FAILURE];
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *on)
{
    long long active;

    DEV(d, N_NVLINK);
    if (link >= (unsigned)d->v[K_NVLINKS])
        return d->v[K_NVLINKS] == 0 ? E_NOTSUP : E_ARG;
    if ((long long)link == d->v[K_NVLINK_GAP])
        return E_NOTSUP;
    active = d->v[K_NVLINK_ACTIVE] < 0 ? d->v[K_NVLINKS] : d->v[K_NVLINK_ACTIVE];
    *on = (long long)link < active;
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link,
                                             int counter,
                                             unsigned long long *v)
{
    long long step = 0;

    DEV(d, N_NVLINK_ERR);
    if (link >= (unsigned)d->v[K_NVLINKS] || counter < 0 || counter > 4)
        return E_ARG;
    /* each read of link 0's counters is one "read" of the GPU */
    if (link == 0 && counter == 0)
        d->nvl_reads++;
    switch (counter) {
    case 0: step = d->v[K_NVL_REP_STEP]; break;
    case 1: step = d->v[K_NVL_REC_STEP]; break;
    case 2: case 3: step = d->v[K_NVL_CRC_STEP]; break;   /* flit, data */
    }
    *v = link == 0 ? (unsigned long long)(step * d->nvl_reads) : 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned *g)
{
    DEV(d, N_PCIE);
    d->pcie_reads++;
    *g = (unsigned)(d->pcie_reads > 1 && d->v[K_PCIE_GEN_AFTER] >= 0
                        ? d->v[K_PCIE_GEN_AFTER] : d->v[K_PCIE_GEN]);
    return OK;
}

READS(nvmlDeviceGetCurrPcieLinkWidth, unsigned, N_PCIE, K_PCIE_WIDTH)
READS(nvmlDeviceGetMaxPcieLinkGeneration, unsigned, N_PCIE_MAX, K_PCIE_MAX_GEN)
READS(nvmlDeviceGetMaxPcieLinkWidth, unsigned, N_PCIE_MAX, K_PCIE_MAX_WIDTH)

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned *v)
{
    DEV(d, N_PCIE_REPLAY);
    *v = (unsigned)(d->v[K_PCIE_REPLAY] + d->v[K_REPLAY_STEP] * d->replay_reads++);
    return OK;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d,
                                                    unsigned long long *v)
{
    DEV(d, N_CLOCKS);
    d->clock_reads++;
    *v = (unsigned long long)(d->clock_reads > 1 && d->v[K_CLOCKS_AFTER] >= 0
                                  ? d->v[K_CLOCKS_AFTER] : d->v[K_CLOCKS]);
    return OK;
}

READS(nvmlDeviceGetPersistenceMode, int, N_PERSIST, K_PERSIST)

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pend)
{
    DEV(d, N_MIG);
    *cur = *pend = (unsigned)d->v[K_MIG];
    return OK;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    if (!st.inited)
        return E_UNINIT;
    *set = &the_set;
    return OK;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types,
                                      nvmlEventSet_t set)
{
    DEV(d, N_EVENTS);
    if (set != &the_set || !(types & 0x8ull))
        return E_ARG;
    d->registered = true;
    return OK;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                 unsigned timeoutms)
{
    (void)timeoutms;
    if (set != &the_set)
        return E_ARG;
    for (int i = 0; i < st.n; i++) {
        struct gpu *g = &st.g[i];
        if (g->registered && g->v[K_XID] && !g->xid_sent) {
            g->xid_sent = true;
            memset(data, 0, sizeof(*data));
            data->device = g;
            data->eventType = 0x8ull;
            data->eventData = (unsigned long long)g->v[K_XID];
            return OK;
        }
    }
    return E_TIMEOUT;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    return set == &the_set ? OK : E_ARG;
}
