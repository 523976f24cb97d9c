/* The Prometheus text format of one interval (monitor.h).
 *
 * Every sample of a metric family must follow its HELP and TYPE lines
 * without another family in between, so counters are written name by
 * name across the NICs, not NIC by NIC. Label values are device names and
 * the node name, which are DNS-like; they are escaped anyway. */
#include "monitor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pf_mon_buf_printf(struct pf_mon_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->oom)
        return;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t ncap = b->cap ? b->cap : 4096;
        while (ncap - b->len <= (size_t)n)
            ncap *= 2;
        char *p = realloc(b->p, ncap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = ncap;
    }
}

void pf_mon_buf_free(struct pf_mon_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

/* A label value with \, " and newline escaped, as the format asks. */
static void esc(const char *in, char *out, size_t len)
{
    size_t j = 0;

    for (; *in && j + 3 < len; in++) {
        if (*in == '\\' || *in == '"') {
            out[j++] = '\\';
            out[j++] = *in;
        } else if (*in == '\n') {
            out[j++] = '\\';
            out[j++] = 'n';
        } else {
            out[j++] = *in;
        }
    }
    out[j] = '\0';
}

static void family(struct pf_mon_buf *b, const char *name, const char *type,
                   const char *help)
{
    pf_mon_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                      type);
}

/* A family with one sample for the whole node. */
static void node_metric(struct pf_mon_buf *b, const char *name,
                        const char *type, const char *help, const char *node,
                        long long v)
{
    family(b, name, type, help);
    pf_mon_buf_printf(b, "%s{node=\"%s\"} %lld\n", name, node, v);
}

/* One NIC's sample of a gauge family. */
static void nic_sample(struct pf_mon_buf *b, const char *name,
                       const char *node, const char *nic, int v)
{
    char dev[160];

    esc(nic, dev, sizeof(dev));
    pf_mon_buf_printf(b, "%s{node=\"%s\",device=\"%s\"} %d\n", name, node,
                      dev, v);
}

/* Every distinct counter name, in order of first appearance: one family
 * each. The list holds pointers into s. */
static const char **names_of(const struct pf_mon_snap *s, int *n)
{
    const char **names = NULL;
    int cap = 0;

    *n = 0;
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->nics[i].n; j++) {
            const char *name = s->nics[i].c[j].name;
            bool dup = false;
            for (int k = 0; k < *n && !dup; k++)
                dup = !strcmp(names[k], name);
            if (dup)
                continue;
            if (*n == cap) {
                int ncap = cap ? 2 * cap : 32;
                const char **p = realloc(names, (size_t)ncap * sizeof(*p));
                if (!p) {
                    free(names);
                    *n = -1;
                    return NULL;
                }
                names = p;
                cap = ncap;
            }
            names[(*n)++] = name;
        }
    return names;
}

static void counters(struct pf_mon_buf *b, const char *node,
                     const struct pf_mon_snap *s)
{
    char metric[128], dev[160];
    int n;
    const char **names = names_of(s, &n);

    if (n < 0) {
        b->oom = true;
        return;
    }
    for (int k = 0; k < n; k++) {
        const char *name = names[k];
        bool lifespan = !strcmp(name, "lifespan");

        if (lifespan) {
            snprintf(metric, sizeof(metric),
                     "efa_preflight_nic_counters_lifespan_seconds");
            family(b, metric, "gauge", "How long the EFA driver caches "
                   "its counters (the hw_counters file lifespan).");
        } else {
            snprintf(metric, sizeof(metric), "efa_preflight_nic_%s_total",
                     name);
            pf_mon_buf_printf(b, "# HELP %s EFA hw counter %s (port "
                              "\"0\": the device-level counters).\n"
                              "# TYPE %s counter\n", metric, name, metric);
        }
        for (int a = 0; a < s->n; a++) {
            const struct pf_mon_nic *nic = &s->nics[a];
            esc(nic->name, dev, sizeof(dev));
            for (int c = 0; c < nic->n; c++) {
                if (strcmp(nic->c[c].name, name))
                    continue;
                if (lifespan)         /* milliseconds in the file */
                    pf_mon_buf_printf(b, "%s{node=\"%s\",device=\"%s\","
                                      "port=\"%d\"} %g\n", metric, node,
                                      dev, nic->c[c].port,
                                      (double)nic->c[c].v / 1000.0);
                else
                    pf_mon_buf_printf(b, "%s{node=\"%s\",device=\"%s\","
                                      "port=\"%d\"} %llu\n", metric, node,
                                      dev, nic->c[c].port,
                                      (unsigned long long)nic->c[c].v);
            }
        }
    }
    free(names);
}

pf_err pf_mon_expose(const char *node_name, const struct pf_mon_snap *s,
                     const struct pf_mon_health *h,
                     const struct pf_mon_rules *rules,
                     const struct pf_mon_gate *gate, int64_t now,
                     struct pf_mon_buf *b, char *err)
{
    static const char *const words[] = { "pass", "warn", "fail", "error",
                                         "pending", "validating",
                                         "untested" };
    char node[2 * PF_NAME_MAX], dev[160], msg[PF_ERRLEN];
    enum pf_reason cond = pf_mon_condition(h, msg, sizeof(msg));

    esc(node_name, node, sizeof(node));
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';

    counters(b, node, s);

    family(b, "efa_preflight_nic_link_up", "gauge",
           "1 when every port of the EFA device is ACTIVE.");
    for (int i = 0; i < s->n; i++)
        nic_sample(b, "efa_preflight_nic_link_up", node, s->nics[i].name,
                   s->nics[i].port_active ? 1 : 0);
    family(b, "efa_preflight_nic_healthy", "gauge",
           "1 unless the monitor holds a fault on this NIC (hysteresis).");
    for (int i = 0; i < h->n; i++)
        nic_sample(b, "efa_preflight_nic_healthy", node, h->nics[i].name,
                   h->nics[i].faulted ? 0 : 1);
    family(b, "efa_preflight_nic_bad_reads", "gauge",
           "Reads in a row on which this NIC looked bad (port down, gone, "
           "a counter rising); a fault from --monitor-raise reads.");
    for (int i = 0; i < h->n; i++) {
        const struct pf_mon_nic_state *ns = &h->nics[i];
        int bad = ns->down_streak > ns->gone_streak ? ns->down_streak : ns->gone_streak;
        for (int r = 0; r < rules->n; r++)
            if (ns->streak[r] > bad)
                bad = ns->streak[r];
        nic_sample(b, "efa_preflight_nic_bad_reads", node, ns->name, bad);
    }
    family(b, "efa_preflight_nic_judged_rate", "gauge",
           "Last interval's rise per second of each judged error counter.");
    for (int i = 0; i < h->n; i++) {
        if (!h->nics[i].seen)
            continue;
        esc(h->nics[i].name, dev, sizeof(dev));
        for (int r = 0; r < rules->n; r++)
            if (rules->r[r].per_s >= 0 && h->nics[i].rate[r] >= 0)
                pf_mon_buf_printf(b, "efa_preflight_nic_judged_rate{node="
                                  "\"%s\",device=\"%s\",counter=\"%s\"} "
                                  "%g\n", node, dev, rules->r[r].counter,
                                  h->nics[i].rate[r]);
    }
    node_metric(b, "efa_preflight_monitor_efa_devices", "gauge",
                "EFA devices found by the monitor's last read.", node,
                s->efa_count);
    if (s->expected >= 0)
        node_metric(b, "efa_preflight_monitor_efa_devices_expected", "gauge",
                    "EFA devices the instance type has (the catalog).", node,
                    s->expected);
    node_metric(b, "efa_preflight_monitor_efa_module_loaded", "gauge",
                "1 when the efa kernel module is loaded.", node,
                s->module_loaded ? 1 : 0);
    node_metric(b, "efa_preflight_monitor_uverbs_files", "gauge",
                "/dev/infiniband/uverbs* files present.", node,
                s->uverbs_present);
    family(b, "efa_preflight_monitor_condition", "gauge",
           "The EFANICHealthy condition: 1 for its status and reason.");
    pf_mon_buf_printf(b, "efa_preflight_monitor_condition{node=\"%s\","
                      "status=\"%s\",reason=\"%s\"} 1\n", node,
                      pf_class_condition_status(pf_reason_class_of(cond)),
                      pf_reason_name(cond));
    node_metric(b, "efa_preflight_monitor_intervals_total", "counter",
                "Intervals the monitor has judged since it started.", node,
                h->intervals);
    node_metric(b, "efa_preflight_monitor_last_read_timestamp_seconds",
                "gauge", "When the monitor last read the NICs.", node, now);

    family(b, "efa_preflight_gate_status", "gauge",
           "The last gate verdict on this node (the status label): 1 for "
           "the status it has.");
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        pf_mon_buf_printf(b, "efa_preflight_gate_status{node=\"%s\","
                          "status=\"%s\"} %d\n", node, words[i],
                          !strcmp(gate->status, words[i]) ? 1 : 0);
    if (gate->validated_at > 0)
        node_metric(b, "efa_preflight_gate_age_seconds", "gauge",
                    "Seconds since the gate last validated this node.", node,
                    now - gate->validated_at);
    if (gate->valid_until > 0)
        node_metric(b, "efa_preflight_gate_valid_until_timestamp_seconds",
                    "gauge", "When the gate's verdict on this node expires.",
                    node, gate->valid_until);
    if (b->oom)
        return pf_fail(err, PF_ERR_SYS, "out of memory rendering metrics");
    return PF_OK;
}
