/* Per-NIC checks, condition EFAFabricReady, from the hardware counters the
 * harness read around the collective (run->coll.nics, collective/nics.h):
 *
 *   nic_traffic  EFANICIdle    a NIC moved nothing, or less than
 *                              nic_idle_ratio x the median NIC, during a
 *                              sweep that should spread over every NIC
 *   nic_errors   EFANICErrors  error counters moved during the run by more
 *                              than nic_max_errors on a NIC
 *   nic_speed    EFANICSlow    host engine: a rail (one endpoint per NIC)
 *                              below nic_slow_ratio x the median rail; the
 *                              per-rail pairwise re-test says whose NIC
 *                              (SlowPeer, warn, when it is a peer's)
 *
 * Idleness is judged only where the engine drives every NIC (nics.spread)
 * and the NICs moved nic_idle_min_bytes each on average: small sweeps
 * travel on one channel, one NIC. Both run only after a collective that
 * finished; after a failed one the counters are in the report but judge
 * nothing (a dead peer moves this node's unresponsive_remote_events), and
 * neither does a run over a fallback provider (tcp, shm), which never
 * touched the EFA NICs. */
#include "verdict.h"

#include "../discover/discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../probe/hw_counters.h"

#define COND PF_COND_FABRIC
#define LIST_MAX 4                    /* NICs named in a message */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static const struct pf_nic_window *sweep_window(const struct pf_nics *s)
{
    for (int w = 0; w < s->nwin; w++)
        if (!strcmp(s->win[w].stage, "sweep"))
            return &s->win[w];
    return NULL;
}

static void nic_traffic(struct pf_run *run)
{
    const struct pf_nics *s = &run->coll.nics;
    const struct pf_nic_window *w = sweep_window(s);
    const struct pf_config *cfg = &run->cfg;
    uint64_t bytes[PF_MAX_EFA], sorted[PF_MAX_EFA], total = 0, median;
    char names[256] = "", tot[32], med[32], one[32], floor_txt[32];
    int n = s->n, idle = 0, unknown = 0;

    if (!w) {
        pf_verdict_add(&run->verdict, "nic_traffic", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "%s",
                       s->note[0] ? s->note : "no EFA device to account for");
        return;
    }
    for (int i = 0; i < n; i++) {
        bool known;
        bytes[i] = pf_hwc_bytes(w->nic[i].d, w->nic[i].present, &known);
        unknown += !known;
        total += bytes[i];
        sorted[i] = bytes[i];
    }
    if (unknown == n) {
        pf_verdict_add(&run->verdict, "nic_traffic", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "no byte counter on any of %d "
                       "NICs: traffic per NIC unknown", n);
        return;
    }
    pf_hwc_fmt_bytes(tot, sizeof(tot), (double)total);
    if (!s->spread || n < 2) {
        pf_verdict_add(&run->verdict, "nic_traffic", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "%d NIC(s) moved %s in the "
                       "sweep; not judged: %s", n, tot,
                       n < 2 ? "one NIC has no sibling to compare with"
                             : s->spread_note);
        return;
    }
    pf_hwc_fmt_bytes(floor_txt, sizeof(floor_txt),
                      (double)cfg->nic_idle_min_bytes);
    if (total / (uint64_t)n < cfg->nic_idle_min_bytes) {
        pf_hwc_fmt_bytes(one, sizeof(one), (double)total / n);
        pf_verdict_add(&run->verdict, "nic_traffic", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "%d NICs moved %s in the "
                       "sweep, %s each on average: below nic_idle_min_bytes "
                       "(%s), too little to judge their shares", n, tot, one,
                       floor_txt);
        return;
    }
    qsort(sorted, (size_t)n, sizeof(sorted[0]), cmp_u64);
    median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    pf_hwc_fmt_bytes(med, sizeof(med), (double)median);
    for (int i = 0; i < n; i++) {
        if (bytes[i] > 0 && (double)bytes[i] >= cfg->nic_idle_ratio *
                                                    (double)median)
            continue;
        if (idle++ < LIST_MAX) {
            pf_hwc_fmt_bytes(one, sizeof(one), (double)bytes[i]);
            snprintf(names + strlen(names), sizeof(names) - strlen(names),
                     "%s%s %s (%.1f%%)", idle > 1 ? ", " : "",
                     run->node.efa[i].name, one,
                     total ? 100.0 * (double)bytes[i] / (double)total : 0);
        }
    }
    if (idle == 0) {
        pf_hwc_fmt_bytes(one, sizeof(one), (double)sorted[0]);
        pf_verdict_add(&run->verdict, "nic_traffic", COND, PF_PASS, PF_R_None,
                       "", "all %d NICs carried traffic: %s in the sweep, "
                       "median %s, least %s (idle below %.0f%% of the "
                       "median)", n, tot, med, one,
                       100.0 * cfg->nic_idle_ratio);
        return;
    }
    pf_verdict_add(&run->verdict, "nic_traffic", COND, PF_FAIL, PF_R_EFANICIdle,
                   "", "%d of %d NICs idle during the sweep: %s%s; the median "
                   "NIC moved %s of the node's %s (idle: below %.0f%% of the "
                   "median)", idle, n, names, idle > LIST_MAX ? ", ..." : "",
                   med, tot, 100.0 * cfg->nic_idle_ratio);
}

/* "sweep" or "pairwise with rank 3" */
static void stage_label(const struct pf_nic_window *w, char *out, size_t len)
{
    if (w->peer >= 0)
        snprintf(out, len, "%s with rank %d", w->stage, w->peer);
    else
        snprintf(out, len, "%s", w->stage);
}

static void nic_errors(struct pf_run *run)
{
    const struct pf_nics *s = &run->coll.nics;
    const struct pf_config *cfg = &run->cfg;
    char list[384] = "";
    int bad = 0, watched = 0;

    if (s->nwin == 0) {
        pf_verdict_add(&run->verdict, "nic_errors", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "%s",
                       s->note[0] ? s->note : "no EFA device to account for");
        return;
    }
    for (int c = 0; c < PF_HWC_COUNT; c++)
        watched += pf_hwc_is_error((enum pf_hwc)c) &&
                   (s->win[0].nic[0].present & (1u << c));
    for (int i = 0; i < s->n; i++) {
        uint64_t sum[PF_HWC_COUNT] = { 0 };
        uint32_t present = ~0u;
        char moved[192], where[64] = "";

        for (int w = 0; w < s->nwin; w++) {
            const struct pf_nic_delta *d = &s->win[w].nic[i];
            present &= d->present;
            if (pf_hwc_errors(d->d, d->present) > 0 && !where[0])
                stage_label(&s->win[w], where, sizeof(where));
            for (int c = 0; c < PF_HWC_COUNT; c++)
                sum[c] += d->d[c];
        }
        if (pf_hwc_errors(sum, present) <= (uint64_t)cfg->nic_max_errors)
            continue;
        if (bad++ < LIST_MAX) {
            pf_hwc_errors_text(sum, present, "+", moved, sizeof(moved));
            snprintf(list + strlen(list), sizeof(list) - strlen(list),
                     "%s%s %s (first in the %s)", bad > 1 ? "; " : "",
                     run->node.efa[i].name, moved, where);
        }
    }
    if (bad == 0) {
        pf_verdict_add(&run->verdict, "nic_errors", COND, PF_PASS, PF_R_None,
                       "", "no error counter moved on %d NIC(s) during the "
                       "run (%d error counters watched over the sweep%s)%s%s",
                       s->n, watched,
                       s->nwin > 1 ? " and the pairwise re-test" : "",
                       s->note[0] ? "; " : "", s->note);
        return;
    }
    pf_verdict_add(&run->verdict, "nic_errors", COND, PF_FAIL,
                   PF_R_EFANICErrors, "", "%d of %d NICs counted errors "
                   "during the run (more than nic_max_errors %d): %s%s",
                   bad, s->n, cfg->nic_max_errors, list,
                   bad > LIST_MAX ? "; ..." : "");
}

/* Host engine rails: the ring's per-NIC timings, then whose NIC the
 * per-rail pairwise re-test blamed. */
static void nic_speed(struct pf_run *run)
{
    const struct pf_nics *s = &run->coll.nics;
    int self = run->coll.strag.self, mine = -1, peer = -1, slow = 0;
    double lo = -1, hi = 0;
    char rates[160] = "";

    if (s->nrails < 2)
        return;                       /* one NIC: no sibling to compare */
    for (int r = 0; r < s->nrails; r++) {
        const struct pf_rail *rl = &s->rails[r];
        if (lo < 0 || rl->gbps < lo)
            lo = rl->gbps;
        if (rl->gbps > hi)
            hi = rl->gbps;
        slow += rl->slow;
        if (rl->suspect >= 0 &&
            pf_roster_same_node(&run->coll.roster, rl->suspect, self)) {
            if (mine < 0)
                mine = r;
        } else if (rl->suspect >= 0 && peer < 0) {
            peer = r;
        }
        if (strlen(rates) + 48 < sizeof(rates))
            snprintf(rates + strlen(rates), sizeof(rates) - strlen(rates),
                     "%s%s %.3f", r ? ", " : "", rl->nic, rl->gbps);
    }
    if (mine >= 0) {
        pf_verdict_add(&run->verdict, "nic_speed", COND, PF_FAIL,
                       PF_R_EFANICSlow, "", "NIC %s (rail %d) of this node "
                       "(rank %d) is slow: rails %s GB/s in the ring; %s",
                       s->rails[mine].nic, mine, self, rates, s->rail_note);
        return;
    }
    if (peer >= 0) {
        pf_verdict_add(&run->verdict, "nic_speed", COND, PF_WARN,
                       PF_R_SlowPeer, pf_reason_name(PF_R_EFANICSlow),
                       "rank %d's NIC on rail %d is slow, not this node's "
                       "(rank %d): rails %s GB/s in the ring; %s",
                       s->rails[peer].suspect, peer, self, rates,
                       s->rail_note);
        return;
    }
    if (slow == 0) {
        pf_verdict_add(&run->verdict, "nic_speed", COND, PF_PASS, PF_R_None,
                       "", "%d NICs alike: %.3f..%.3f GB/s per rail in the "
                       "ring (slow below %.0f%% of the median)", s->nrails,
                       lo, hi, 100.0 * run->cfg.nic_slow_ratio);
        return;
    }
    for (int r = 0; r < s->nrails; r++) {
        if (!s->rails[r].slow)
            continue;
        pf_verdict_add(&run->verdict, "nic_speed", COND, PF_FAIL,
                       PF_R_EFANICSlow, "", "rail %d (NIC %s here) is slow "
                       "in the ring: rails %s GB/s (slow below %.0f%% of the "
                       "median); whose NIC is not known: this node's or a "
                       "peer's on that rail%s%s", r, s->rails[r].nic, rates,
                       100.0 * run->cfg.nic_slow_ratio,
                       s->rail_note[0] ? "; " : "", s->rail_note);
        return;
    }
}

void pf_verdict_nics(struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;

    nic_speed(run);
    if (c->nics.n == 0)
        return;                       /* no EFA device: nothing to say */
    if (c->fabric.provider_is_fallback) {
        /* This run's traffic never touched the EFA NICs: what moved there
         * is someone else's, reported but not held against the node. */
        static const char *const names[] = { "nic_traffic", "nic_errors" };
        for (int i = 0; i < 2; i++)
            pf_verdict_add(&run->verdict, names[i], COND, PF_SKIP,
                           PF_R_EFANotRequired, "", "provider %s: this run "
                           "did not use the EFA NICs (their counters are in "
                           "the report)", c->fabric.provider);
        return;
    }
    nic_traffic(run);
    nic_errors(run);
}
