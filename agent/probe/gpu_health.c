/* GPU health from NVML and the kernel log (gpu_health.h). */
#include "gpu_health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xid.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "../util/nvmllib.h"
#include "../util/sanitize.h"

/* The kernel log is read to its end, at most this much. */
#define KMSG_MAX_BYTES (32u << 20)
/* Events drained per read: a storm of XIDs must not hold the run. */
#define EVENTS_MAX 4096

struct pf_gpu_session {
    struct pf_nvml lib;
    bool inited;                      /* nvmlInit succeeded */
    int n;                            /* handles in dev */
    pf_nvml_device_t dev[PF_MAX_GPUS];
    pf_nvml_event_set_t set;
    double t0;                        /* the counters' "before" */
};

static const char *const field_names[PF_GF_COUNT] = {
    [PF_GF_PCI] = "pci", [PF_GF_UUID] = "uuid", [PF_GF_SERIAL] = "serial",
    [PF_GF_ECC_MODE] = "ecc_mode", [PF_GF_ECC_VOLATILE] = "ecc_volatile",
    [PF_GF_ECC_AGGREGATE] = "ecc_aggregate",
    [PF_GF_RETIRED_PAGES] = "retired_pages",
    [PF_GF_RETIRED_PENDING] = "retired_pending",
    [PF_GF_REMAPPED_ROWS] = "remapped_rows",
    [PF_GF_NVLINK_STATE] = "nvlink_state",
    [PF_GF_NVLINK_ERRORS] = "nvlink_errors", [PF_GF_PCIE_LINK] = "pcie_link",
    [PF_GF_PCIE_MAX] = "pcie_max", [PF_GF_PCIE_REPLAY] = "pcie_replay",
    [PF_GF_CLOCK_EVENTS] = "clock_events", [PF_GF_PERSISTENCE] = "persistence",
    [PF_GF_MIG] = "mig", [PF_GF_XID_EVENTS] = "xid_events",
};

const char *pf_gpu_field_name(enum pf_gpu_field f)
{
    return (unsigned)f < PF_GF_COUNT ? field_names[f] : "?";
}

const char *pf_gpu_field_state_name(enum pf_gpu_field_state s)
{
    switch (s) {
    case PF_GFS_OK: return "read";
    case PF_GFS_UNSUPPORTED: return "not supported";
    case PF_GFS_ERROR: return "error";
    case PF_GFS_UNREAD: return "not read";
    }
    return "?";
}

void pf_gpu_label(const struct pf_gpu_state *g, char *out, size_t len)
{
    snprintf(out, len, "GPU %d (%s, serial %s)", g->index,
             g->bus_id[0] ? g->bus_id : "bus ?",
             g->serial[0] ? g->serial : "?");
}

/* Record one call's outcome for a field; true when it read. */
static bool note(const struct pf_nvml *n, struct pf_gpu_state *g,
                 enum pf_gpu_field f, pf_nvml_return_t r, const char *call)
{
    if (r == PF_NVML_SUCCESS) {
        g->f[f] = PF_GFS_OK;
        return true;
    }
    if (r == PF_NVML_ERROR_NOT_SUPPORTED) {
        g->f[f] = PF_GFS_UNSUPPORTED;
        return false;
    }
    g->f[f] = PF_GFS_ERROR;
    if (r == PF_NVML_ERROR_GPU_IS_LOST && !g->lost) {
        g->lost = true;
        snprintf(g->lost_in, sizeof(g->lost_in), "%s", call);
    }
    if (!g->field_err[0])
        snprintf(g->field_err, sizeof(g->field_err), "%s: %s (%d)", call,
                 pf_nvml_strerror(n, r), r);
    return false;
}

/* An entry point the driver lacks: the field is not supported. */
#define CALL(G, F, FN, ...)                                                 \
    (s->lib.FN ? note(&s->lib, G, F, s->lib.FN(__VA_ARGS__), #FN)           \
               : ((G)->f[F] = PF_GFS_UNSUPPORTED, false))

static void read_ids(struct pf_gpu_session *s, int i, struct pf_gpu_state *g)
{
    pf_nvml_pci_info_t pci;
    char buf[PF_NVML_UUID_LEN + 1];

    memset(&pci, 0, sizeof(pci));
    if (CALL(g, PF_GF_PCI, nvmlDeviceGetPciInfo_v3, s->dev[i], &pci)) {
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        pf_sanitize(g->bus_id, sizeof(g->bus_id), pci.busId);
    }
    memset(buf, 0, sizeof(buf));
    if (CALL(g, PF_GF_UUID, nvmlDeviceGetUUID, s->dev[i], buf,
             PF_NVML_UUID_LEN))
        pf_sanitize(g->uuid, sizeof(g->uuid), buf);
    memset(buf, 0, sizeof(buf));
    if (CALL(g, PF_GF_SERIAL, nvmlDeviceGetSerial, s->dev[i], buf,
             PF_NVML_SERIAL_LEN))
        pf_sanitize(g->serial, sizeof(g->serial), buf);
    memset(buf, 0, sizeof(buf));
    if (s->lib.nvmlDeviceGetName &&
        s->lib.nvmlDeviceGetName(s->dev[i], buf, PF_NVML_NAME_LEN) ==
            PF_NVML_SUCCESS)
        pf_sanitize(g->name, sizeof(g->name), buf);
}

static void read_memory(struct pf_gpu_session *s, int i,
                        struct pf_gpu_state *g)
{
    pf_nvml_enable_t cur = 0, pend = 0;
    unsigned long long v = 0;
    unsigned count, corr = 0, unc = 0, rp = 0, rf = 0;

    if (CALL(g, PF_GF_ECC_MODE, nvmlDeviceGetEccMode, s->dev[i], &cur, &pend)) {
        g->ecc_current = cur;
        g->ecc_pending = pend;
    }
    if (CALL(g, PF_GF_ECC_VOLATILE, nvmlDeviceGetTotalEccErrors, s->dev[i],
             PF_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, PF_NVML_VOLATILE_ECC, &v))
        g->ecc_volatile_unc = v;
    v = 0;
    if (CALL(g, PF_GF_ECC_AGGREGATE, nvmlDeviceGetTotalEccErrors, s->dev[i],
             PF_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, PF_NVML_AGGREGATE_ECC, &v))
        g->ecc_aggregate_unc = v;
    /* Page retirement (before Ampere): the count alone, a buffer of 0
     * answers INSUFFICIENT_SIZE with the count set. */
    if (s->lib.nvmlDeviceGetRetiredPages_v2) {
        unsigned long long addr[1], ts[1];
        pf_nvml_return_t r;
        count = 0;
        r = s->lib.nvmlDeviceGetRetiredPages_v2(
            s->dev[i], PF_NVML_RETIRE_MULTIPLE_SBE, &count, addr, ts);
        if (r == PF_NVML_ERROR_INSUFFICIENT_SIZE)
            r = PF_NVML_SUCCESS;
        if (note(&s->lib, g, PF_GF_RETIRED_PAGES, r,
                 "nvmlDeviceGetRetiredPages_v2")) {
            g->retired_sbe = count;
            count = 0;
            r = s->lib.nvmlDeviceGetRetiredPages_v2(
                s->dev[i], PF_NVML_RETIRE_DBE, &count, addr, ts);
            if (r == PF_NVML_ERROR_INSUFFICIENT_SIZE)
                r = PF_NVML_SUCCESS;
            if (note(&s->lib, g, PF_GF_RETIRED_PAGES, r,
                     "nvmlDeviceGetRetiredPages_v2"))
                g->retired_dbe = count;
        }
    } else {
        g->f[PF_GF_RETIRED_PAGES] = PF_GFS_UNSUPPORTED;
    }
    cur = 0;
    if (CALL(g, PF_GF_RETIRED_PENDING, nvmlDeviceGetRetiredPagesPendingStatus,
             s->dev[i], &cur))
        g->retired_pending = cur == PF_NVML_FEATURE_ENABLED;
    if (CALL(g, PF_GF_REMAPPED_ROWS, nvmlDeviceGetRemappedRows, s->dev[i],
             &corr, &unc, &rp, &rf)) {
        g->remap_corr = corr;
        g->remap_unc = unc;
        g->remap_pending = rp != 0;
        g->remap_failure = rf != 0;
    }
}

/* Link states: links 0, 1, ... until NVML refuses the index. A link it
 * says it does not support (a gap some SKUs have) is skipped, not counted;
 * a GPU without NVLink says so for link 0. */
static void read_links(struct pf_gpu_session *s, int i, struct pf_gpu_state *g)
{
    g->nvlinks = g->nvlinks_active = 0;
    memset(g->nvlink_present, 0, sizeof(g->nvlink_present));
    memset(g->nvlink_active, 0, sizeof(g->nvlink_active));
    if (!s->lib.nvmlDeviceGetNvLinkState) {
        g->f[PF_GF_NVLINK_STATE] = PF_GFS_UNSUPPORTED;
        return;
    }
    for (unsigned l = 0; l < PF_MAX_NVLINKS; l++) {
        pf_nvml_enable_t on = 0;
        pf_nvml_return_t r = s->lib.nvmlDeviceGetNvLinkState(s->dev[i], l, &on);

        if (r == PF_NVML_ERROR_INVALID_ARGUMENT)
            break;                    /* past the GPU's last link */
        if (r == PF_NVML_ERROR_NOT_SUPPORTED)
            continue;
        if (!note(&s->lib, g, PF_GF_NVLINK_STATE, r,
                  "nvmlDeviceGetNvLinkState"))
            break;
        g->nvlink_present[l] = true;
        g->nvlink_active[l] = on == PF_NVML_FEATURE_ENABLED;
        g->nvlinks++;
        g->nvlinks_active += g->nvlink_active[l];
    }
    /* no link answered: the GPU has no NVLink (or NVML cannot tell) */
    if (g->nvlinks == 0 && g->f[PF_GF_NVLINK_STATE] != PF_GFS_ERROR)
        g->f[PF_GF_NVLINK_STATE] = PF_GFS_UNSUPPORTED;
}

static void read_link_errs(struct pf_gpu_session *s, int i,
                           struct pf_gpu_state *g, struct pf_nvlink_errs *out)
{
    static const int which[] = {
        PF_NVML_NVLINK_ERROR_DL_REPLAY, PF_NVML_NVLINK_ERROR_DL_RECOVERY,
        PF_NVML_NVLINK_ERROR_DL_CRC_FLIT, PF_NVML_NVLINK_ERROR_DL_CRC_DATA,
    };
    uint64_t *slot[] = { &out->replay, &out->recovery, &out->crc_flit,
                         &out->crc_data };

    memset(out, 0, sizeof(*out));
    if (g->nvlinks == 0 || g->lost)
        return;
    for (int l = 0; l < PF_MAX_NVLINKS; l++) {
        if (!g->nvlink_active[l])
            continue;
        for (int k = 0; k < 4; k++) {
            unsigned long long v = 0;
            if (!CALL(g, PF_GF_NVLINK_ERRORS, nvmlDeviceGetNvLinkErrorCounter,
                      s->dev[i], (unsigned)l, which[k], &v))
                return;
            *slot[k] += v;
        }
    }
}

static void read_pcie(struct pf_gpu_session *s, int i, struct pf_gpu_state *g,
                      unsigned *gen, unsigned *width)
{
    unsigned a = 0, b = 0;

    if (CALL(g, PF_GF_PCIE_LINK, nvmlDeviceGetCurrPcieLinkGeneration,
             s->dev[i], &a) &&
        CALL(g, PF_GF_PCIE_LINK, nvmlDeviceGetCurrPcieLinkWidth, s->dev[i],
             &b)) {
        *gen = a;
        *width = b;
    }
}

static void read_replay(struct pf_gpu_session *s, int i,
                        struct pf_gpu_state *g, unsigned *out)
{
    unsigned v = 0;
    if (CALL(g, PF_GF_PCIE_REPLAY, nvmlDeviceGetPcieReplayCounter, s->dev[i],
             &v))
        *out = v;
}

static bool read_clocks(struct pf_gpu_session *s, int i,
                        struct pf_gpu_state *g, uint64_t *out)
{
    unsigned long long v = 0;
    if (!CALL(g, PF_GF_CLOCK_EVENTS, nvmlDeviceGetCurrentClocksEventReasons,
              s->dev[i], &v))
        return false;
    *out = v;
    return true;
}

static void read_static(struct pf_gpu_session *s, int i,
                        struct pf_gpu_state *g)
{
    pf_nvml_enable_t pm = 0;
    unsigned a = 0, b = 0;

    read_ids(s, i, g);
    if (g->lost)
        return;
    read_memory(s, i, g);
    read_links(s, i, g);
    read_link_errs(s, i, g, &g->nvl_before);
    read_pcie(s, i, g, &g->pcie_gen, &g->pcie_width);
    if (CALL(g, PF_GF_PCIE_MAX, nvmlDeviceGetMaxPcieLinkGeneration, s->dev[i],
             &a) &&
        CALL(g, PF_GF_PCIE_MAX, nvmlDeviceGetMaxPcieLinkWidth, s->dev[i], &b)) {
        g->pcie_max_gen = a;
        g->pcie_max_width = b;
    }
    read_replay(s, i, g, &g->pcie_replay_before);
    read_clocks(s, i, g, &g->clocks_before);
    if (CALL(g, PF_GF_PERSISTENCE, nvmlDeviceGetPersistenceMode, s->dev[i],
             &pm))
        g->persistence = pm == PF_NVML_FEATURE_ENABLED;
    a = b = 0;
    if (CALL(g, PF_GF_MIG, nvmlDeviceGetMigMode, s->dev[i], &a, &b)) {
        g->mig_current = a;
        g->mig_pending = b;
    }
}

static void arm_events(struct pf_gpu_session *s, struct pf_gpu_health *h)
{
    pf_nvml_return_t r;
    int armed = 0;

    if (!s->lib.nvmlEventSetCreate || !s->lib.nvmlDeviceRegisterEvents ||
        !s->lib.nvmlEventSetWait_v2 || !s->lib.nvmlEventSetFree) {
        snprintf(h->events_note, sizeof(h->events_note), "this NVML has no "
                 "event API: XIDs during the run not watched");
        for (int i = 0; i < h->stored; i++)
            h->gpus[i].f[PF_GF_XID_EVENTS] = PF_GFS_UNSUPPORTED;
        return;
    }
    r = s->lib.nvmlEventSetCreate(&s->set);
    if (r != PF_NVML_SUCCESS) {
        s->set = NULL;
        snprintf(h->events_note, sizeof(h->events_note), "nvmlEventSetCreate:"
                 " %s (%d): XIDs during the run not watched",
                 pf_nvml_strerror(&s->lib, r), r);
        return;
    }
    for (int i = 0; i < s->n; i++) {
        struct pf_gpu_state *g = &h->gpus[i];
        if (g->lost)
            continue;
        if (note(&s->lib, g, PF_GF_XID_EVENTS,
                 s->lib.nvmlDeviceRegisterEvents(s->dev[i], PF_NVML_EVENT_XID,
                                                 s->set),
                 "nvmlDeviceRegisterEvents"))
            armed++;
    }
    h->events_armed = armed > 0;
    if (armed < s->n)
        snprintf(h->events_note, sizeof(h->events_note), "XID events armed on "
                 "%d of %d GPUs", armed, s->n);
}

static void drain_events(struct pf_gpu_session *s, struct pf_gpu_health *h)
{
    if (!s->set)
        return;
    for (int k = 0; k < EVENTS_MAX; k++) {
        pf_nvml_event_data_t d;
        memset(&d, 0, sizeof(d));
        if (s->lib.nvmlEventSetWait_v2(s->set, &d, 0) != PF_NVML_SUCCESS)
            return;                   /* TIMEOUT: nothing more */
        if (!(d.eventType & PF_NVML_EVENT_XID))
            continue;
        for (int i = 0; i < s->n; i++)
            if (s->dev[i] == d.device) {
                pf_xid_list_add(&h->gpus[i].xid_run, (int)d.eventData);
                break;
            }
    }
}

struct kmsg_ctx {
    struct pf_gpu_health *h;
};

static void on_kernel_xid(void *ctx, const struct pf_xid_hit *hit)
{
    struct pf_gpu_health *h = ((struct kmsg_ctx *)ctx)->h;

    for (int i = 0; i < h->stored; i++)
        if (pf_xid_bus_matches(h->gpus[i].bus_id, hit)) {
            pf_xid_list_add(&h->gpus[i].xid_boot, hit->xid);
            return;
        }
    for (int i = 0; i < h->nstray; i++)
        if (h->stray[i].xid == hit->xid && !strcmp(h->stray[i].bus, hit->busid)) {
            h->stray[i].count++;
            return;
        }
    if (h->nstray < PF_MAX_XIDS) {
        struct pf_xid_stray *st = &h->stray[h->nstray++];
        snprintf(st->bus, sizeof(st->bus), "%s", hit->busid);
        st->xid = hit->xid;
        st->count = 1;
    }
}

static void read_kernel_log(const char *dev_root, struct pf_gpu_health *h)
{
    char path[PF_PATH_MAX], err[PF_ERRLEN];
    struct kmsg_ctx ctx = { h };
    int hits = 0;

    if (pf_path_join(path, sizeof(path), dev_root, "/dev/kmsg", err) != PF_OK) {
        snprintf(h->kmsg_note, sizeof(h->kmsg_note), "%s", err);
        return;
    }
    if (pf_xid_read_log(path, KMSG_MAX_BYTES, on_kernel_xid, &ctx, &hits,
                        err) != PF_OK) {
        snprintf(h->kmsg_note, sizeof(h->kmsg_note), "kernel log not read "
                 "(%s): XIDs since boot not checked", err);
        return;
    }
    h->kmsg_read = true;
    snprintf(h->kmsg_note, sizeof(h->kmsg_note), "%d NVRM Xid line(s) in %s",
             hits, path);
}

static void session_close(struct pf_gpu_session **sp)
{
    struct pf_gpu_session *s = *sp;

    if (!s)
        return;
    if (s->set && s->lib.nvmlEventSetFree)
        s->lib.nvmlEventSetFree(s->set);
    if (s->inited)
        s->lib.nvmlShutdown();
    pf_nvml_unload(&s->lib);
    free(s);
    *sp = NULL;
}

/* Load, initialise, name every GPU; NULL (h->nvml_error set) when NVML
 * cannot be used at all. */
static struct pf_gpu_session *session_open(struct pf_gpu_health *h)
{
    struct pf_gpu_session *s = calloc(1, sizeof(*s));
    char err[PF_ERRLEN];
    unsigned count = 0;
    pf_nvml_return_t r;

    if (!s) {
        snprintf(h->nvml_error, sizeof(h->nvml_error), "out of memory");
        return NULL;
    }
    if (pf_nvml_load(&s->lib, err) != PF_OK) {
        snprintf(h->nvml_error, sizeof(h->nvml_error), "%s", err);
        free(s);
        return NULL;
    }
    snprintf(h->nvml_path, sizeof(h->nvml_path), "%s", s->lib.path);
    pf_nvml_missing(&s->lib, h->nvml_missing, sizeof(h->nvml_missing));
    r = s->lib.nvmlInit_v2();
    if (r != PF_NVML_SUCCESS) {
        snprintf(h->nvml_error, sizeof(h->nvml_error), "nvmlInit_v2: %s (%d)",
                 pf_nvml_strerror(&s->lib, r), r);
        session_close(&s);
        return NULL;
    }
    s->inited = true;
    r = s->lib.nvmlDeviceGetCount_v2(&count);
    if (r != PF_NVML_SUCCESS) {
        snprintf(h->nvml_error, sizeof(h->nvml_error),
                 "nvmlDeviceGetCount_v2: %s (%d)",
                 pf_nvml_strerror(&s->lib, r), r);
        session_close(&s);
        return NULL;
    }
    h->nvml_loaded = true;
    h->count = (int)count;
    s->n = h->stored = count < PF_MAX_GPUS ? (int)count : PF_MAX_GPUS;
    for (int i = 0; i < s->n; i++) {
        struct pf_gpu_state *g = &h->gpus[i];
        g->index = i;
        r = s->lib.nvmlDeviceGetHandleByIndex_v2((unsigned)i, &s->dev[i]);
        /* GPU_IS_LOST marks it lost (note); another refusal (no
         * permission: a GPU this container was not given) leaves it
         * unread, never blamed */
        if (r != PF_NVML_SUCCESS) {
            s->dev[i] = NULL;
            note(&s->lib, g, PF_GF_PCI, r, "nvmlDeviceGetHandleByIndex_v2");
        }
    }
    return s;
}

static void read_driver(struct pf_gpu_session *s, struct pf_gpu_health *h)
{
    char buf[PF_NVML_DRIVER_LEN + 1];
    int v = 0;

    memset(buf, 0, sizeof(buf));
    if (s->lib.nvmlSystemGetDriverVersion &&
        s->lib.nvmlSystemGetDriverVersion(buf, PF_NVML_DRIVER_LEN) ==
            PF_NVML_SUCCESS)
        pf_sanitize(h->driver_version, sizeof(h->driver_version), buf);
    if (s->lib.nvmlSystemGetCudaDriverVersion_v2 &&
        s->lib.nvmlSystemGetCudaDriverVersion_v2(&v) == PF_NVML_SUCCESS)
        h->cuda_driver_version = v;
}

void pf_probe_gpu_health(struct pf_run *run)
{
    struct pf_gpu_health *h = &run->node.gpuh;
    double t0 = pf_now_s();
    struct pf_gpu_session *s;

    pf_gpu_health_close(run);
    memset(h, 0, sizeof(*h));
    s = session_open(h);
    if (s) {
        read_driver(s, h);
        for (int i = 0; i < s->n; i++)
            if (s->dev[i])
                read_static(s, i, &h->gpus[i]);
        arm_events(s, h);
        s->t0 = pf_now_s();
        run->gpu_session = s;
    }
    read_kernel_log(run->cfg.dev_root, h);
    h->probe_ms = (pf_now_s() - t0) * 1000.0;
    pf_debug("gpu health: %s, %d GPU(s), %.0f ms",
             h->nvml_loaded ? "NVML" : h->nvml_error, h->count, h->probe_ms);
}

void pf_gpu_health_begin(struct pf_run *run)
{
    struct pf_gpu_session *s = run->gpu_session;
    struct pf_gpu_health *h = &run->node.gpuh;
    double t0 = pf_now_s();

    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        struct pf_gpu_state *g = &h->gpus[i];
        if (!s->dev[i] || g->lost)
            continue;
        read_link_errs(s, i, g, &g->nvl_before);
        read_replay(s, i, g, &g->pcie_replay_before);
    }
    drain_events(s, h);
    s->t0 = pf_now_s();
    h->probe_ms += (s->t0 - t0) * 1000.0;
}

/* The "after" read: counters, clocks and the link under load, events. */
static void read_after(struct pf_gpu_session *s, struct pf_gpu_health *h,
                       bool loaded)
{
    for (int i = 0; i < s->n; i++) {
        struct pf_gpu_state *g = &h->gpus[i];
        if (!s->dev[i] || g->lost)
            continue;
        read_link_errs(s, i, g, &g->nvl_after);
        read_replay(s, i, g, &g->pcie_replay_after);
        g->clocks_after_read = read_clocks(s, i, g, &g->clocks_after);
        if (loaded)
            read_pcie(s, i, g, &g->pcie_gen_run, &g->pcie_width_run);
    }
    drain_events(s, h);
}

void pf_gpu_health_end(struct pf_run *run)
{
    struct pf_gpu_session *s = run->gpu_session;
    struct pf_gpu_health *h = &run->node.gpuh;
    double t0 = pf_now_s();

    if (!s)
        return;
    read_after(s, h, true);
    h->window = true;
    h->window_s = t0 - s->t0;
    h->probe_ms += (pf_now_s() - t0) * 1000.0;
}

void pf_gpu_health_finish(struct pf_run *run)
{
    struct pf_gpu_session *s = run->gpu_session;
    struct pf_gpu_health *h = &run->node.gpuh;
    double t0 = pf_now_s();

    if (!s)
        return;
    if (!h->window) {
        read_after(s, h, false);
        h->window_s = t0 - s->t0;
    } else {
        drain_events(s, h);
    }
    h->finished = true;
    pf_gpu_health_close(run);
    h->probe_ms += (pf_now_s() - t0) * 1000.0;
}

void pf_gpu_health_close(struct pf_run *run)
{
    session_close(&run->gpu_session);
}

void pf_gpu_watch_read(struct pf_gpu_session **sp, struct pf_gpu_health *out)
{
    struct pf_gpu_session *s = *sp;
    double t0 = pf_now_s();

    /* keep the previous read's "after" as this one's "before" */
    if (s && out->nvml_loaded) {
        for (int i = 0; i < out->stored; i++) {
            struct pf_gpu_state *g = &out->gpus[i];
            g->nvl_before = g->nvl_after;
            g->pcie_replay_before = g->pcie_replay_after;
            g->clocks_before = g->clocks_after;
        }
        for (int i = 0; i < s->n; i++) {
            struct pf_gpu_state *g = &out->gpus[i];
            memset(&g->xid_run, 0, sizeof(g->xid_run));
            if (s->dev[i] && !g->lost)
                read_memory(s, i, g);
            if (s->dev[i] && !g->lost)
                read_links(s, i, g);
        }
        read_after(s, out, false);
        out->window_s = t0 - s->t0;
        s->t0 = t0;
        out->probe_ms = (pf_now_s() - t0) * 1000.0;
        return;
    }
    memset(out, 0, sizeof(*out));
    s = session_open(out);
    if (!s)
        return;
    read_driver(s, out);
    for (int i = 0; i < s->n; i++)
        if (s->dev[i])
            read_static(s, i, &out->gpus[i]);
    for (int i = 0; i < s->n; i++) {
        out->gpus[i].nvl_after = out->gpus[i].nvl_before;
        out->gpus[i].pcie_replay_after = out->gpus[i].pcie_replay_before;
        out->gpus[i].clocks_after = out->gpus[i].clocks_before;
        out->gpus[i].clocks_after_read =
            out->gpus[i].f[PF_GF_CLOCK_EVENTS] == PF_GFS_OK;
    }
    arm_events(s, out);
    s->t0 = t0;
    *sp = s;
    out->probe_ms = (pf_now_s() - t0) * 1000.0;
}

void pf_gpu_watch_close(struct pf_gpu_session **sp)
{
    session_close(sp);
}
