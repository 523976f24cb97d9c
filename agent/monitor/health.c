/* Per-NIC health with hysteresis (monitor.h).
 *
 * A NIC is faulted when, on K reads in a row (K = --monitor-raise, the
 * same for every fault),
 *   - a judged counter rose faster than its rate (EFANICErrorRate),
 *   - a port is not ACTIVE (EFANICLinkDown), or
 *   - it was seen before and is not in sysfs (EFANICDeviceGone);
 * the node is faulted when it has fewer EFA devices than its type on K
 * reads (EFANICDeviceGone, no NIC named). A fault clears after M good reads
 * in a row. Fewer than K bad reads are a suspicion, not a fault: noted
 * (pending, logged, on /metrics as efa_preflight_nic_bad_reads) and nothing
 * more: no change, so no condition flip, Event, taint or re-validation. A
 * sysfs read that races a driver reset, or a port that renegotiates, must
 * not taint a healthy node (a false failure costs more than a late one).
 *
 * Counters that speak of the remote side (retransmit timeouts,
 * unresponsive and impaired remotes) rising on more than half of the
 * node's NICs at once point at the fabric or the peers, not at this node:
 * that fault is EFAFabricErrorsRising (class group, condition Unknown), as
 * the gate blames only what it localised. */
#include "monitor.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counters judged by default, their rate per second, and whether a
 * rise speaks of the remote side (docs/reference/counters.md says why each). */
static const struct {
    const char *counter;
    double per_s;
} defaults[] = {
    { "retrans_timeout_events", 0 },      /* SRD gave up on a path */
    { "unresponsive_remote_events", 0 },  /* a remote stopped answering */
    { "impaired_remote_conn_events", 0 }, /* a connection was rate-limited */
    { "rx_drops", 100 },                  /* NVSentinel: > 100/s degraded */
    { "rdma_read_wr_err", 0 },            /* RDMA read work requests failed */
    { "rdma_write_wr_err", 0 },           /* RDMA write work requests failed */
    { "no_completion_cmds", 0 },          /* admin queue lost a command */
};

static bool remote_counter(const char *c)
{
    return !strcmp(c, "retrans_timeout_events") ||
           !strcmp(c, "unresponsive_remote_events") ||
           !strcmp(c, "impaired_remote_conn_events");
}

static pf_err rule_set(struct pf_mon_rules *r, const char *name, size_t len,
                       double per_s, char *err)
{
    for (int i = 0; i < r->n; i++)
        if (strlen(r->r[i].counter) == len &&
            !strncmp(r->r[i].counter, name, len)) {
            r->r[i].per_s = per_s;
            return PF_OK;
        }
    void *p = realloc(r->r, (size_t)(r->n + 1) * sizeof(*r->r));
    if (!p)
        return pf_fail(err, PF_ERR_SYS, "out of memory");
    r->r = p;
    snprintf(r->r[r->n].counter, sizeof(r->r[0].counter), "%.*s", (int)len,
             name);
    r->r[r->n++].per_s = per_s;
    return PF_OK;
}

pf_err pf_mon_rules_parse(const char *spec, int raise_after, int clear_after,
                          struct pf_mon_rules *out, char *err)
{
    const char *p = spec ? spec : "";

    memset(out, 0, sizeof(*out));
    out->raise_after = raise_after > 0 ? raise_after : 1;
    out->clear_after = clear_after > 0 ? clear_after : 1;
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        if (rule_set(out, defaults[i].counter, strlen(defaults[i].counter),
                     defaults[i].per_s, err) != PF_OK)
            goto fail;
    while (*p) {
        const char *end = strchr(p, ','), *eq;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[64], num[64], *stop;
        double v;

        eq = memchr(p, '=', len);
        if (!eq || eq == p || (size_t)(eq - p) >= sizeof(name) ||
            len - (size_t)(eq - p) - 1 >= sizeof(num)) {
            pf_fail(err, PF_ERR_USAGE, "monitor_thresholds: '%.*s' is not "
                    "counter=rate", (int)len, p);
            goto fail;
        }
        snprintf(name, sizeof(name), "%.*s", (int)(eq - p), p);
        snprintf(num, sizeof(num), "%.*s", (int)(len - (size_t)(eq - p) - 1),
                 eq + 1);
        if (!pf_mon_metric_name_ok(name)) {
            pf_fail(err, PF_ERR_USAGE, "monitor_thresholds: '%s' is not a "
                    "counter file name ([a-z0-9_])", name);
            goto fail;
        }
        errno = 0;
        v = strtod(num, &stop);
        if (errno || stop == num || *stop || !isfinite(v)) {
            pf_fail(err, PF_ERR_USAGE, "monitor_thresholds: %s: '%s' is not "
                    "a rate per second", name, num);
            goto fail;
        }
        if (rule_set(out, name, strlen(name), v, err) != PF_OK)
            goto fail;
        p += len;
        if (*p == ',')
            p++;
    }
    return PF_OK;
fail:
    pf_mon_rules_free(out);
    return PF_ERR_USAGE;
}

void pf_mon_rules_free(struct pf_mon_rules *r)
{
    free(r->r);
    r->r = NULL;
    r->n = 0;
}

/* The counter summed over the NIC's ports (device level included); false
 * when absent. */
static bool nic_sum(const struct pf_mon_nic *nic, const char *name,
                    uint64_t *out)
{
    bool any = false;

    *out = 0;
    for (int i = 0; i < nic->n; i++)
        if (!strcmp(nic->c[i].name, name)) {
            *out += nic->c[i].v;
            any = true;
        }
    return any;
}

static struct pf_mon_nic_state *state_for(struct pf_mon_health *h,
                                          const char *name, int nrules,
                                          char *err)
{
    struct pf_mon_nic_state *s;
    void *p;

    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->nics[i].name, name))
            return &h->nics[i];
    p = realloc(h->nics, (size_t)(h->n + 1) * sizeof(*h->nics));
    if (!p) {
        pf_fail(err, PF_ERR_SYS, "out of memory");
        return NULL;
    }
    h->nics = p;
    s = &h->nics[h->n];
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->streak = calloc((size_t)(nrules ? nrules : 1), sizeof(*s->streak));
    s->rate = calloc((size_t)(nrules ? nrules : 1), sizeof(*s->rate));
    if (!s->streak || !s->rate) {
        free(s->streak);
        free(s->rate);
        pf_fail(err, PF_ERR_SYS, "out of memory");
        return NULL;
    }
    h->n++;
    return s;
}

static pf_err add_change(struct pf_mon_health *h, const char *nic,
                         bool raised, enum pf_reason reason, const char *msg,
                         char *err)
{
    void *p = realloc(h->changes,
                      (size_t)(h->nchanges + 1) * sizeof(*h->changes));
    struct pf_mon_change *c;

    if (!p)
        return pf_fail(err, PF_ERR_SYS, "out of memory");
    h->changes = p;
    c = &h->changes[h->nchanges++];
    snprintf(c->nic, sizeof(c->nic), "%s", nic);
    c->raised = raised;
    c->reason = reason;
    snprintf(c->msg, sizeof(c->msg), "%s", msg);
    return PF_OK;
}

static pf_err raise_fault(struct pf_mon_health *h,
                          struct pf_mon_nic_state *s, enum pf_reason reason,
                          const char *why, char *err)
{
    char msg[320];
    bool was = s->faulted;

    s->good = 0;
    /* The same fault with new numbers keeps the words it was raised with:
     * the condition's message stays put (no write to the Node every
     * interval) and the live rates are on /metrics. */
    if (was && s->reason == reason)
        return PF_OK;
    s->faulted = true;
    s->reason = reason;
    snprintf(s->why, sizeof(s->why), "%s", why);
    snprintf(msg, sizeof(msg), "%s: %s", s->name, why);
    return add_change(h, s->name, true, reason, msg, err);
}

pf_err pf_mon_judge(struct pf_mon_health *h, const struct pf_mon_rules *rules,
                    const struct pf_mon_snap *prev,
                    const struct pf_mon_snap *cur, char *err)
{
    double dt = prev ? cur->t - prev->t : 0;
    int with_counters = 0, remote_bad = 0, judged = 0;
    bool *bad_nic = NULL;

    h->nchanges = 0;
    h->intervals++;
    for (int i = 0; i < h->n; i++) {
        h->nics[i].seen = false;
        h->nics[i].pending[0] = '\0';
    }
    bad_nic = calloc((size_t)(cur->n ? cur->n : 1), sizeof(*bad_nic));
    if (!bad_nic)
        return pf_fail(err, PF_ERR_SYS, "out of memory");

    /* Rates first, for the remote-side rule that looks across NICs. */
    for (int i = 0; i < cur->n; i++) {
        const struct pf_mon_nic *nic = &cur->nics[i];
        const struct pf_mon_nic *old = prev ? pf_mon_nic_find(prev, nic->name)
                                            : NULL;
        struct pf_mon_nic_state *s = state_for(h, nic->name, rules->n, err);
        bool remote = false;

        if (!s) {
            free(bad_nic);
            return PF_ERR_SYS;
        }
        s->seen = true;
        if (nic->n)
            with_counters++;
        for (int r = 0; r < rules->n; r++) {
            uint64_t a, b;
            s->rate[r] = -1;          /* not judged this interval */
            if (!old || dt <= 0 || rules->r[r].per_s < 0 ||
                !nic_sum(old, rules->r[r].counter, &a) ||
                !nic_sum(nic, rules->r[r].counter, &b)) {
                s->streak[r] = 0;
                continue;
            }
            judged++;
            /* A counter that went back (device reset) starts again. */
            s->rate[r] = b >= a ? (double)(b - a) / dt : 0;
            if (b > a && s->rate[r] > rules->r[r].per_s) {
                s->streak[r]++;
                bad_nic[i] = true;
                remote |= remote_counter(rules->r[r].counter);
            } else {
                s->streak[r] = 0;
            }
        }
        if (remote)
            remote_bad++;
    }
    h->counters_missing = cur->n > 0 && with_counters == 0;
    (void)judged;

    for (int i = 0; i < cur->n; i++) {
        const struct pf_mon_nic *nic = &cur->nics[i];
        struct pf_mon_nic_state *s = state_for(h, nic->name, rules->n, err);
        char why[256] = "";
        enum pf_reason reason = PF_R_None;
        pf_err rc = PF_OK;

        if (!s) {
            free(bad_nic);
            return PF_ERR_SYS;
        }
        bool bad = bad_nic[i];
        s->gone_streak = 0;
        if (!nic->port_active) {
            bad = true;
            if (++s->down_streak >= rules->raise_after) {
                reason = PF_R_EFANICLinkDown;
                snprintf(why, sizeof(why), "port %s", nic->port_state);
            } else {
                snprintf(s->pending, sizeof(s->pending), "port %s on %d of %d reads",
                         nic->port_state, s->down_streak, rules->raise_after);
            }
        } else {
            s->down_streak = 0;
        }
        for (int r = 0; r < rules->n && reason == PF_R_None; r++) {
            if (s->streak[r] && s->streak[r] < rules->raise_after && !s->pending[0])
                snprintf(s->pending, sizeof(s->pending),
                         "%s rising at %.1f/s on %d of %d reads", rules->r[r].counter,
                         s->rate[r], s->streak[r], rules->raise_after);
            if (s->streak[r] < rules->raise_after)
                continue;
            reason = remote_counter(rules->r[r].counter) && cur->n > 1 &&
                             2 * remote_bad > cur->n
                         ? PF_R_EFAFabricErrorsRising
                         : PF_R_EFANICErrorRate;
            snprintf(why, sizeof(why), "%s rising at %.1f/s for %d "
                     "intervals (threshold %g/s)", rules->r[r].counter,
                     s->rate[r], s->streak[r], rules->r[r].per_s);
        }
        if (reason != PF_R_None) {
            s->pending[0] = '\0';
            rc = raise_fault(h, s, reason, why, err);
        } else if (bad) {
            s->good = 0;              /* bad, not yet K in a row */
        } else if (s->faulted && ++s->good >= rules->clear_after) {
            char msg[320];
            snprintf(msg, sizeof(msg), "%s: healthy for %d intervals "
                     "(was %s: %s)", s->name, s->good,
                     pf_reason_name(s->reason), s->why);
            s->faulted = false;
            s->why[0] = '\0';
            rc = add_change(h, s->name, false, PF_R_EFANICRecovered, msg,
                            err);
        } else if (!s->faulted) {
            s->good++;
        }
        if (rc != PF_OK) {
            free(bad_nic);
            return rc;
        }
    }
    free(bad_nic);

    /* A NIC seen before and not now: gone once it stays away K reads. */
    for (int i = 0; i < h->n; i++) {
        struct pf_mon_nic_state *s = &h->nics[i];
        if (s->seen)
            continue;
        for (int r = 0; r < rules->n; r++) {
            s->streak[r] = 0;
            s->rate[r] = -1;
        }
        s->down_streak = 0;
        s->good = 0;
        if (++s->gone_streak < rules->raise_after) {
            snprintf(s->pending, sizeof(s->pending), "not in /sys/class/infiniband on "
                     "%d of %d reads", s->gone_streak, rules->raise_after);
            continue;
        }
        if (raise_fault(h, s, PF_R_EFANICDeviceGone,
                        "the device is no longer in /sys/class/infiniband",
                        err) != PF_OK)
            return PF_ERR_SYS;
    }

    /* Fewer devices than the type has, for K intervals: some types (p5en)
     * bring their EFA devices up late after boot. A device seen and then
     * gone is named at once above. */
    if (cur->expected > 0 && cur->efa_count < cur->expected &&
        ++h->count_bad >= rules->raise_after) {
        char why[160];
        snprintf(why, sizeof(why), "%d EFA devices, the instance type has %d",
                 cur->efa_count, cur->expected);
        h->count_good = 0;
        if (!h->count_fault || strcmp(h->count_why, why)) {
            bool was = h->count_fault;
            h->count_fault = true;
            snprintf(h->count_why, sizeof(h->count_why), "%s", why);
            if (!was && add_change(h, "", true, PF_R_EFANICDeviceGone, why,
                                   err) != PF_OK)
                return PF_ERR_SYS;
        }
    } else if (cur->expected > 0 && cur->efa_count < cur->expected) {
        h->count_good = 0;            /* short, not yet K in a row */
    } else if (h->count_bad = 0, h->count_fault &&
               ++h->count_good >= rules->clear_after) {
        char msg[320];
        snprintf(msg, sizeof(msg), "%d EFA devices again (was: %s)",
                 cur->efa_count, h->count_why);
        h->count_fault = false;
        h->count_why[0] = '\0';
        if (add_change(h, "", false, PF_R_EFANICRecovered, msg, err) != PF_OK)
            return PF_ERR_SYS;
    }
    return PF_OK;
}

void pf_mon_health_free(struct pf_mon_health *h)
{
    for (int i = 0; i < h->n; i++) {
        free(h->nics[i].streak);
        free(h->nics[i].rate);
    }
    free(h->nics);
    free(h->changes);
    memset(h, 0, sizeof(*h));
}

enum pf_reason pf_mon_condition(const struct pf_mon_health *h, char *msg,
                                size_t len)
{
    enum pf_reason worst = PF_R_None;
    size_t used = 0;

    msg[0] = '\0';
    if (h->count_fault) {
        worst = PF_R_EFANICDeviceGone;
        int k = snprintf(msg, len, "%s", h->count_why);
        used = k > 0 ? (size_t)k : 0;
    }
    for (int i = 0; i < h->n && used < len; i++) {
        const struct pf_mon_nic_state *s = &h->nics[i];
        if (!s->faulted)
            continue;
        /* A fault proven here outranks one that could not be judged. */
        if (worst == PF_R_None ||
            (pf_reason_class_of(worst) != PF_CLASS_NODE &&
             pf_reason_class_of(s->reason) == PF_CLASS_NODE))
            worst = s->reason;
        int k = snprintf(msg + used, len - used, "%s%s: %s", used ? "; " : "",
                         s->name, s->why);
        if (k > 0)
            used += (size_t)k;
    }
    if (worst != PF_R_None)
        return worst;
    if (h->counters_missing) {
        snprintf(msg, len, "ports and devices are judged, error rates are "
                 "not: the driver exposes no hw_counters");
        return PF_R_EFANICCountersUnavailable;
    }
    snprintf(msg, len, "every EFA NIC up, no judged error counter rising");
    return PF_R_EFANICsHealthy;
}
