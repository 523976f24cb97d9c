/* Per-NIC accounting around the collective's stages (nics.h). */
#include "nics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../probe/hw_counters.h"
#include "../util/clock.h"
#include "../util/log.h"

static int stored(const struct pf_node *n)
{
    return n->efa_count < PF_MAX_EFA ? n->efa_count : PF_MAX_EFA;
}

void pf_nics_begin(struct pf_run *run, struct pf_nic_watch *w)
{
    struct pf_nics *s = &run->coll.nics;
    int n = stored(&run->node);
    bool any = false;

    memset(w, 0, sizeof(*w));
    s->n = n;
    if (n == 0 || s->nwin >= PF_NIC_MAX_WINDOWS)
        return;
    pf_hwc_read_all(run->cfg.sysfs_root, &run->node, w->before, n);
    for (int i = 0; i < n; i++)
        any = any || w->before[i].nports > 0;
    if (!any) {
        snprintf(s->note, sizeof(s->note), "the EFA driver exposes no "
                 "hardware counters (no ports/*/hw_counters on %d "
                 "device(s)): per-NIC traffic and errors not judged", n);
        return;
    }
    w->on = true;
    w->t0 = pf_now_s();
}

void pf_nics_end(struct pf_run *run, struct pf_nic_watch *w,
                 const char *stage, int peer)
{
    struct pf_nics *s = &run->coll.nics;
    const char *root = run->cfg.debug_counters_after[0]
                           ? run->cfg.debug_counters_after
                           : run->cfg.sysfs_root;
    struct pf_hwc_snap after[PF_MAX_EFA];
    struct pf_nic_window *win;
    char absent[256];
    int n = s->n;

    if (!w->on || s->nwin >= PF_NIC_MAX_WINDOWS)
        return;
    /* What the kernel hands out may be this old: let it expire. */
    pf_sleep_ms(pf_hwc_settle_ms(w->before, n));
    pf_hwc_read_all(root, &run->node, after, n);
    win = &s->win[s->nwin++];
    memset(win, 0, sizeof(*win));
    snprintf(win->stage, sizeof(win->stage), "%s", stage);
    win->peer = peer;
    win->seconds = pf_now_s() - w->t0;
    for (int i = 0; i < n; i++)
        pf_hwc_delta(&w->before[i], &after[i], &win->nic[i]);
    if (!s->read) {
        s->read = true;
        if (pf_hwc_absent_text(after, n, absent, sizeof(absent)) > 0)
            snprintf(s->note, sizeof(s->note), "absent on this driver: %s",
                     absent);
    }
    pf_debug("nics: %s window %.2f s over %d device(s)", stage, win->seconds,
             n);
}

int pf_rails_read(struct pf_engine *e, struct pf_rail_use *out)
{
    if (!e || !e->ops || !e->ops->rails || !e->impl)
        return 0;
    return e->ops->rails(e, out, PF_MAX_EFA);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void pf_rails_sweep(struct pf_nics *s, double slow_ratio,
                    const struct pf_rail_use *before,
                    const struct pf_rail_use *after, int n)
{
    double rate[PF_MAX_EFA], median;

    s->nrails = n;
    for (int r = 0; r < n; r++) {
        struct pf_rail *rl = &s->rails[r];

        memset(rl, 0, sizeof(*rl));
        snprintf(rl->nic, sizeof(rl->nic), "%s", after[r].nic);
        rl->bytes = after[r].bytes - before[r].bytes;
        rl->seconds = after[r].seconds - before[r].seconds;
        rl->gbps = rl->seconds > 0 ? (double)rl->bytes / rl->seconds / 1e9 : 0;
        rl->suspect = -1;
        rate[r] = rl->gbps;
    }
    if (n < 2)
        return;
    qsort(rate, (size_t)n, sizeof(rate[0]), cmp_double);
    median = n % 2 ? rate[n / 2] : (rate[n / 2 - 1] + rate[n / 2]) / 2;
    for (int r = 0; r < n; r++) {
        struct pf_rail *rl = &s->rails[r];
        rl->slow = rl->gbps < slow_ratio * median;
        pf_info("rail %d (%s): %llu bytes in %.3f s, %.3f GB/s%s", r, rl->nic,
                (unsigned long long)rl->bytes, rl->seconds, rl->gbps,
                rl->slow ? ": slow" : "");
    }
}

bool pf_rails_any_slow(const struct pf_nics *s)
{
    for (int r = 0; r < s->nrails; r++)
        if (s->rails[r].slow)
            return true;
    return false;
}

/* Every EFA device of the node has a rail of the same name. */
static bool rails_cover(const struct pf_nics *s, const struct pf_node *node)
{
    for (int i = 0; i < s->n; i++) {
        bool found = false;
        for (int r = 0; r < s->nrails && !found; r++)
            found = !strcmp(s->rails[r].nic, node->efa[i].name);
        if (!found)
            return false;
    }
    return s->n > 0;
}

void pf_nics_spread(struct pf_run *run)
{
    struct pf_coll *c = &run->coll;
    struct pf_nics *s = &c->nics;
    char *why = s->spread_note;
    size_t len = sizeof(s->spread_note);

    s->spread = false;
    if (c->nnodes < 2) {
        snprintf(why, len, "one node: the %s engine's traffic stays inside "
                 "it (%s), off the NICs", c->engine[0] ? c->engine : "?",
                 c->engine_kind != PF_ENGINE_NCCL ? "shared memory, loopback"
                                 : "NVLink, PCIe, shared memory");
    } else if (c->engine_kind == PF_ENGINE_NCCL) {
        if (!c->fabric.net_plugin_loaded || c->fabric.inter_node_socket ||
            !strstr(c->fabric.transport, "NET/Libfabric"))
            snprintf(why, len, "NCCL did not run over aws-ofi-nccl on every "
                     "channel (transports %s), so it need not use every NIC",
                     c->fabric.transport[0] ? c->fabric.transport : "unknown");
        else {
            s->spread = true;
            snprintf(why, len, "NCCL over aws-ofi-nccl (%s) across %d nodes "
                     "stripes over every NIC", c->fabric.transport, c->nnodes);
        }
    } else if (c->fabric.provider_is_fallback) {
        snprintf(why, len, "the host engine ran over %s, not EFA",
                 c->fabric.provider[0] ? c->fabric.provider : "?");
    } else if (!rails_cover(s, &run->node)) {
        snprintf(why, len, "the host engine striped over %d of the node's %d "
                 "EFA devices", s->nrails, s->n);
    } else {
        s->spread = true;
        snprintf(why, len, "the host engine striped over all %d EFA devices "
                 "across %d nodes", s->nrails, c->nnodes);
    }
}
