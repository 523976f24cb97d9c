/* GPU health checks, condition GPUHealthy: what NVML and the kernel log
 * said (run->node.gpuh, probe/gpu_health.h) against what the catalog says
 * the type's GPUs must show (instance->gpu).
 *
 * Each check names the GPUs it is about (index, bus id, serial). A fault
 * that proves the GPU unfit fails (node class: exit 1, status fail, may
 * taint); what only suggests it, or rests on an unverified catalog
 * figure, warns. A field the driver does not support is a fact in the
 * report, never a failure; NVML missing is one warning naming what was not
 * checked. A node with no GPU and no NVML gets no GPU check at all. */
#include "verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../probe/gpu_health.h"
#include "../probe/xid.h"
#include "../util/nvmllib.h"

#define COND PF_COND_GPU
#define CLOCK_FAULTS (PF_NVML_CLOCKS_HW_SLOWDOWN | PF_NVML_CLOCKS_HW_THERMAL | \
                      PF_NVML_CLOCKS_HW_POWER_BRAKE)

/* GPUs named in one message: the first few in full, then a count. */
struct named {
    char text[300];
    int n, shown;
};

static void named_add(struct named *l, const struct pf_gpu_state *g,
                      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void named_add(struct named *l, const struct pf_gpu_state *g,
                      const char *fmt, ...)
{
    char label[160], detail[200], item[380];
    size_t used = strlen(l->text);
    va_list ap;

    l->n++;
    pf_gpu_label(g, label, sizeof(label));
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    snprintf(item, sizeof(item), "%s%s: %s", used ? "; " : "", label, detail);
    /* keep room for "(and N more GPUs)" */
    if (used + strlen(item) + 24 < sizeof(l->text)) {
        memcpy(l->text + used, item, strlen(item) + 1);
        l->shown++;
    }
}

static const char *named_more(const struct named *l, char *buf, size_t len)
{
    if (l->n > l->shown)
        snprintf(buf, len, " (and %d more GPU%s)", l->n - l->shown,
                 l->n - l->shown == 1 ? "" : "s");
    else
        buf[0] = '\0';
    return buf;
}

struct ctx {
    struct pf_run *run;
    const struct pf_gpu_health *h;
    const struct pf_gpu_expect *ex;   /* NULL: the type states nothing */
    struct pf_verdict *v;
    const char *during;               /* "during the all_reduce" | ... */
};

/* Whether GPUs are expected or seen here: --expect-gpus (0 = none
 * expected) over the type's accelerator kind; GPUs CUDA found count
 * either way. */
static bool gpu_type(const struct pf_run *run)
{
    const struct pf_instance *it = run->instance;

    if (run->node.gpu_count > 0)
        return true;
    if (run->cfg.expect_gpus >= 0)
        return run->cfg.expect_gpus > 0;
    return it && !strcmp(it->accel_kind, "gpu");
}

/* The GPUs stored (the probe never stores more than PF_MAX_GPUS). */
static int nstored(const struct pf_gpu_health *h)
{
    return h->stored < PF_MAX_GPUS ? h->stored : PF_MAX_GPUS;
}

/* The GPUs whose field f read, and the count of those that did not. */
static int unsupported_on(const struct pf_gpu_health *h, enum pf_gpu_field f)
{
    int n = 0;
    for (int i = 0; i < nstored(h); i++)
        n += !h->gpus[i].lost && h->gpus[i].f[f] != PF_GFS_OK;
    return n;
}

static bool any_read(const struct pf_gpu_health *h, enum pf_gpu_field f)
{
    for (int i = 0; i < nstored(h); i++)
        if (h->gpus[i].f[f] == PF_GFS_OK)
            return true;
    return false;
}

static void check_nvml(struct ctx *c)
{
    const struct pf_gpu_health *h = c->h;
    char unsup[200] = "", cuda[24] = "?";
    size_t used = 0;

    for (int f = 0; f < PF_GF_COUNT; f++) {
        int w;
        if (!unsupported_on(h, (enum pf_gpu_field)f))
            continue;
        w = snprintf(unsup + used, sizeof(unsup) - used, "%s%s",
                     used ? ", " : "", pf_gpu_field_name((enum pf_gpu_field)f));
        if (w < 0 || (size_t)w >= sizeof(unsup) - used)
            break;
        used += (size_t)w;
    }
    if (h->cuda_driver_version > 0)
        snprintf(cuda, sizeof(cuda), "%d.%d", h->cuda_driver_version / 1000,
                 (h->cuda_driver_version % 1000) / 10);
    pf_verdict_add(c->v, "gpu_nvml", COND, PF_PASS, PF_R_GPUsHealthy, "",
                   "NVML: %d GPU(s), driver %s (CUDA %s), read in %.0f ms; "
                   "not read on some GPU: %s", h->count,
                   h->driver_version[0] ? h->driver_version : "?", cuda,
                   h->probe_ms, used ? unsup : "none");
}

static void check_bus(struct ctx *c)
{
    struct named l = { .n = 0 };
    char more[40];

    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        bool x79 = false;
        for (int k = 0; k < g->xid_run.n && k < PF_MAX_XIDS; k++)
            x79 = x79 || g->xid_run.x[k].xid == 79;
        if (g->lost)
            named_add(&l, g, "lost (%s said GPU_IS_LOST)", g->lost_in);
        else if (x79)
            named_add(&l, g, "XID 79 (fell off the bus) %s", c->during);
    }
    if (l.n) {
        pf_verdict_add(c->v, "gpu_bus", COND, PF_FAIL, PF_R_GPUFellOffBus, "",
                       "%s%s", l.text, named_more(&l, more, sizeof(more)));
        return;
    }
    /* a GPU NVML lists but would not open for another reason than
     * GPU_IS_LOST (no permission: not given to this container) */
    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        if (g->f[PF_GF_PCI] == PF_GFS_ERROR)
            named_add(&l, g, "not opened (%s)", g->field_err);
    }
    pf_verdict_add(c->v, "gpu_bus", COND, PF_PASS, PF_R_None, "",
                   "%d of %d GPU(s) answer NVML%s%s%s", nstored(c->h) - l.n,
                   nstored(c->h), l.n ? "; " : "", l.text,
                   named_more(&l, more, sizeof(more)));
}

/* "79 (GPU has fallen off the bus) x2, 13 x1" of one kind or all. */
static int xid_text(const struct pf_xid_list *l, int kind, char *out,
                    size_t len)
{
    size_t used = 0;
    int n = 0;

    out[0] = '\0';
    for (int k = 0; k < l->n && k < PF_MAX_XIDS; k++) {
        const struct pf_xid_info *xi = pf_xid_info(l->x[k].xid);
        int w;
        if (kind >= 0 && (int)xi->kind != kind)
            continue;
        n++;
        w = snprintf(out + used, len - used, "%sXID %d%s%s%s x%d",
                     used ? ", " : "", l->x[k].xid, xi->what[0] ? " (" : "",
                     xi->what, xi->what[0] ? ")" : "", l->x[k].count);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
    return n;
}

static void check_xid(struct ctx *c)
{
    const struct pf_gpu_health *h = c->h;
    struct named fail = { .n = 0 }, warn = { .n = 0 };
    char t[200], more[40], strays[200] = "";
    size_t su = 0;
    int nstray_node = 0;

    for (int i = 0; i < nstored(h); i++) {
        const struct pf_gpu_state *g = &h->gpus[i];
        if (xid_text(&g->xid_run, PF_XID_NODE, t, sizeof(t)))
            named_add(&fail, g, "%s %s", t, c->during);
        else if (xid_text(&g->xid_run, -1, t, sizeof(t)))
            named_add(&warn, g, "%s %s", t, c->during);
        else if (xid_text(&g->xid_boot, PF_XID_NODE, t, sizeof(t)))
            named_add(&warn, g, "%s in the kernel log since boot", t);
    }
    for (int i = 0; i < h->nstray && i < PF_MAX_XIDS; i++) {
        const struct pf_xid_info *xi = pf_xid_info(h->stray[i].xid);
        int w;
        if (xi->kind != PF_XID_NODE)
            continue;
        nstray_node++;
        w = snprintf(strays + su, sizeof(strays) - su, "%sXID %d on PCI %s x%d",
                     su ? ", " : "", h->stray[i].xid, h->stray[i].bus,
                     h->stray[i].count);
        if (w > 0 && (size_t)w < sizeof(strays) - su)
            su += (size_t)w;
    }
    if (fail.n) {
        pf_verdict_add(c->v, "gpu_xid", COND, PF_FAIL, PF_R_GPUXid, "",
                       "%s%s", fail.text, named_more(&fail, more, sizeof(more)));
        return;
    }
    if (warn.n || nstray_node) {
        pf_verdict_add(c->v, "gpu_xid", COND, PF_WARN, PF_R_GPUXid, "",
                       "%s%s%s%s", warn.text,
                       named_more(&warn, more, sizeof(more)),
                       warn.n && nstray_node ? "; " : "",
                       nstray_node ? strays : "");
        return;
    }
    if (!h->events_armed && !h->kmsg_read) {
        pf_verdict_add(c->v, "gpu_xid", COND, PF_SKIP, PF_R_NotTested, "",
                       "XIDs not checked: %s; %s",
                       h->events_note[0] ? h->events_note : "no XID events",
                       h->kmsg_note);
        return;
    }
    pf_verdict_add(c->v, "gpu_xid", COND, PF_PASS, PF_R_None, "",
                   "no node-fault XID: events %s %s; %s",
                   h->events_armed ? "armed" : "not armed", c->during,
                   h->kmsg_note);
}

static void check_ecc(struct ctx *c)
{
    struct named fail = { .n = 0 }, warn = { .n = 0 }, off = { .n = 0 };
    char more[40];

    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        if (g->f[PF_GF_ECC_VOLATILE] == PF_GFS_OK && g->ecc_volatile_unc)
            named_add(&fail, g, "%llu uncorrectable ECC error(s) since the "
                      "driver loaded",
                      (unsigned long long)g->ecc_volatile_unc);
        else if (g->f[PF_GF_ECC_AGGREGATE] == PF_GFS_OK && g->ecc_aggregate_unc)
            named_add(&warn, g, "%llu uncorrectable ECC error(s) in its "
                      "lifetime, none since the driver loaded",
                      (unsigned long long)g->ecc_aggregate_unc);
        if (g->f[PF_GF_ECC_MODE] == PF_GFS_OK && !g->ecc_current)
            named_add(&off, g, "ECC disabled");
    }
    if (fail.n)
        pf_verdict_add(c->v, "gpu_ecc", COND, PF_FAIL, PF_R_GPUUncorrectableECC,
                       "", "%s%s", fail.text,
                       named_more(&fail, more, sizeof(more)));
    else if (warn.n)
        pf_verdict_add(c->v, "gpu_ecc", COND, PF_WARN, PF_R_GPUUncorrectableECC,
                       "", "%s%s", warn.text,
                       named_more(&warn, more, sizeof(more)));
    else if (!any_read(c->h, PF_GF_ECC_VOLATILE))
        pf_verdict_add(c->v, "gpu_ecc", COND, PF_SKIP, PF_R_NotTested, "",
                       "ECC error counts not supported by this GPU or driver");
    else
        pf_verdict_add(c->v, "gpu_ecc", COND, PF_PASS, PF_R_None, "",
                       "no uncorrectable ECC error");
    if (off.n)
        pf_verdict_add(c->v, "gpu_ecc_mode", COND, PF_WARN, PF_R_GPUECCDisabled,
                       "", "%s%s", off.text, named_more(&off, more, sizeof(more)));
}

static void check_remap(struct ctx *c)
{
    struct named failed = { .n = 0 }, pending = { .n = 0 };
    char more[40];
    unsigned corr = 0, unc = 0;

    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        bool rows = g->f[PF_GF_REMAPPED_ROWS] == PF_GFS_OK;
        if (rows && g->remap_failure)
            named_add(&failed, g, "row remap failed (%u uncorrectable rows "
                      "remapped)", g->remap_unc);
        if (rows && g->remap_pending)
            named_add(&pending, g, "row remap pending");
        else if (g->f[PF_GF_RETIRED_PENDING] == PF_GFS_OK && g->retired_pending)
            named_add(&pending, g, "page retirement pending");
        if (rows) {
            corr += g->remap_corr;
            unc += g->remap_unc;
        }
    }
    if (failed.n)
        pf_verdict_add(c->v, "gpu_row_remap", COND, PF_FAIL,
                       PF_R_GPURowRemapFailed, "", "%s%s", failed.text,
                       named_more(&failed, more, sizeof(more)));
    else if (pending.n)
        pf_verdict_add(c->v, "gpu_row_remap", COND, PF_FAIL,
                       PF_R_GPURowRemapPending, "", "%s%s", pending.text,
                       named_more(&pending, more, sizeof(more)));
    else if (!any_read(c->h, PF_GF_REMAPPED_ROWS) &&
             !any_read(c->h, PF_GF_RETIRED_PENDING))
        pf_verdict_add(c->v, "gpu_row_remap", COND, PF_SKIP, PF_R_NotTested, "",
                       "row remapping and page retirement not supported by "
                       "this GPU or driver");
    else
        pf_verdict_add(c->v, "gpu_row_remap", COND, PF_PASS, PF_R_None, "",
                       "no pending or failed remap (%u correctable, %u "
                       "uncorrectable rows remapped in all)", corr, unc);
}

static void down_links(const struct pf_gpu_state *g, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int l = 0; l < PF_MAX_NVLINKS; l++) {
        int w;
        if (!g->nvlink_present[l] || g->nvlink_active[l])
            continue;
        w = snprintf(out + used, len - used, "%s%d", used ? "," : "", l);
        if (w < 0 || (size_t)w >= len - used)
            break;
        used += (size_t)w;
    }
}

static void check_nvlink(struct ctx *c)
{
    const struct pf_gpu_expect *ex = c->ex;
    struct named down = { .n = 0 };
    char more[40], links[120];
    int expect = ex ? ex->nvlinks : -1, active = 0, total = 0;

    if (expect == 0) {
        pf_verdict_add(c->v, "nvlink", COND, PF_SKIP, PF_R_NotApplicable, "",
                       "no NVLink on this type's GPUs");
        return;
    }
    if (!any_read(c->h, PF_GF_NVLINK_STATE)) {
        pf_verdict_add(c->v, "nvlink", COND, PF_SKIP, PF_R_NotTested, "",
                       "NVLink state not supported by this GPU or driver%s",
                       expect > 0 ? " although the type has NVLink" : "");
        return;
    }
    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        if (g->f[PF_GF_NVLINK_STATE] != PF_GFS_OK)
            continue;
        active += g->nvlinks_active;
        total += g->nvlinks;
        down_links(g, links, sizeof(links));
        if (expect > 0 && g->nvlinks_active < expect)
            named_add(&down, g, "%d of %d NVLink links active%s%s",
                      g->nvlinks_active, expect, links[0] ? ", down: " : "",
                      links);
    }
    if (down.n)
        pf_verdict_add(c->v, "nvlink", COND, ex->verified ? PF_FAIL : PF_WARN,
                       PF_R_NVLinkDown, "", "%s%s", down.text,
                       named_more(&down, more, sizeof(more)));
    else
        pf_verdict_add(c->v, "nvlink", COND, PF_PASS, PF_R_None, "",
                       "%d of %d NVLink links active%s", active, total,
                       expect > 0 ? "" : " (the type states no link count: "
                                         "not judged)");
}

static uint64_t rise(uint64_t before, uint64_t after)
{
    return after > before ? after - before : 0;
}

static void check_nvlink_errors(struct ctx *c)
{
    struct named fail = { .n = 0 }, warn = { .n = 0 };
    char more[40];

    if (!any_read(c->h, PF_GF_NVLINK_ERRORS)) {
        if (any_read(c->h, PF_GF_NVLINK_STATE))
            pf_verdict_add(c->v, "nvlink_errors", COND, PF_SKIP, PF_R_NotTested,
                           "", "NVLink error counters not supported by this "
                           "GPU or driver");
        return;
    }
    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        uint64_t rec, rep, crc;
        if (g->f[PF_GF_NVLINK_ERRORS] != PF_GFS_OK)
            continue;
        rec = rise(g->nvl_before.recovery, g->nvl_after.recovery);
        rep = rise(g->nvl_before.replay, g->nvl_after.replay);
        /* CRC data errors are left out: on healthy H200s (NV18, driver
         * 580) they rise by about 190 a second per GPU under an
         * all_reduce with no replay or recovery (bench/results/
         * gpu_health.md), so they say nothing about a bad link. */
        crc = rise(g->nvl_before.crc_flit, g->nvl_after.crc_flit);
        if (rec)
            named_add(&fail, g, "+%llu recovery, +%llu replay, +%llu CRC %s",
                      (unsigned long long)rec, (unsigned long long)rep,
                      (unsigned long long)crc, c->during);
        else if (rep || crc)
            named_add(&warn, g, "+%llu replay, +%llu CRC %s",
                      (unsigned long long)rep, (unsigned long long)crc,
                      c->during);
    }
    if (fail.n)
        pf_verdict_add(c->v, "nvlink_errors", COND, PF_FAIL, PF_R_NVLinkErrors,
                       "", "%s%s", fail.text,
                       named_more(&fail, more, sizeof(more)));
    else if (warn.n)
        pf_verdict_add(c->v, "nvlink_errors", COND, PF_WARN, PF_R_NVLinkErrors,
                       "", "%s%s", warn.text,
                       named_more(&warn, more, sizeof(more)));
    else
        pf_verdict_add(c->v, "nvlink_errors", COND, PF_PASS, PF_R_None, "",
                       "no NVLink replay, recovery or CRC error %s",
                       c->during);
}

static void check_pcie(struct ctx *c)
{
    const struct pf_gpu_expect *ex = c->ex;
    struct named fail = { .n = 0 }, warn = { .n = 0 }, est = { .n = 0 };
    char more[40];
    bool verified = !ex || ex->verified;

    if (!any_read(c->h, PF_GF_PCIE_LINK)) {
        pf_verdict_add(c->v, "pcie", COND, PF_SKIP, PF_R_NotTested, "",
                       "PCIe link state not supported by this GPU or driver");
        return;
    }
    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        bool maxr = g->f[PF_GF_PCIE_MAX] == PF_GFS_OK;
        unsigned width = g->pcie_width_run ? g->pcie_width_run : g->pcie_width;
        if (g->f[PF_GF_PCIE_LINK] != PF_GFS_OK)
            continue;
        /* The width does not idle down: held against the slot (catalog)
         * or, where the type states none, what the link can do. */
        if (ex && ex->pcie_width && width < (unsigned)ex->pcie_width)
            named_add(verified ? &fail : &est, g, "x%u, the type's slot is "
                      "x%d", width, ex->pcie_width);
        else if (maxr && width < g->pcie_max_width)
            named_add(&fail, g, "x%u of x%u", width, g->pcie_max_width);
        /* The generation idles down: the maximum against the slot, the
         * current one only as read under load. Both only warn until a real
         * node shows what NVML's maximum (the GPU's and the upstream
         * port's) reads under a hypervisor. */
        else if (ex && ex->pcie_gen && maxr &&
                 g->pcie_max_gen < (unsigned)ex->pcie_gen)
            named_add(&est, g, "Gen%u at most, the type's slot is Gen%d",
                      g->pcie_max_gen, ex->pcie_gen);
        else if (g->pcie_gen_run && maxr && g->pcie_gen_run < g->pcie_max_gen)
            named_add(&warn, g, "Gen%u of Gen%u right after the all_reduce",
                      g->pcie_gen_run, g->pcie_max_gen);
    }
    if (fail.n)
        pf_verdict_add(c->v, "pcie", COND, PF_FAIL, PF_R_PCIeDowntrained, "",
                       "%s%s", fail.text, named_more(&fail, more, sizeof(more)));
    else if (warn.n || est.n)
        pf_verdict_add(c->v, "pcie", COND, PF_WARN, PF_R_PCIeDowntrained, "",
                       "%s%s%s%s", warn.text,
                       named_more(&warn, more, sizeof(more)),
                       warn.n && est.n ? "; " : "", est.text);
    else
        pf_verdict_add(c->v, "pcie", COND, PF_PASS, PF_R_None, "",
                       "every GPU's PCIe link at its width%s",
                       ex && ex->pcie_gen ? " and generation" : "");
}

static void check_pcie_replays(struct ctx *c)
{
    struct named warn = { .n = 0 };
    char more[40];

    if (!any_read(c->h, PF_GF_PCIE_REPLAY))
        return;
    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        if (g->f[PF_GF_PCIE_REPLAY] == PF_GFS_OK &&
            g->pcie_replay_after > g->pcie_replay_before)
            named_add(&warn, g, "PCIe replay counter +%u %s (%u in all)",
                      g->pcie_replay_after - g->pcie_replay_before, c->during,
                      g->pcie_replay_after);
    }
    if (warn.n)
        pf_verdict_add(c->v, "pcie_replays", COND, PF_WARN,
                       PF_R_PCIeReplaysRising, "", "%s%s", warn.text,
                       named_more(&warn, more, sizeof(more)));
    else
        pf_verdict_add(c->v, "pcie_replays", COND, PF_PASS, PF_R_None, "",
                       "no PCIe replay %s", c->during);
}

static void clock_words(uint64_t bits, char *out, size_t len)
{
    snprintf(out, len, "%s%s%s",
             bits & PF_NVML_CLOCKS_HW_SLOWDOWN ? "HW slowdown " : "",
             bits & PF_NVML_CLOCKS_HW_THERMAL ? "HW thermal " : "",
             bits & PF_NVML_CLOCKS_HW_POWER_BRAKE ? "power brake " : "");
    if (out[0])
        out[strlen(out) - 1] = '\0';
}

static void check_clocks(struct ctx *c)
{
    struct named fail = { .n = 0 }, warn = { .n = 0 };
    char more[40], w[64];

    if (!any_read(c->h, PF_GF_CLOCK_EVENTS)) {
        pf_verdict_add(c->v, "gpu_clocks", COND, PF_SKIP, PF_R_NotTested, "",
                       "clock event reasons not supported by this GPU or "
                       "driver");
        return;
    }
    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        uint64_t a = g->clocks_before & CLOCK_FAULTS;
        uint64_t b = g->clocks_after_read ? g->clocks_after & CLOCK_FAULTS : 0;
        if (g->f[PF_GF_CLOCK_EVENTS] != PF_GFS_OK)
            continue;
        clock_words(a | b, w, sizeof(w));
        if (a && b)
            named_add(&fail, g, "%s at the probe and %s", w, c->during);
        else if (a || b)
            named_add(&warn, g, "%s %s", w, b ? c->during : "at the probe");
    }
    if (fail.n)
        pf_verdict_add(c->v, "gpu_clocks", COND, PF_FAIL, PF_R_GPUThrottled, "",
                       "%s%s", fail.text, named_more(&fail, more, sizeof(more)));
    else if (warn.n)
        pf_verdict_add(c->v, "gpu_clocks", COND, PF_WARN, PF_R_GPUThrottled, "",
                       "%s%s", warn.text, named_more(&warn, more, sizeof(more)));
    else
        pf_verdict_add(c->v, "gpu_clocks", COND, PF_PASS, PF_R_None, "",
                       "no HW slowdown, HW thermal or power brake");
}

/* "550.54.15" against "550" or "550.54.14": component by component; a
 * missing component is 0, anything but digits and dots ends the version. */
static long component(const char **p)
{
    long v = 0;
    while (**p >= '0' && **p <= '9') {
        if (v < 100000000)
            v = v * 10 + (**p - '0');
        (*p)++;
    }
    *p = **p == '.' ? *p + 1 : "";
    return v;
}

static int version_cmp(const char *a, const char *b)
{
    while (*a || *b) {
        long x = component(&a), y = component(&b);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

/* The CUDA driver API version (NVML reports 13000 for 13.0) against the
 * type's min_cuda: a CUDA runtime newer than the driver cannot start. */
static void check_cuda(struct ctx *c)
{
    const struct pf_gpu_expect *ex = c->ex;
    int have = c->h->cuda_driver_version, major = 0, minor = 0;

    if (!ex || !ex->min_cuda[0] ||
        sscanf(ex->min_cuda, "%d.%d", &major, &minor) != 2)
        return;
    if (have <= 0) {
        pf_verdict_add(c->v, "gpu_cuda_driver", COND, PF_SKIP, PF_R_NotTested,
                       "", "the CUDA driver version could not be read");
        return;
    }
    if (have < major * 1000 + minor * 10)
        pf_verdict_add(c->v, "gpu_cuda_driver", COND,
                       ex->driver_verified ? PF_FAIL : PF_WARN,
                       PF_R_GPUDriverTooOld, "",
                       "CUDA driver %d.%d is older than %s, the minimum for %s"
                       "%s", have / 1000, (have % 1000) / 10, ex->min_cuda,
                       c->run->node.instance_type,
                       ex->driver_verified ? "" : " (an estimate)");
    else
        pf_verdict_add(c->v, "gpu_cuda_driver", COND, PF_PASS, PF_R_None, "",
                       "CUDA driver %d.%d (minimum %s)", have / 1000,
                       (have % 1000) / 10, ex->min_cuda);
}

static void check_driver(struct ctx *c)
{
    const struct pf_gpu_expect *ex = c->ex;
    const char *have = c->h->driver_version;

    check_cuda(c);
    if (!ex || !ex->min_driver[0])
        return;
    if (!have[0]) {
        pf_verdict_add(c->v, "gpu_driver", COND, PF_SKIP, PF_R_NotTested, "",
                       "the driver version could not be read");
        return;
    }
    if (version_cmp(have, ex->min_driver) < 0)
        pf_verdict_add(c->v, "gpu_driver", COND,
                       ex->driver_verified ? PF_FAIL : PF_WARN,
                       PF_R_GPUDriverTooOld, "",
                       "NVIDIA driver %s is older than %s, the minimum for %s"
                       "%s", have, ex->min_driver, c->run->node.instance_type,
                       ex->driver_verified ? "" : " (an estimate)");
    else
        pf_verdict_add(c->v, "gpu_driver", COND, PF_PASS, PF_R_None, "",
                       "NVIDIA driver %s (minimum %s)", have, ex->min_driver);
}

static void check_modes(struct ctx *c)
{
    struct named off = { .n = 0 }, mig = { .n = 0 };
    char more[40];

    for (int i = 0; i < nstored(c->h); i++) {
        const struct pf_gpu_state *g = &c->h->gpus[i];
        if (g->f[PF_GF_PERSISTENCE] == PF_GFS_OK && !g->persistence)
            named_add(&off, g, "persistence mode off");
        if (g->f[PF_GF_MIG] == PF_GFS_OK &&
            g->mig_current == PF_NVML_DEVICE_MIG_ENABLE)
            named_add(&mig, g, "MIG enabled");
    }
    if (off.n)
        pf_verdict_add(c->v, "gpu_persistence", COND, PF_WARN,
                       PF_R_GPUPersistenceModeOff, "", "%s%s", off.text,
                       named_more(&off, more, sizeof(more)));
    if (mig.n && c->ex && !c->ex->mig_allowed)
        pf_verdict_add(c->v, "gpu_mig", COND, PF_FAIL, PF_R_GPUMIGEnabled, "",
                       "%s%s", mig.text, named_more(&mig, more, sizeof(more)));
}

/* Where NVML is missing the kernel log may still be read. */
static void check_unchecked(struct ctx *c)
{
    pf_verdict_add(c->v, "gpu_nvml", COND, PF_WARN, PF_R_GPUHealthUnchecked, "",
                   "%s: not checked: XIDs during the run, ECC, row remapping, "
                   "NVLink, PCIe, clocks, persistence, MIG, driver version%s",
                   c->h->nvml_error,
                   c->h->kmsg_read ? "" : ", XIDs since boot");
}

void pf_verdict_gpu(struct pf_run *run)
{
    struct ctx c = {
        .run = run,
        .h = &run->node.gpuh,
        .v = &run->verdict,
        .during = run->node.gpuh.window ? "during the all_reduce"
                                        : "during the run",
    };
    const struct pf_instance *it = run->instance;

    if (it && (it->gpu.nvlinks >= 0 || it->gpu.pcie_gen ||
               it->gpu.pcie_width || it->gpu.min_driver[0]))
        c.ex = &it->gpu;
    if (!c.h->nvml_loaded) {
        if (!gpu_type(run))
            return;
        check_unchecked(&c);
        if (c.h->kmsg_read)
            check_xid(&c);
        return;
    }
    if (c.h->count == 0) {
        if (gpu_type(run))
            pf_verdict_add(c.v, "gpu_nvml", COND, PF_SKIP, PF_R_NotApplicable,
                           "", "NVML lists no GPU");
        return;
    }
    check_nvml(&c);
    check_bus(&c);
    check_xid(&c);
    check_ecc(&c);
    check_remap(&c);
    check_nvlink(&c);
    check_nvlink_errors(&c);
    check_pcie(&c);
    check_pcie_replays(&c);
    check_clocks(&c);
    check_driver(&c);
    check_modes(&c);
}
