/* Prometheus metrics (metrics.h): the exposition text of a run, and the
 * textfile node-exporter reads; pushgateway.c pushes the same text. */
#include "metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../probe/hw_counters.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/version.h"

/* ------------------------------------------------------------- families */

/* Every family, in the order written. Its HELP/TYPE lines are what the
 * dashboard and docs tests hold the chart and docs/reference/metrics.md to. */
enum fam {
    F_LAST_RUN, F_DURATION, F_STATUS, F_EXIT, F_VERDICT, F_BUILD, F_BUSBW, F_PEAK,
    F_AVG, F_JUDGED, F_FLOOR, F_FLOOR_SIZE, F_COLL_DURATION, F_WRONG, F_RANKS,
    F_NODES, F_EFA, F_EFA_EXPECTED, F_PORT_UP, F_NIC_BYTES, F_NIC_ERRORS,
    F_NIC_ERROR_EVENTS, F_BASE_MEDIAN, F_BASE_FLOOR, F_BASE_RUNS, F_COUNT
};

static const struct {
    const char *name, *help;
} fams[F_COUNT] = {
    [F_LAST_RUN] = { "efa_preflight_last_run_timestamp_seconds",
                     "Unix time the last validation finished." },
    [F_DURATION] = { "efa_preflight_run_duration_seconds",
                     "Seconds the last validation took, probe to publishing." },
    [F_STATUS] = { "efa_preflight_status",
                   "1 for the status the last validation left on the Node "
                   "(pass, warn, fail, error; usage when it wrote nothing to "
                   "the cluster), 0 for the others." },
    [F_EXIT] = { "efa_preflight_exit_code",
                 "Exit code of the last validation's verdict (0 pass, 1 "
                 "failed, 2 usage, 3 infrastructure, 4 a peer failed)." },
    [F_VERDICT] = { "efa_preflight_verdict_info",
                    "Always 1: the last validation's deciding reason (empty "
                    "on a clean pass) and its class, command, instance type "
                    "and agent version as labels." },
    [F_BUILD] = { "efa_preflight_build_info",
                  "Always 1; label version: the agent that wrote these metrics "
                  "(for dashboards that follow a rollout)." },
    [F_BUSBW] = { "efa_preflight_busbw_bytes_per_second",
                  "all_reduce bus bandwidth at each message size (label "
                  "bytes), out of place and in place, as nccl-tests' busbw." },
    [F_PEAK] = { "efa_preflight_busbw_peak_bytes_per_second",
                 "Best busbw at the largest message size." },
    [F_AVG] = { "efa_preflight_busbw_average_bytes_per_second",
                "Mean busbw over all sizes (nccl-tests' Avg bus bandwidth)." },
    [F_JUDGED] = { "efa_preflight_busbw_judged_bytes_per_second",
                   "The busbw judged against the floor: the best at or above "
                   "the floor's size (the largest size when it names none)." },
    [F_FLOOR] = { "efa_preflight_busbw_floor_bytes_per_second",
                  "The busbw floor the verdict applied; absent when none "
                  "applies." },
    [F_FLOOR_SIZE] = { "efa_preflight_busbw_floor_message_size_bytes",
                       "Message size of the busbw judged against the floor." },
    [F_COLL_DURATION] = { "efa_preflight_collective_duration_seconds",
                          "Seconds the collective took: rendezvous, engine, "
                          "sweep and re-test." },
    [F_WRONG] = { "efa_preflight_collective_wrong_elements",
                  "Wrong elements the data check found over all sizes and "
                  "ranks." },
    [F_RANKS] = { "efa_preflight_collective_ranks",
                  "Global ranks of the all_reduce (processes x GPUs)." },
    [F_NODES] = { "efa_preflight_collective_nodes",
                  "Nodes of the all_reduce." },
    [F_EFA] = { "efa_preflight_efa_devices",
                "EFA devices found on the node." },
    [F_EFA_EXPECTED] = { "efa_preflight_efa_devices_expected",
                         "EFA devices the instance type should have; absent "
                         "when unknown." },
    [F_PORT_UP] = { "efa_preflight_efa_port_up",
                    "1 when the EFA device's port is ACTIVE, per device." },
    [F_NIC_BYTES] = { "efa_preflight_nic_sweep_bytes",
                      "Bytes each EFA device moved during the sweep, from its "
                      "hardware counters (tx + rx)." },
    [F_BASE_MEDIAN] = { "efa_preflight_baseline_pair_median_bytes_per_second",
                        "The fleet baseline's median pair link at the size "
                        "the pairs were tested at (label bytes); absent "
                        "without a baseline." },
    [F_BASE_FLOOR] = { "efa_preflight_baseline_pair_floor_bytes_per_second",
                       "What each pair link was held to: the larger of the "
                       "catalog floor and baseline_fraction x that median; "
                       "absent when no pairwise test judged the links." },
    [F_BASE_RUNS] = { "efa_preflight_baseline_pair_runs",
                      "Runs behind that median (the baseline judges from 3)." },
    [F_NIC_ERRORS] = { "efa_preflight_nic_errors",
                       "Rise of each EFA device's error counters during the "
                       "collective (sweep and re-test), summed." },
    [F_NIC_ERROR_EVENTS] = { "efa_preflight_nic_error_events",
                             "Rise of one error counter (label counter) of an "
                             "EFA device during the collective; only counters "
                             "that rose." },
};

const char *pf_metrics_family(size_t i)
{
    return i < F_COUNT ? fams[i].name : NULL;
}

/* --------------------------------------------------------------- buffer */

struct mbuf {
    char *p;
    size_t len, cap;
    bool oom;
    const char *node;     /* the node label of every sample; "" = none */
};

static void mb_printf(struct mbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void mb_printf(struct mbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->oom)
        return;
    for (int tries = 0; tries < 2; tries++) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    b->oom = true;
}

bool pf_metrics_escape(const char *in, char *out, size_t cap)
{
    size_t o = 0;

    for (const char *s = in; *s; s++) {
        const char *rep = *s == '\\' ? "\\\\" : *s == '"' ? "\\\""
                          : *s == '\n' ? "\\n" : NULL;
        size_t n = rep ? 2 : 1;
        if (o + n >= cap)
            return false;
        if (rep)
            memcpy(out + o, rep, 2);
        else
            out[o] = *s;
        o += n;
    }
    if (o >= cap)
        return false;
    out[o] = '\0';
    return true;
}

static void head(struct mbuf *b, enum fam f)
{
    mb_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", fams[f].name,
              fams[f].help, fams[f].name);
}

/* The shortest text that reads back as exactly v (as cJSON prints). */
static const char *shortest(double v, char *out, size_t cap)
{
    snprintf(out, cap, "%.15g", v);
    if (strtod(out, NULL) != v)
        snprintf(out, cap, "%.17g", v);
    return out;
}

static void label(struct mbuf *b, bool first, const char *key,
                  const char *value)
{
    /* Worst case every byte doubles. */
    size_t cap = 2 * strlen(value) + 1;
    char *esc = malloc(cap);

    if (!esc || !pf_metrics_escape(value, esc, cap)) {
        free(esc);
        b->oom = true;
        return;
    }
    mb_printf(b, "%s%s=\"%s\"", first ? "{" : ",", key, esc);
    free(esc);
}

/* One sample; labels is {key, value, key, value, ..., NULL}. The node
 * label comes first on every sample, so the textfile (scraped with
 * node-exporter's address as instance) and the Pushgateway's group read
 * alike; an empty one is left out, which Prometheus reads the same. */
static void sample(struct mbuf *b, enum fam f, const char *const *labels,
                   double v)
{
    char num[32];
    bool node = b->node && *b->node;

    mb_printf(b, "%s", fams[f].name);
    if (node)
        label(b, true, "node", b->node);
    for (int i = 0; labels && labels[i]; i += 2)
        label(b, !node && !i, labels[i], labels[i + 1]);
    if (node || (labels && labels[0]))
        mb_printf(b, "}");
    if (isnan(v))
        mb_printf(b, " NaN\n");
    else if (isinf(v))
        mb_printf(b, " %sInf\n", v > 0 ? "+" : "-");
    else
        mb_printf(b, " %s\n", shortest(v, num, sizeof(num)));
}

static void one(struct mbuf *b, enum fam f, double v)
{
    head(b, f);
    sample(b, f, NULL, v);
}

/* ------------------------------------------------------------- the text */

static int expected_efa(const struct pf_run *run)
{
    if (run->cfg.expect_efa >= 0)
        return run->cfg.expect_efa;
    return run->instance ? run->instance->efa_count : -1;
}

static double run_seconds(const struct pf_run *run)
{
    int64_t start;

    if (!run->deadline_ms)
        return 0;
    start = run->deadline_ms - (int64_t)run->cfg.timeout_s * 1000;
    return (double)(pf_now_ms() - start) / 1000.0;
}

static void verdict_metrics(struct mbuf *b, const struct pf_run *run,
                            const struct pf_verdict *v, double now_s)
{
    static const char *const statuses[] = { "pass", "warn", "fail", "error",
                                            "usage" };
    /* The class's one status word, as on the Node and in the report. */
    const char *word = pf_class_status_word(v->cls);

    one(b, F_LAST_RUN, now_s);
    one(b, F_DURATION, run_seconds(run));
    head(b, F_STATUS);
    for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
        sample(b, F_STATUS, (const char *[]){ "status", statuses[i], NULL },
               !strcmp(word, statuses[i]));
    one(b, F_EXIT, v->exit_code);
    head(b, F_VERDICT);
    /* The reason as the report has it: none on a clean pass. */
    sample(b, F_VERDICT, (const char *[]){
               "reason", v->cls == PF_CLASS_OK ? "" : pf_reason_name(v->headline),
               "class", pf_class_name(v->cls),
               "command", run->cfg.command == PF_CMD_NODE ? "node"
                          : run->cfg.command == PF_CMD_LOCAL ? "local" : "run",
               "instance_type", run->node.instance_type,
               "version", PF_VERSION, NULL }, 1);
    head(b, F_BUILD);
    sample(b, F_BUILD, (const char *[]){ "version", PF_VERSION, NULL }, 1);
}

static void collective_metrics(struct mbuf *b, const struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_fault *f = run->peers.fault.err != PF_OK
                                   ? &run->peers.fault : &c->fault;
    bool rows = c->nrows > 0;
    /* As the report: a collective that ran or failed has numbers. */
    bool tried = c->ran || f->err != PF_OK;
    char bytes[32];
    /* The floor and the busbw judged, as the collective left them. */
    uint64_t at = c->judgement.busbw_bytes;
    double floor = c->judgement.floor.gbps;
    double judged = c->judgement.busbw_gbps;

    head(b, F_BUSBW);
    for (int i = 0; i < c->nrows && i < PF_MAX_ROWS; i++) {
        snprintf(bytes, sizeof(bytes), "%llu",
                 (unsigned long long)c->rows[i].bytes);
        sample(b, F_BUSBW, (const char *[]){ "bytes", bytes, "placement",
                                             "out_of_place", NULL },
               c->rows[i].oop_busbw * 1e9);
        sample(b, F_BUSBW, (const char *[]){ "bytes", bytes, "placement",
                                             "in_place", NULL },
               c->rows[i].ip_busbw * 1e9);
    }
    head(b, F_PEAK);
    if (rows)
        sample(b, F_PEAK, NULL, c->peak_busbw * 1e9);
    head(b, F_AVG);
    if (rows)
        sample(b, F_AVG, NULL, c->avg_busbw * 1e9);
    head(b, F_JUDGED);
    if (rows && judged >= 0 && at > 0)
        sample(b, F_JUDGED, NULL, judged * 1e9);
    head(b, F_FLOOR);
    if (tried && floor > 0)
        sample(b, F_FLOOR, NULL, floor * 1e9);
    head(b, F_FLOOR_SIZE);
    if (rows && judged >= 0 && at > 0)
        sample(b, F_FLOOR_SIZE, NULL, (double)at);
    head(b, F_COLL_DURATION);
    if (tried)
        sample(b, F_COLL_DURATION, NULL, c->wall_s);
    head(b, F_WRONG);
    if (rows)
        sample(b, F_WRONG, NULL, (double)c->wrong_total);
    head(b, F_RANKS);
    if (tried)
        sample(b, F_RANKS, NULL, c->nranks);
    head(b, F_NODES);
    if (tried)
        sample(b, F_NODES, NULL, c->nnodes);
}

/* The fleet baseline the pair links were held to (baseline/). */
static void baseline_metrics(struct mbuf *b, const struct pf_run *run)
{
    const struct pf_straggler *s = &run->coll.strag;
    const struct pf_base_held *h = &s->held;
    bool judged = !strcmp(s->method, "pairwise") && h->note[0];
    char bytes[32];

    snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)h->bytes);
    head(b, F_BASE_MEDIAN);
    if (judged && h->median_gbps > 0)
        sample(b, F_BASE_MEDIAN, (const char *[]){ "bytes", bytes, NULL },
               h->median_gbps * 1e9);
    head(b, F_BASE_FLOOR);
    if (judged && (h->applied || h->catalog_gbps > 0))
        sample(b, F_BASE_FLOOR, (const char *[]){ "bytes", bytes, NULL },
               (h->applied ? h->floor_gbps : h->catalog_gbps) * 1e9);
    head(b, F_BASE_RUNS);
    if (judged)
        sample(b, F_BASE_RUNS, (const char *[]){ "bytes", bytes, NULL },
               h->runs);
}

/* Per NIC, from the hardware counters read around the collective
 * (collective/nics.h), as the report's collective.nics.devices has them:
 * the sweep's bytes, and error counters summed over every window where
 * each was present in all. Nothing when the counters were not read. */
static bool error_rise(const struct pf_nics *s, int i, enum pf_hwc c,
                       uint64_t *sum)
{
    *sum = 0;
    if (!pf_hwc_is_error(c))
        return false;
    for (int w = 0; w < s->nwin; w++) {
        if (!(s->win[w].nic[i].present & (1u << c)))
            return false;
        *sum += s->win[w].nic[i].d[c];
    }
    return true;
}

static void nic_counter_metrics(struct mbuf *b, const struct pf_run *run)
{
    const struct pf_nics *s = &run->coll.nics;
    bool read = s->read && s->nwin > 0;

    head(b, F_NIC_BYTES);
    for (int i = 0; read && i < s->n && i < PF_MAX_EFA; i++) {
        bool known;
        uint64_t bytes = pf_hwc_bytes(s->win[0].nic[i].d,
                                      s->win[0].nic[i].present, &known);
        if (known)
            sample(b, F_NIC_BYTES, (const char *[]){ "device",
                   run->node.efa[i].name, NULL }, (double)bytes);
    }
    head(b, F_NIC_ERRORS);
    for (int i = 0; read && i < s->n && i < PF_MAX_EFA; i++) {
        uint64_t total = 0;
        bool any = false;
        for (int c = 0; c < PF_HWC_COUNT; c++) {
            uint64_t sum;
            if (error_rise(s, i, (enum pf_hwc)c, &sum)) {
                any = true;
                total += sum;
            }
        }
        if (any)
            sample(b, F_NIC_ERRORS, (const char *[]){ "device",
                   run->node.efa[i].name, NULL }, (double)total);
    }
    head(b, F_NIC_ERROR_EVENTS);
    for (int i = 0; read && i < s->n && i < PF_MAX_EFA; i++) {
        for (int c = 0; c < PF_HWC_COUNT; c++) {
            uint64_t sum;
            if (error_rise(s, i, (enum pf_hwc)c, &sum) && sum > 0)
                sample(b, F_NIC_ERROR_EVENTS, (const char *[]){
                       "device", run->node.efa[i].name,
                       "counter", pf_hwc_name((enum pf_hwc)c), NULL },
                       (double)sum);
        }
    }
}

/* Per NIC: the port state the probe read, then the counters' deltas. */
static void nic_metrics(struct mbuf *b, const struct pf_run *run)
{
    const struct pf_node *n = &run->node;
    int stored = n->efa_count < PF_MAX_EFA ? n->efa_count : PF_MAX_EFA;
    int expect = expected_efa(run);

    one(b, F_EFA, n->efa_count);
    head(b, F_EFA_EXPECTED);
    if (expect >= 0)
        sample(b, F_EFA_EXPECTED, NULL, expect);
    head(b, F_PORT_UP);
    for (int i = 0; i < stored; i++)
        sample(b, F_PORT_UP, (const char *[]){ "device", n->efa[i].name, NULL },
               n->efa[i].port_active);
    nic_counter_metrics(b, run);
}

const char *pf_metrics_node(const struct pf_run *run)
{
    return run->cfg.node_name[0] ? run->cfg.node_name : run->node.hostname;
}

char *pf_metrics_text(const struct pf_run *run, double now_s)
{
    return pf_metrics_text_of(run, &run->verdict, now_s);
}

char *pf_metrics_text_of(const struct pf_run *run, const struct pf_verdict *v,
                         double now_s)
{
    struct mbuf b = { .node = pf_metrics_node(run) };

    verdict_metrics(&b, run, v, now_s);
    collective_metrics(&b, run);
    nic_metrics(&b, run);
    baseline_metrics(&b, run);
    if (b.oom || !b.p) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* -------------------------------------------------------------- outputs */

pf_err pf_metrics_write_textfile(const char *path, const char *text,
                                 char *err)
{
    pf_err rc = pf_write_file_atomic(path, text, strlen(text), err);

    if (rc != PF_OK)
        pf_err_prefix(err, "metrics textfile");
    return rc;
}
