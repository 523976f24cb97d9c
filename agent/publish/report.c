/* The JSON report, schema PF_REPORT_SCHEMA, documented field by field in
 * docs/report-schema.md. Only facts and verdicts go in: no config values
 * beyond the few that explain the verdict, never a token or secret. */
#include "publish.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "../config/catalog.h"
#include "../config/config.h"
#include "../probe/hw_counters.h"
#include "../util/json.h"
#include "report_gpu.h"
#include "../util/sanitize.h"
#include "../util/version.h"
#include "../verdict/verdict.h"

/* Byte limits: a number, or null for unlimited. */
static void add_limit(cJSON *o, const char *key, uint64_t v)
{
    if (v == UINT64_MAX)
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, (double)v);
}

/* {counter: value} with null for a counter the driver lacks; null when
 * the device has no hw_counters at all. */
static cJSON *counters_json(const uint64_t *v, uint32_t present, bool any)
{
    cJSON *o;

    if (!any)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    for (int c = 0; c < PF_HWC_COUNT; c++) {
        if (present & (1u << c))
            cJSON_AddNumberToObject(o, pf_hwc_name((enum pf_hwc)c),
                                    (double)v[c]);
        else
            cJSON_AddNullToObject(o, pf_hwc_name((enum pf_hwc)c));
    }
    return o;
}

static cJSON *efa_json(const struct pf_node *n)
{
    cJSON *efa = cJSON_CreateObject(), *devs;
    int stored = n->efa_count < PF_MAX_EFA ? n->efa_count : PF_MAX_EFA;

    cJSON_AddNumberToObject(efa, "count", n->efa_count);
    cJSON_AddNumberToObject(efa, "non_efa_rdma_devices", n->non_efa_ib_count);
    cJSON_AddNumberToObject(efa, "pci_functions", n->efa_pci_count);
    cJSON_AddNumberToObject(efa, "ports_active", n->efa_ports_active);
    cJSON_AddNumberToObject(efa, "recounts", n->efa_recounts);
    devs = cJSON_AddArrayToObject(efa, "devices");
    for (int i = 0; i < stored; i++) {
        const struct pf_efa_dev *d = &n->efa[i];
        cJSON *o = cJSON_CreateObject();
        char id[16];

        cJSON_AddStringToObject(o, "name", d->name);
        snprintf(id, sizeof(id), "0x%04x", d->vendor);
        cJSON_AddStringToObject(o, "pci_vendor", id);
        snprintf(id, sizeof(id), "0x%04x", d->device);
        cJSON_AddStringToObject(o, "pci_device", id);
        pf_json_add_text(o, "pci_address", d->pci_addr);
        pf_json_add_text(o, "port_state", d->port_state);
        cJSON_AddBoolToObject(o, "port_active", d->port_active);
        pf_json_add_text(o, "uverbs", d->uverbs);
        cJSON_AddItemToObject(o, "hw_counters",
                              counters_json(d->hwc.v, d->hwc.present,
                                            d->hwc.nports > 0));
        cJSON_AddItemToArray(devs, o);
    }
    cJSON_AddNumberToObject(efa, "uverbs_present", n->uverbs_present);
    cJSON_AddNumberToObject(efa, "uverbs_openable", n->uverbs_openable);
    pf_json_add_text(efa, "uverbs_error", n->uverbs_error);
    cJSON_AddBoolToObject(efa, "module_loaded", n->efa_module_loaded);
    pf_json_add_text(efa, "module_version", n->efa_module_version);
    cJSON_AddBoolToObject(efa, "gdr_supported", n->gdr_supported);
    return efa;
}

static cJSON *node_json(const struct pf_node *n)
{
    cJSON *node = cJSON_CreateObject(), *o, *arr;

    pf_json_add_text(node, "hostname", n->hostname);
    pf_json_add_text(node, "instance_type", n->instance_type);
    pf_json_add_text(node, "instance_source", n->instance_source);
    pf_json_add_text(node, "instance_note", n->instance_note);
    pf_json_add_number_if(node, "uptime_s", n->uptime_s >= 0, n->uptime_s);
    cJSON_AddItemToObject(node, "efa", efa_json(n));

    o = cJSON_AddObjectToObject(node, "libfabric");
    cJSON_AddBoolToObject(o, "loaded", n->libfabric_loaded);
    pf_json_add_text(o, "path", n->libfabric_path);
    pf_json_add_text(o, "version", n->libfabric_version);
    cJSON_AddNumberToObject(o, "efa_domains", n->fi_efa_domains);
    pf_json_add_text(o, "error", n->libfabric_error);

    o = cJSON_AddObjectToObject(node, "memlock");
    add_limit(o, "soft_bytes", n->memlock_soft);
    add_limit(o, "hard_bytes", n->memlock_hard);
    cJSON_AddBoolToObject(o, "soft_unlimited", n->memlock_soft == UINT64_MAX);

    o = cJSON_AddObjectToObject(node, "hugepages");
    cJSON_AddNumberToObject(o, "total", (double)n->hugepages_total);
    cJSON_AddNumberToObject(o, "free", (double)n->hugepages_free);
    cJSON_AddNumberToObject(o, "size_kb", (double)n->hugepage_kb);

    o = cJSON_AddObjectToObject(node, "cuda");
    cJSON_AddBoolToObject(o, "loaded", n->cuda_loaded);
    pf_json_add_text(o, "error", n->cuda_error);
    cJSON_AddNumberToObject(o, "runtime_version", n->cuda_runtime_version);
    cJSON_AddNumberToObject(o, "driver_version", n->cuda_driver_version);

    o = cJSON_AddObjectToObject(node, "gpus");
    cJSON_AddNumberToObject(o, "count", n->gpu_count);
    arr = cJSON_AddArrayToObject(o, "devices");
    for (int i = 0; i < n->gpu_count && i < PF_MAX_GPUS; i++) {
        cJSON *g = cJSON_CreateObject();
        pf_json_add_text(g, "model", n->gpus[i].model);
        pf_json_add_text(g, "pci_bus_id", n->gpus[i].pci_bus_id);
        cJSON_AddNumberToObject(g, "memory_bytes", (double)n->gpus[i].mem_bytes);
        cJSON_AddItemToArray(arr, g);
    }

    cJSON_AddItemToObject(node, "gpu_health", pf_report_gpu_health(&n->gpuh));

    o = cJSON_AddObjectToObject(node, "nccl");
    cJSON_AddBoolToObject(o, "loaded", n->nccl_loaded);
    cJSON_AddNumberToObject(o, "version", n->nccl_version);
    pf_json_add_text(o, "error", n->nccl_error);
    if (n->nccl_loaded) {
        cJSON *plugin = cJSON_AddObjectToObject(o, "net_plugin");
        pf_json_add_text(plugin, "name", n->net_plugin_name);
        pf_json_add_text(plugin, "path", n->net_plugin_path);
        cJSON_AddNumberToObject(plugin, "api", n->net_plugin_api);
        pf_json_add_text(plugin, "error", n->net_plugin_error);
    }
    return node;
}

static cJSON *checks_json(const struct pf_verdict *v)
{
    cJSON *arr = cJSON_CreateArray();

    for (int i = 0; i < v->n; i++) {
        const struct pf_check *c = &v->checks[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", c->name);
        cJSON_AddStringToObject(o, "condition", c->condition);
        cJSON_AddStringToObject(o, "status", pf_status_name(c->status));
        cJSON_AddStringToObject(o, "reason", pf_reason_name(c->reason));
        cJSON_AddStringToObject(o, "message", c->message);
        pf_json_add_text(o, "remedy", c->remedy);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *side_json(double us, double algbw, double busbw, long wrong)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "time_us", us);
    cJSON_AddNumberToObject(o, "algbw_gbps", algbw);
    cJSON_AddNumberToObject(o, "busbw_gbps", busbw);
    cJSON_AddNumberToObject(o, "wrong", (double)wrong);
    return o;
}

/* One pairwise link test: ranks a and b, its time, bandwidth and wrong
 * elements. */
static cJSON *link_json(const struct pf_link *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "a", l->a);
    cJSON_AddNumberToObject(o, "b", l->b);
    cJSON_AddNumberToObject(o, "seconds", l->seconds);
    cJSON_AddNumberToObject(o, "gbps", l->gbps);
    cJSON_AddNumberToObject(o, "wrong", (double)l->wrong);
    return o;
}

/* How the straggler was looked for (collective/straggler.h). */
static cJSON *straggler_json(const struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_straggler *s = &c->strag;
    const struct pf_roster *ro = &c->roster;
    cJSON *o = cJSON_CreateObject(), *arr;

    pf_json_add_text(o, "method", s->method);
    pf_json_add_text(o, "kind", s->kind);
    pf_json_add_text(o, "note", s->note);
    pf_json_add_number_if(o, "floor_gbps", s->method[0] != '\0',
                          s->floor_gbps);
    cJSON_AddNumberToObject(o, "pair_bytes", (double)s->pair_bytes);
    cJSON_AddNumberToObject(o, "pair_iters", s->pair_iters);
    /* What every link was judged against: the 2-node floor, or (relative)
     * a fraction of the median link; 0 = speed not judged. */
    cJSON_AddNumberToObject(o, "pair_floor_gbps", s->pair_floor_gbps);
    cJSON_AddBoolToObject(o, "pair_floor_relative", s->relative);
    cJSON_AddNumberToObject(o, "pair_rounds", s->pair_rounds);
    cJSON_AddNumberToObject(o, "pair_seconds", s->pair_seconds);
    arr = cJSON_AddArrayToObject(o, "links");
    for (int i = 0; i < s->nlinks && s->links; i++) {
        cJSON *l = link_json(&s->links[i]);
        cJSON_AddBoolToObject(l, "slow", s->links[i].bad & PF_LINK_SLOW);
        cJSON_AddBoolToObject(l, "bad_data", s->links[i].bad & PF_LINK_DATA);
        cJSON_AddBoolToObject(l, "confirm", s->links[i].confirm);
        cJSON_AddItemToArray(arr, l);
    }
    /* The ranks the re-test singled out, with who they are. */
    arr = cJSON_AddArrayToObject(o, "culprits");
    for (int k = 0; k < s->nculprits && s->culprits; k++) {
        int r = s->culprits[k];
        cJSON *x = cJSON_CreateObject();
        unsigned bad = s->culprit_bad ? s->culprit_bad[k] : 0;
        cJSON_AddNumberToObject(x, "rank", r);
        pf_json_add_text(x, "kind", bad == (PF_LINK_SLOW | PF_LINK_DATA) ? "slow+data"
                           : bad & PF_LINK_DATA ? "data"
                           : bad & PF_LINK_SLOW ? "slow" : s->kind);
        if (ro->list && r >= 0 && r < ro->world) {
            pf_json_add_text(x, "pod", ro->list[r].pod);
            pf_json_add_text(x, "node", ro->list[r].node);
            pf_json_add_text(x, "address", ro->list[r].host);
        }
        cJSON_AddItemToArray(arr, x);
    }
    arr = cJSON_AddArrayToObject(o, "rank_seconds");
    for (int r = 0; r < s->nprocs && r < c->nrank_seconds; r++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(c->rank_seconds[r]));
    return o;
}

/* The ranks at fault inside a node (collective/inside.h): who each rank
 * described is (on several nodes only this node's, when it was blamed),
 * and which ones were singled out. */
static cJSON *inside_json(const struct pf_run *run)
{
    const struct pf_inside *in = &run->coll.inside;
    cJSON *o = cJSON_CreateObject(), *arr;

    pf_json_add_text(o, "method", in->method);
    pf_json_add_text(o, "kind", in->kind);
    pf_json_add_text(o, "note", in->note);
    arr = cJSON_AddArrayToObject(o, "ranks");
    for (int r = 0; r < in->nids && in->ids; r++) {
        const struct pf_rank_id *id = &in->ids[r];
        cJSON *x;
        if (id->proc < 0)
            continue;                 /* another node's, not described */
        x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "rank", id->rank);
        cJSON_AddNumberToObject(x, "process", id->proc);
        pf_json_add_number_if(x, "gpu", id->gpu >= 0, id->gpu);
        pf_json_add_text(x, "bus_id", id->bus);
        pf_json_add_text(x, "nic", id->nic);
        cJSON_AddItemToArray(arr, x);
    }
    arr = cJSON_AddArrayToObject(o, "links");
    for (int i = 0; i < in->nlinks && in->links; i++)
        cJSON_AddItemToArray(arr, link_json(&in->links[i]));
    arr = cJSON_AddArrayToObject(o, "culprits");
    for (int k = 0; k < in->nculprits && in->culprits; k++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(in->culprits[k]));
    return o;
}

/* Per-NIC accounting (collective/nics.h): a summary per device over every
 * window, each window's deltas, and the host engine's rails. */
static cJSON *nics_json(const struct pf_run *run)
{
    const struct pf_nics *s = &run->coll.nics;
    cJSON *o = cJSON_CreateObject(), *arr;
    uint64_t bytes[PF_MAX_EFA] = { 0 }, total = 0;

    cJSON_AddBoolToObject(o, "counters_read", s->read);
    pf_json_add_text(o, "note", s->note);
    cJSON_AddBoolToObject(o, "spread", s->spread);
    pf_json_add_text(o, "spread_note", s->spread_note);
    for (int i = 0; i < s->n && s->nwin > 0; i++) {
        bool known;
        bytes[i] = pf_hwc_bytes(s->win[0].nic[i].d, s->win[0].nic[i].present,
                                &known);
        total += bytes[i];
    }
    arr = cJSON_AddArrayToObject(o, "devices");
    for (int i = 0; i < s->n && s->nwin > 0; i++) {
        cJSON *d = cJSON_CreateObject(), *err;
        bool went_back = false;

        cJSON_AddStringToObject(d, "name", run->node.efa[i].name);
        cJSON_AddNumberToObject(d, "sweep_bytes", (double)bytes[i]);
        cJSON_AddNumberToObject(d, "sweep_share",
                                total ? (double)bytes[i] / (double)total : 0);
        err = cJSON_AddObjectToObject(d, "errors");
        for (int c = 0; c < PF_HWC_COUNT; c++) {
            uint64_t sum = 0;
            bool present = true;
            if (!pf_hwc_is_error((enum pf_hwc)c))
                continue;
            for (int w = 0; w < s->nwin; w++) {
                present = present && (s->win[w].nic[i].present & (1u << c));
                sum += s->win[w].nic[i].d[c];
                went_back = went_back || s->win[w].nic[i].went_back;
            }
            if (present && sum > 0)
                cJSON_AddNumberToObject(err, pf_hwc_name((enum pf_hwc)c),
                                        (double)sum);
        }
        cJSON_AddBoolToObject(d, "counter_reset", went_back);
        cJSON_AddItemToArray(arr, d);
    }
    arr = cJSON_AddArrayToObject(o, "windows");
    for (int w = 0; w < s->nwin; w++) {
        const struct pf_nic_window *win = &s->win[w];
        cJSON *x = cJSON_CreateObject(), *devs;

        cJSON_AddStringToObject(x, "stage", win->stage);
        pf_json_add_number_if(x, "peer", win->peer >= 0, win->peer);
        cJSON_AddNumberToObject(x, "seconds", win->seconds);
        devs = cJSON_AddArrayToObject(x, "devices");
        for (int i = 0; i < s->n; i++) {
            cJSON *d = cJSON_CreateObject();
            cJSON_AddStringToObject(d, "name", run->node.efa[i].name);
            cJSON_AddItemToObject(d, "counters",
                                  counters_json(win->nic[i].d,
                                                win->nic[i].present, true));
            cJSON_AddItemToArray(devs, d);
        }
        cJSON_AddItemToArray(arr, x);
    }
    arr = cJSON_AddArrayToObject(o, "rails");
    for (int r = 0; r < s->nrails; r++) {
        const struct pf_rail *rl = &s->rails[r];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "nic", rl->nic);
        cJSON_AddNumberToObject(x, "bytes", (double)rl->bytes);
        cJSON_AddNumberToObject(x, "seconds", rl->seconds);
        cJSON_AddNumberToObject(x, "gbps", rl->gbps);
        cJSON_AddBoolToObject(x, "slow", rl->slow);
        pf_json_add_number_if(x, "suspect_rank", rl->suspect >= 0,
                              rl->suspect);
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddBoolToObject(o, "rails_localised", s->rails_localised);
    pf_json_add_text(o, "rail_note", s->rail_note);
    return o;
}

/* The floor the verdict applied, the busbw it judged against it and the
 * message size that busbw was measured at: the collective's judgement. */
static cJSON *floor_json(const struct pf_run *run)
{
    const struct pf_judgement *j = &run->coll.judgement;
    const struct pf_floor_rule *rule = &j->floor;
    cJSON *o = cJSON_CreateObject();
    uint64_t at = j->busbw_bytes;
    double floor = rule->gbps;
    double judged = j->busbw_gbps;
    bool was_judged = judged >= 0 && at > 0;

    pf_json_add_number_if(o, "busbw_gbps", floor > 0, floor);
    cJSON_AddNumberToObject(o, "from_bytes", (double)rule->from_bytes);
    pf_json_add_number_if(o, "judged_busbw_gbps", was_judged, judged);
    pf_json_add_number_if(o, "bytes", was_judged, (double)at);
    pf_json_add_text(o, "source", rule->src);
    return o;
}

static cJSON *collective_json(const struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_fabric_facts *fab = &c->fabric;
    /* Peers that were never found fail the collective before it starts. */
    const struct pf_fault *f = run->peers.fault.err != PF_OK ? &run->peers.fault
                                                             : &c->fault;
    cJSON *o, *rows;

    if (!c->ran && f->err == PF_OK)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ran", c->ran);
    pf_json_add_text(o, "engine", c->engine);
    pf_json_add_text(o, "provider", fab->provider);
    cJSON_AddBoolToObject(o, "provider_is_fallback", fab->provider_is_fallback);
    pf_json_add_text(o, "transport", fab->transport);
    pf_json_add_text(o, "nccl_network", fab->nccl_network);
    cJSON_AddBoolToObject(o, "net_plugin_loaded", fab->net_plugin_loaded);
    cJSON_AddBoolToObject(o, "net_gdr", fab->net_gdr);
    cJSON_AddBoolToObject(o, "inter_node_socket", fab->inter_node_socket);
    cJSON_AddNumberToObject(o, "nranks", c->nranks);
    cJSON_AddNumberToObject(o, "nnodes", c->nnodes);
    rows = cJSON_AddArrayToObject(o, "rows");
    for (int i = 0; i < c->nrows && i < PF_MAX_ROWS; i++) {
        const struct pf_row *r = &c->rows[i];
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "bytes", (double)r->bytes);
        cJSON_AddNumberToObject(row, "count", (double)r->count);
        cJSON_AddStringToObject(row, "type", "float");
        cJSON_AddStringToObject(row, "redop", "sum");
        cJSON_AddNumberToObject(row, "root", -1);
        cJSON_AddItemToObject(row, "out_of_place",
                              side_json(r->oop_us, r->oop_algbw, r->oop_busbw,
                                        r->oop_wrong));
        cJSON_AddItemToObject(row, "in_place",
                              side_json(r->ip_us, r->ip_algbw, r->ip_busbw,
                                        r->ip_wrong));
        cJSON_AddItemToArray(rows, row);
    }
    cJSON_AddNumberToObject(o, "avg_busbw_gbps", c->avg_busbw);
    cJSON_AddNumberToObject(o, "peak_busbw_gbps", c->peak_busbw);
    cJSON_AddItemToObject(o, "floor", floor_json(run));
    cJSON_AddNumberToObject(o, "wrong_total", (double)c->wrong_total);
    pf_json_add_number_if(o, "slow_rank", c->slow_rank >= 0 && c->nranks > 0,
                          c->slow_rank);
    cJSON_AddItemToObject(o, "straggler", straggler_json(run));
    cJSON_AddItemToObject(o, "inside", inside_json(run));
    cJSON_AddItemToObject(o, "nics", nics_json(run));
    cJSON_AddNumberToObject(o, "wall_s", c->wall_s);
    if (f->err != PF_OK) {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "code", pf_err_name(f->err));
        pf_json_add_text(e, "reason", pf_reason_name(f->reason));
        pf_json_add_text(e, "message", f->msg);
    } else {
        cJSON_AddNullToObject(o, "error");
    }
    return o;
}

/* The deciding reason; null when the run passed without a word to say. */
static const char *headline(const struct pf_verdict *v)
{
    return v->cls == PF_CLASS_OK ? NULL : pf_reason_name(v->headline);
}

/* verdict.status is the class's one status word (reasons.h), as on the
 * Node's label, in the metrics and in `history`; each condition is the
 * Node's condition in words: pass, warn (True), fail (False), unknown
 * (Unknown), null when no check fed it. */
static cJSON *verdict_json(const struct pf_verdict *v)
{
    static const char *const conds[] = { PF_COND_DEVICES, PF_COND_FABRIC,
                                         PF_COND_GPU };
    cJSON *o = cJSON_CreateObject(), *c;

    cJSON_AddStringToObject(o, "status", pf_class_status_word(v->cls));
    cJSON_AddNumberToObject(o, "exit_code", v->exit_code);
    pf_json_add_text(o, "reason", headline(v));
    cJSON_AddStringToObject(o, "class", pf_class_name(v->cls));
    c = cJSON_AddObjectToObject(o, "conditions");
    for (size_t i = 0; i < sizeof(conds) / sizeof(conds[0]); i++) {
        struct pf_condition cond;
        if (pf_verdict_condition_of(v, conds[i], &cond))
            cJSON_AddStringToObject(c, conds[i], cond.word);
        else
            cJSON_AddNullToObject(c, conds[i]);
    }
    return o;
}

char *pf_report_json(const struct pf_run *run)
{
    return pf_report_json_of(run, &run->verdict);
}

char *pf_report_json_of(const struct pf_run *run, const struct pf_verdict *v)
{
    const char *prov = run->cfg.fabric_provider;
    bool efa = !prov[0] || !strncmp(prov, "efa", 3);
    cJSON *root = cJSON_CreateObject(), *o;
    char *text;

    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "schema", PF_REPORT_SCHEMA);
    o = cJSON_AddObjectToObject(root, "tool");
    cJSON_AddStringToObject(o, "name", "efa-preflight");
    cJSON_AddStringToObject(o, "version", PF_VERSION);
    pf_json_add_text(root, "started_at", run->started_at);
    cJSON_AddStringToObject(root, "command",
                            pf_command_name(run->cfg.command));
    o = cJSON_AddObjectToObject(root, "fabric_provider");
    cJSON_AddStringToObject(o, "requested", prov[0] ? prov : "efa");
    cJSON_AddBoolToObject(o, "efa_required", efa);
    cJSON_AddBoolToObject(o, "fallback", !efa);
    cJSON_AddItemToObject(root, "node", node_json(&run->node));
    cJSON_AddItemToObject(root, "instance", pf_instance_json(run->instance));
    cJSON_AddItemToObject(root, "checks", checks_json(v));
    cJSON_AddItemToObject(root, "collective", collective_json(run));
    cJSON_AddItemToObject(root, "verdict", verdict_json(v));
    /* Hostnames, peer names, library and API messages: whatever they
     * held, the report is valid UTF-8 JSON without control characters. */
    pf_sanitize_json(root);
    text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}
