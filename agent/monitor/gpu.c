/* GPU health between jobs (gpu.h). */
#include "gpu.h"

#include <stdio.h>
#include <string.h>

#include "../probe/gpu_health.h"
#include "../probe/xid.h"
#include "../util/nvmllib.h"

#define CLOCK_FAULTS (PF_NVML_CLOCKS_HW_SLOWDOWN | PF_NVML_CLOCKS_HW_THERMAL | \
                      PF_NVML_CLOCKS_HW_POWER_BRAKE)

void pf_mon_gpu_init(struct pf_mon_gpu *m, int raise_after, int clear_after,
                     const struct pf_instance *it)
{
    memset(m, 0, sizeof(*m));
    m->raise_after = raise_after > 0 ? raise_after : 1;
    m->clear_after = clear_after > 0 ? clear_after : 1;
    m->nvlinks = it ? it->gpu.nvlinks : -1;
    m->gpu_type = it && !strcmp(it->accel_kind, "gpu");
}

/* What is wrong with g in this read (PF_R_None: nothing); why says it. */
static enum pf_reason fault_now(const struct pf_mon_gpu *m,
                                const struct pf_gpu_state *g, int *new_xid,
                                char *why, size_t len)
{
    *new_xid = 0;
    for (int k = 0; k < g->xid_run.n; k++)
        if (pf_xid_info(g->xid_run.x[k].xid)->kind == PF_XID_NODE)
            *new_xid = g->xid_run.x[k].xid;
    if (g->lost) {
        snprintf(why, len, "lost (%s)", g->lost_in);
        return PF_R_GPUFellOffBus;
    }
    if (g->f[PF_GF_REMAPPED_ROWS] == PF_GFS_OK && g->remap_failure) {
        snprintf(why, len, "row remap failed");
        return PF_R_GPURowRemapFailed;
    }
    if ((g->f[PF_GF_REMAPPED_ROWS] == PF_GFS_OK && g->remap_pending) ||
        (g->f[PF_GF_RETIRED_PENDING] == PF_GFS_OK && g->retired_pending)) {
        snprintf(why, len, "%s pending", g->remap_pending ? "row remap"
                                                          : "page retirement");
        return PF_R_GPURowRemapPending;
    }
    if (g->f[PF_GF_ECC_VOLATILE] == PF_GFS_OK && g->ecc_volatile_unc) {
        snprintf(why, len, "%llu uncorrectable ECC error(s)",
                 (unsigned long long)g->ecc_volatile_unc);
        return PF_R_GPUUncorrectableECC;
    }
    if (*new_xid) {
        snprintf(why, len, "XID %d (%s)", *new_xid,
                 pf_xid_info(*new_xid)->what);
        return PF_R_GPUXid;
    }
    if (m->nvlinks > 0 && g->f[PF_GF_NVLINK_STATE] == PF_GFS_OK &&
        g->nvlinks_active < m->nvlinks) {
        snprintf(why, len, "%d of %d NVLink links active", g->nvlinks_active,
                 m->nvlinks);
        return PF_R_NVLinkDown;
    }
    if (g->f[PF_GF_NVLINK_ERRORS] == PF_GFS_OK &&
        g->nvl_after.recovery > g->nvl_before.recovery) {
        snprintf(why, len, "+%llu NVLink recovery errors",
                 (unsigned long long)(g->nvl_after.recovery -
                                      g->nvl_before.recovery));
        return PF_R_NVLinkErrors;
    }
    if (g->f[PF_GF_CLOCK_EVENTS] == PF_GFS_OK && g->clocks_after_read &&
        (g->clocks_after & CLOCK_FAULTS)) {
        snprintf(why, len, "clock event reasons 0x%llx",
                 (unsigned long long)g->clocks_after);
        return PF_R_GPUThrottled;
    }
    return PF_R_None;
}

void pf_mon_gpu_step(struct pf_mon_gpu *m)
{
    m->nchanges = 0;
    pf_gpu_watch_read(&m->s, &m->h);
    m->intervals++;
    for (int i = 0; i < m->h.stored && i < PF_MAX_GPUS; i++) {
        const struct pf_gpu_state *g = &m->h.gpus[i];
        struct pf_mon_gpu_state *st = &m->g[i];
        char why[200], label[160];
        int xid;
        enum pf_reason r = fault_now(m, g, &xid, why, sizeof(why));

        for (int k = 0; k < g->xid_run.n; k++)
            for (int c = 0; c < g->xid_run.x[k].count; c++)
                pf_xid_list_add(&st->xids, g->xid_run.x[k].xid);
        if (r != PF_R_None) {
            st->bad++;
            st->good = 0;
        } else {
            st->good++;
            st->bad = 0;
        }
        pf_gpu_label(g, label, sizeof(label));
        if (r != PF_R_None && !st->faulted && st->bad >= m->raise_after) {
            struct pf_mon_change *ch = &m->changes[m->nchanges++];
            st->faulted = true;
            st->reason = r;
            snprintf(st->why, sizeof(st->why), "%s", why);
            memset(ch, 0, sizeof(*ch));
            ch->raised = true;
            ch->reason = r;
            snprintf(ch->msg, sizeof(ch->msg), "%s: %s for %d interval(s)",
                     label, why, st->bad);
        } else if (st->faulted && r == PF_R_None &&
                   st->good >= m->clear_after) {
            struct pf_mon_change *ch = &m->changes[m->nchanges++];
            char was[sizeof(st->why)];
            snprintf(was, sizeof(was), "%s", st->why);
            memset(ch, 0, sizeof(*ch));
            ch->raised = false;
            ch->reason = PF_R_GPUsHealthy;
            snprintf(ch->msg, sizeof(ch->msg), "%s: %s cleared after %d good "
                     "interval(s)", label, was, st->good);
            st->faulted = false;
            st->reason = PF_R_None;
            st->why[0] = '\0';
        }
    }
}

bool pf_mon_gpu_faulted(const struct pf_mon_gpu *m)
{
    for (int i = 0; i < m->h.stored && i < PF_MAX_GPUS; i++)
        if (m->g[i].faulted)
            return true;
    return false;
}

enum pf_reason pf_mon_gpu_condition(const struct pf_mon_gpu *m, char *msg,
                                    size_t len)
{
    enum pf_reason first = PF_R_None;
    size_t used = 0;

    msg[0] = '\0';
    if (!m->h.nvml_loaded) {
        if (!m->gpu_type)
            return PF_R_None;
        snprintf(msg, len, "%s: GPU health not watched", m->h.nvml_error);
        return PF_R_GPUHealthUnchecked;
    }
    if (m->h.count == 0)
        return PF_R_None;
    for (int i = 0; i < m->h.stored && i < PF_MAX_GPUS; i++) {
        char label[160];
        int w;
        if (!m->g[i].faulted)
            continue;
        if (first == PF_R_None)
            first = m->g[i].reason;
        pf_gpu_label(&m->h.gpus[i], label, sizeof(label));
        w = snprintf(msg + used, len - used, "%s%s: %s", used ? "; " : "",
                     label, m->g[i].why);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    if (first != PF_R_None)
        return first;
    snprintf(msg, len, "%d GPU(s) watched through NVML: no fault held for "
             "%d interval(s)", m->h.count, m->raise_after);
    return PF_R_GPUsHealthy;
}

/* ---------------------------------------------------------- exposition */

static void family(struct pf_mon_buf *b, const char *name, const char *type,
                   const char *help)
{
    pf_mon_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                      type);
}

/* Names are NVML's and the node's: no quote or backslash is kept. */
static void clean(const char *in, char *out, size_t len)
{
    size_t j = 0;
    for (; *in && j + 1 < len; in++)
        out[j++] = (*in == '"' || *in == '\\' || *in == '\n') ? '_' : *in;
    out[j] = '\0';
}

static void labels(const char *node, const struct pf_gpu_state *g, char *out,
                   size_t len)
{
    char n[256], bus[40], serial[40], uuid[100];

    clean(node, n, sizeof(n));
    clean(g->bus_id, bus, sizeof(bus));
    clean(g->serial, serial, sizeof(serial));
    clean(g->uuid, uuid, sizeof(uuid));
    snprintf(out, len, "node=\"%s\",gpu=\"%d\",bus_id=\"%s\",serial=\"%s\","
             "uuid=\"%s\"", n, g->index, bus, serial, uuid);
}

struct gmetric {
    const char *name, *type, *help;
    enum pf_gpu_field field;          /* PF_GF_COUNT: always */
    double (*value)(const struct pf_mon_gpu *m, int i);
};

#define G(i) (&m->h.gpus[i])
static double v_up(const struct pf_mon_gpu *m, int i) { return !G(i)->lost; }
static double v_healthy(const struct pf_mon_gpu *m, int i)
{
    return !m->g[i].faulted;
}
static double v_ecc_on(const struct pf_mon_gpu *m, int i)
{
    return G(i)->ecc_current;
}
static double v_ecc_vol(const struct pf_mon_gpu *m, int i)
{
    return (double)G(i)->ecc_volatile_unc;
}
static double v_ecc_agg(const struct pf_mon_gpu *m, int i)
{
    return (double)G(i)->ecc_aggregate_unc;
}
static double v_rr_corr(const struct pf_mon_gpu *m, int i)
{
    return G(i)->remap_corr;
}
static double v_rr_unc(const struct pf_mon_gpu *m, int i)
{
    return G(i)->remap_unc;
}
static double v_rr_pend(const struct pf_mon_gpu *m, int i)
{
    return G(i)->remap_pending;
}
static double v_rr_fail(const struct pf_mon_gpu *m, int i)
{
    return G(i)->remap_failure;
}
static double v_ret_pend(const struct pf_mon_gpu *m, int i)
{
    return G(i)->retired_pending;
}
static double v_links(const struct pf_mon_gpu *m, int i)
{
    return G(i)->nvlinks;
}
static double v_links_up(const struct pf_mon_gpu *m, int i)
{
    return G(i)->nvlinks_active;
}
static double v_nvl_replay(const struct pf_mon_gpu *m, int i)
{
    return (double)G(i)->nvl_after.replay;
}
static double v_nvl_rec(const struct pf_mon_gpu *m, int i)
{
    return (double)G(i)->nvl_after.recovery;
}
static double v_nvl_crc(const struct pf_mon_gpu *m, int i)
{
    return (double)(G(i)->nvl_after.crc_flit + G(i)->nvl_after.crc_data);
}
static double v_gen(const struct pf_mon_gpu *m, int i)
{
    return G(i)->pcie_gen;
}
static double v_width(const struct pf_mon_gpu *m, int i)
{
    return G(i)->pcie_width;
}
static double v_max_gen(const struct pf_mon_gpu *m, int i)
{
    return G(i)->pcie_max_gen;
}
static double v_max_width(const struct pf_mon_gpu *m, int i)
{
    return G(i)->pcie_max_width;
}
static double v_replay(const struct pf_mon_gpu *m, int i)
{
    return G(i)->pcie_replay_after;
}
static double v_clocks(const struct pf_mon_gpu *m, int i)
{
    return (double)G(i)->clocks_after;
}
static double v_throttled(const struct pf_mon_gpu *m, int i)
{
    return (G(i)->clocks_after & CLOCK_FAULTS) != 0;
}
static double v_persist(const struct pf_mon_gpu *m, int i)
{
    return G(i)->persistence;
}
static double v_mig(const struct pf_mon_gpu *m, int i)
{
    return G(i)->mig_current;
}
#undef G

static const struct gmetric metrics[] = {
    { "efa_preflight_gpu_up", "gauge", "1 while the GPU answers NVML",
      PF_GF_COUNT, v_up },
    { "efa_preflight_gpu_healthy", "gauge",
      "0 while a GPU fault is held (after the raise count of bad intervals)",
      PF_GF_COUNT, v_healthy },
    { "efa_preflight_gpu_ecc_enabled", "gauge", "ECC mode", PF_GF_ECC_MODE,
      v_ecc_on },
    { "efa_preflight_gpu_ecc_volatile_uncorrected_total", "counter",
      "uncorrectable ECC errors since the driver loaded", PF_GF_ECC_VOLATILE,
      v_ecc_vol },
    { "efa_preflight_gpu_ecc_aggregate_uncorrected_total", "counter",
      "uncorrectable ECC errors in the GPU's lifetime", PF_GF_ECC_AGGREGATE,
      v_ecc_agg },
    { "efa_preflight_gpu_remapped_rows_correctable", "gauge",
      "rows remapped for correctable errors", PF_GF_REMAPPED_ROWS, v_rr_corr },
    { "efa_preflight_gpu_remapped_rows_uncorrectable", "gauge",
      "rows remapped for uncorrectable errors", PF_GF_REMAPPED_ROWS,
      v_rr_unc },
    { "efa_preflight_gpu_row_remap_pending", "gauge",
      "1: a remap waits for a GPU reset", PF_GF_REMAPPED_ROWS, v_rr_pend },
    { "efa_preflight_gpu_row_remap_failure", "gauge",
      "1: a remap failed (replace the GPU)", PF_GF_REMAPPED_ROWS, v_rr_fail },
    { "efa_preflight_gpu_retired_pages_pending", "gauge",
      "1: a page retirement waits for a reset", PF_GF_RETIRED_PENDING,
      v_ret_pend },
    { "efa_preflight_gpu_nvlink_links", "gauge", "NVLink links NVML reports",
      PF_GF_NVLINK_STATE, v_links },
    { "efa_preflight_gpu_nvlink_links_active", "gauge",
      "NVLink links active", PF_GF_NVLINK_STATE, v_links_up },
    { "efa_preflight_gpu_nvlink_replay_errors_total", "counter",
      "NVLink data-link replays, summed over links", PF_GF_NVLINK_ERRORS,
      v_nvl_replay },
    { "efa_preflight_gpu_nvlink_recovery_errors_total", "counter",
      "NVLink data-link recoveries, summed over links", PF_GF_NVLINK_ERRORS,
      v_nvl_rec },
    { "efa_preflight_gpu_nvlink_crc_errors_total", "counter",
      "NVLink flit and data CRC errors, summed over links",
      PF_GF_NVLINK_ERRORS, v_nvl_crc },
    { "efa_preflight_gpu_pcie_link_gen", "gauge",
      "current PCIe generation (idles low)", PF_GF_PCIE_LINK, v_gen },
    { "efa_preflight_gpu_pcie_link_width", "gauge", "current PCIe width",
      PF_GF_PCIE_LINK, v_width },
    { "efa_preflight_gpu_pcie_max_gen", "gauge", "maximum PCIe generation",
      PF_GF_PCIE_MAX, v_max_gen },
    { "efa_preflight_gpu_pcie_max_width", "gauge", "maximum PCIe width",
      PF_GF_PCIE_MAX, v_max_width },
    { "efa_preflight_gpu_pcie_replays_total", "counter",
      "PCIe replay counter", PF_GF_PCIE_REPLAY, v_replay },
    { "efa_preflight_gpu_clock_event_reasons", "gauge",
      "NVML clock event reason bits", PF_GF_CLOCK_EVENTS, v_clocks },
    { "efa_preflight_gpu_throttled", "gauge",
      "1: HW slowdown, HW thermal or power brake", PF_GF_CLOCK_EVENTS,
      v_throttled },
    { "efa_preflight_gpu_persistence_mode", "gauge", "persistence mode",
      PF_GF_PERSISTENCE, v_persist },
    { "efa_preflight_gpu_mig_mode", "gauge", "MIG mode", PF_GF_MIG, v_mig },
};

void pf_mon_gpu_expose(const struct pf_mon_gpu *m, const char *node,
                       struct pf_mon_buf *out)
{
    char lab[512], n[256];

    clean(node, n, sizeof(n));
    family(out, "efa_preflight_gpu_nvml_up", "gauge",
           "1 when NVML loaded and answered");
    pf_mon_buf_printf(out, "efa_preflight_gpu_nvml_up{node=\"%s\"} %d\n", n,
                      m->h.nvml_loaded);
    if (!m->h.nvml_loaded)
        return;
    for (size_t k = 0; k < sizeof(metrics) / sizeof(metrics[0]); k++) {
        family(out, metrics[k].name, metrics[k].type, metrics[k].help);
        for (int i = 0; i < m->h.stored && i < PF_MAX_GPUS; i++) {
            const struct pf_gpu_state *g = &m->h.gpus[i];
            /* a field the GPU does not support has no sample */
            if (metrics[k].field != PF_GF_COUNT &&
                g->f[metrics[k].field] != PF_GFS_OK)
                continue;
            labels(node, g, lab, sizeof(lab));
            pf_mon_buf_printf(out, "%s{%s} %.17g\n", metrics[k].name, lab,
                              metrics[k].value(m, i));
        }
    }
    family(out, "efa_preflight_gpu_xid_total", "counter",
           "XIDs NVML reported since the monitor started, by XID");
    for (int i = 0; i < m->h.stored && i < PF_MAX_GPUS; i++) {
        labels(node, &m->h.gpus[i], lab, sizeof(lab));
        for (int k = 0; k < m->g[i].xids.n; k++)
            pf_mon_buf_printf(out, "efa_preflight_gpu_xid_total{%s,xid=\"%d\","
                              "class=\"%s\"} %d\n", lab, m->g[i].xids.x[k].xid,
                              pf_xid_kind_name(
                                  pf_xid_info(m->g[i].xids.x[k].xid)->kind),
                              m->g[i].xids.x[k].count);
    }
}

void pf_mon_gpu_free(struct pf_mon_gpu *m)
{
    pf_gpu_watch_close(&m->s);
}
