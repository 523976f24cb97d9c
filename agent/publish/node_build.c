/* Build the labels, conditions, taint list and Event the Node publisher
 * writes. Pure functions of the run and the Node as read. */
#include "node.h"

#include <stdio.h>
#include <string.h>

#include "../config/catalog.h"
#include "../config/config.h"
#include "../k8s/object.h"
#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"
#include "../verdict/verdict.h"

void pf_node_label_time(char out[32], time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y%m%dT%H%M%SZ", &tm);
}

bool pf_node_fabric_untested(const struct pf_run *run)
{
    return run->cfg.mode == PF_MODE_DAEMONSET && run->peers.world == 1;
}

static bool collective_attempted(const struct pf_run *run)
{
    return run->cfg.command != PF_CMD_NODE &&
           (run->coll.ran || run->coll.fault.err != PF_OK ||
            run->peers.fault.err != PF_OK || run->peers.world > 0);
}

/* The collective never ran because of the peers or the infrastructure
 * (PeerTimeout, PeerLost, APIUnavailable, ...): nothing of the fabric was
 * measured, so the node must not read fabric=tested. */
static bool peers_never_came(const struct pf_run *run)
{
    const struct pf_fault *f = run->peers.fault.err != PF_OK
                                   ? &run->peers.fault : &run->coll.fault;
    enum pf_reason_class c;

    if (run->coll.ran || f->err == PF_OK)
        return false;
    c = pf_reason_class_of(f->reason);
    return c == PF_CLASS_INFRA || c == PF_CLASS_PEER;
}

void pf_node_labels_make(const struct pf_run *run, time_t now,
                         struct pf_node_labels *l)
{
    const struct pf_verdict *v = &run->verdict;

    memset(l, 0, sizeof(*l));
    /* The class's one status word (reasons.h): "error" keeps "we could not
     * judge" (peers never came, API down, a group failure) apart from "the
     * fabric is bad here"; a usage error never gets here (nothing is
     * written). */
    const char *label = pf_class_status_label(v->cls);

    snprintf(l->status, sizeof(l->status), "%s", label ? label : "error");
    snprintf(l->efa_count, sizeof(l->efa_count), "%d", run->node.efa_count);
    if (run->coll.ran && run->coll.peak_busbw > 0 &&
        !pf_node_fabric_untested(run))
        snprintf(l->busbw_gbps, sizeof(l->busbw_gbps), "%.2f",
                 run->coll.peak_busbw);
    pf_node_label_time(l->validated_at, now);
    pf_node_label_time(l->valid_until,
                       now + (time_t)run->cfg.valid_hours * 3600);
    snprintf(l->valid_until_epoch, sizeof(l->valid_until_epoch), "%lld",
             (long long)now + (long long)run->cfg.valid_hours * 3600);
    {
        struct pf_condition gc;
        if (pf_verdict_condition_of(v, PF_COND_GPU, &gc))
            snprintf(l->gpu_health, sizeof(l->gpu_health), "%s", gc.word);
    }
    if (pf_node_fabric_untested(run) || peers_never_came(run))
        snprintf(l->fabric, sizeof(l->fabric), "untested");
    else if (collective_attempted(run))
        snprintf(l->fabric, sizeof(l->fabric), "tested");
    /* DaemonSet. Alone in a pool of one: no fabric verdict, its own word.
     * No group though partners are pending: no verdict at all unless the
     * node itself failed; it stays pending (selected by the DaemonSet) and
     * nothing that speaks for a verdict is left on it. */
    if (run->peers.stay_pending && !pf_class_may_taint(v->cls)) {
        struct pf_node_labels keep = { 0 };
        snprintf(keep.status, sizeof(keep.status), "%s", PF_NODE_PENDING);
        snprintf(keep.efa_count, sizeof(keep.efa_count), "%s", l->efa_count);
        *l = keep;
    } else if (pf_node_fabric_untested(run) &&
               (v->cls == PF_CLASS_OK || v->cls == PF_CLASS_WARN)) {
        snprintf(l->status, sizeof(l->status), "%s", PF_NODE_UNTESTED);
    }
}

static void add_label(cJSON *labels, const char *prefix, const char *name,
                      const char *value)
{
    char key[PF_NAME_MAX + 32];

    snprintf(key, sizeof(key), "%s%s", prefix, name);
    if (!pf_label_key_ok(key) || !pf_label_value_ok(value)) {
        pf_warn("node label %s=%s is not a valid label; not written", key,
                value);
        return;
    }
    /* null deletes the key in a merge patch: no stale value survives. */
    if (*value)
        cJSON_AddStringToObject(labels, key, value);
    else
        cJSON_AddNullToObject(labels, key);
}

cJSON *pf_node_labels_patch(const char *prefix, const struct pf_node_labels *l)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *md = cJSON_AddObjectToObject(root, "metadata");
    cJSON *labels = cJSON_AddObjectToObject(md, "labels");

    add_label(labels, prefix, "status", l->status);
    add_label(labels, prefix, "efa-count", l->efa_count);
    add_label(labels, prefix, "busbw-gbps", l->busbw_gbps);
    add_label(labels, prefix, "validated-at", l->validated_at);
    add_label(labels, prefix, "valid-until", l->valid_until);
    add_label(labels, prefix, "valid-until-epoch", l->valid_until_epoch);
    add_label(labels, prefix, "fabric", l->fabric);
    add_label(labels, prefix, "gpu-health", l->gpu_health);
    /* Asked for only on a proven fault; never removed by us: HyperPod owns
     * the label once its recovery starts. */
    if (l->health_status[0])
        cJSON_AddStringToObject(labels, PF_HYPERPOD_HEALTH_LABEL,
                                l->health_status);
    return root;
}

/* Every label the agent writes, by name under the prefix, in the order
 * written, with its values and meaning: docs/reference/labels.md's table is
 * printed from this table (scripts/readme_tables.py, checked by
 * test_readme_tables), and a unit test holds pf_node_labels_patch to it.
 * verdict: the label speaks for a verdict and is dropped while none
 * stands (the mark before a run). */
static const struct {
    const char *name, *values, *meaning;
    bool verdict;
} our_labels[] = {
    { "status", "`pass`, `warn`, `fail`, `error`; `validating` while a run "
      "is under way",
      "the overall verdict, from the deciding reason's class: `fail` only "
      "for a failure proven on this node (exit 1); `error` = could not test "
      "(exit 3) or a group failure nobody was blamed for (exit 1); `warn` "
      "also for a node whose peer failed (exit 4). DaemonSet nodes join "
      "with `pending`.", false },
    { "efa-count", "e.g. `32`", "EFA devices found on the node", false },
    { "busbw-gbps", "e.g. `335.24`",
      "peak all_reduce bus bandwidth (GB/s) of the largest size; removed "
      "when no collective ran", true },
    { "validated-at", "e.g. `20261122T010203Z`",
      "when this verdict was written (ISO 8601 basic format, UTC: label "
      "values may not contain `:`)", true },
    { "valid-until", "e.g. `20261123T010203Z`",
      "`validated-at` + `--valid-hours` (default 24)", true },
    { "valid-until-epoch", "e.g. `1795482123`",
      "the same instant as `valid-until` in Unix seconds, for a nodeAffinity "
      "`Gt`/`Lt` (they compare label values as integers only)", true },
    { "fabric", "`tested`, `untested`",
      "`untested`: DaemonSet node with no partner, only node checks ran, or "
      "the peers never came (`PeerTimeout`, `PeerLost`, `APIUnavailable`...: "
      "nothing of the fabric was measured); removed when no collective was "
      "attempted", true },
    { "gpu-health", "`pass`, `warn`, `fail`, `unknown`",
      "the `GPUHealthy` condition in words (NVML and the kernel log: XIDs, "
      "ECC, row remapping, NVLink, PCIe, clocks, driver); removed when no "
      "GPU was checked (no GPU and no NVML)", true },
};
#define N_OUR_LABELS (sizeof(our_labels) / sizeof(our_labels[0]))

const char *pf_node_label_name(size_t i)
{
    return i < N_OUR_LABELS ? our_labels[i].name : NULL;
}

cJSON *pf_node_state_labels_patch(const char *prefix, const cJSON *node,
                                  const char *status)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(
        cJSON_AddObjectToObject(root, "metadata"), "labels");
    const cJSON *have = pf_json_at(node, "metadata.labels");
    char key[PF_NAME_MAX + 32];
    const char *now;

    snprintf(key, sizeof(key), "%sstatus", prefix);
    /* Label keys hold dots: looked up whole, not as a path. */
    now = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(have, key));
    /* "pending" is the DaemonSet's node selector and the operator's
     * request: it already says "no verdict", and changing it would have
     * the controller delete the very pod that is validating. */
    if (!now || strcmp(now, PF_NODE_PENDING))
        add_label(labels, prefix, "status", status);
    for (size_t i = 0; i < N_OUR_LABELS; i++)
        if (our_labels[i].verdict)
            add_label(labels, prefix, our_labels[i].name, "");
    return root;
}

cJSON *pf_node_undo_labels_patch(const char *prefix, const cJSON *node)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(
        cJSON_AddObjectToObject(root, "metadata"), "labels");
    const cJSON *have = pf_json_at(node, "metadata.labels");

    for (size_t i = 0; i < N_OUR_LABELS; i++) {
        char key[PF_NAME_MAX + 32];
        const char *v;

        snprintf(key, sizeof(key), "%s%s", prefix, our_labels[i].name);
        v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(have, key));
        if (v)
            cJSON_AddStringToObject(labels, key, v);
        else
            cJSON_AddNullToObject(labels, key);
    }
    return root;
}

cJSON *pf_node_undo_conditions_patch(const cJSON *node)
{
    static const char *const types[] = { PF_COND_DEVICES, PF_COND_FABRIC };
    cJSON *root = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(
        cJSON_AddObjectToObject(root, "status"), "conditions");

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        const cJSON *c, *found = NULL;

        cJSON_ArrayForEach(c, pf_json_at(node, "status.conditions")) {
            const char *t = pf_json_str(c, "type");
            if (t && !strcmp(t, types[i]))
                found = c;
        }
        if (found) {
            cJSON_AddItemToArray(list, cJSON_Duplicate(found, 1));
        } else {
            /* It was not there: the strategic merge takes it away. */
            cJSON *del = cJSON_CreateObject();
            cJSON_AddStringToObject(del, "type", types[i]);
            cJSON_AddStringToObject(del, "$patch", "delete");
            cJSON_AddItemToArray(list, del);
        }
    }
    return root;
}

/* The first check of a condition with the given status, or NULL. */
static const struct pf_check *first_check(const struct pf_verdict *v,
                                          const char *condition,
                                          enum pf_status st)
{
    for (int i = 0; i < v->n; i++)
        if (v->checks[i].status == st &&
            (!condition || !strcmp(v->checks[i].condition, condition)))
            return &v->checks[i];
    return NULL;
}

const char *pf_node_reason(const struct pf_run *run)
{
    return pf_reason_name(run->verdict.headline);
}

static const char *previous_transition(const cJSON *node, const char *type,
                                       const char *status)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, pf_json_at(node, "status.conditions")) {
        const char *t = pf_json_str(c, "type");
        const char *s = pf_json_str(c, "status");
        if (t && !strcmp(t, type))
            return s && !strcmp(s, status)
                       ? pf_json_str(c, "lastTransitionTime") : NULL;
    }
    return NULL;
}

static void add_condition(cJSON *list, const cJSON *node, const char *type,
                          const char *status, const char *reason,
                          const char *message, const char *now)
{
    cJSON *c = cJSON_CreateObject();
    const char *since = previous_transition(node, type, status);

    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddStringToObject(c, "reason", reason);
    cJSON_AddStringToObject(c, "message", message);
    cJSON_AddStringToObject(c, "lastHeartbeatTime", now);
    cJSON_AddStringToObject(c, "lastTransitionTime", since ? since : now);
    cJSON_AddItemToArray(list, c);
}

/* One condition from the checks that feed it (pf_verdict_condition_of):
 * none -> not written; False only for a fault proven on this node; Unknown
 * with the reason for what could not judge it (a group failure, a peer,
 * the infrastructure, a usage error) or when every check was skipped;
 * True for pass and warn. */
static void condition_from_checks(cJSON *list, const struct pf_run *run,
                                  const cJSON *node, const char *type,
                                  const char *pass_message, const char *now)
{
    struct pf_condition c;

    if (!pf_verdict_condition_of(&run->verdict, type, &c))
        return;
    add_condition(list, node, type, c.status, pf_reason_name(c.reason),
                  c.reason == PF_R_PreflightPassed ? pass_message
                                                   : c.check->message,
                  now);
}

cJSON *pf_node_state_conditions_patch(const cJSON *node, enum pf_reason reason,
                                      const char *message, const char *now)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(
        cJSON_AddObjectToObject(root, "status"), "conditions");

    add_condition(list, node, PF_COND_DEVICES, "Unknown",
                  pf_reason_name(reason), message, now);
    add_condition(list, node, PF_COND_FABRIC, "Unknown",
                  pf_reason_name(reason), message, now);
    return root;
}

void pf_node_interrupted_message(char *out, size_t len, int sig,
                                 const char *signame, const char *now,
                                 const char *pod)
{
    snprintf(out, len, "run stopped by signal %d (%s) at %s before its "
             "verdict (pod %s)", sig, signame, now, pod);
}

bool pf_node_interrupted_mark(const cJSON *node, const char *pod, int64_t since,
                              char *msg, size_t len)
{
    const cJSON *c;
    char tail[PF_NAME_MAX + 16];
    size_t tl;

    if (!pod || !pod[0])
        return false;
    snprintf(tail, sizeof(tail), "(pod %s)", pod);
    tl = strlen(tail);
    cJSON_ArrayForEach(c, pf_json_at(node, "status.conditions")) {
        const char *type = pf_json_str(c, "type");
        const char *reason = pf_json_str(c, "reason");
        const char *m = pf_json_str(c, "message");
        int64_t at = pf_rfc3339_seconds(pf_json_str(c, "lastHeartbeatTime"));
        size_t ml = m ? strlen(m) : 0;

        if (!type || (strcmp(type, PF_COND_DEVICES) &&
                      strcmp(type, PF_COND_FABRIC)) ||
            !reason || strcmp(reason, pf_reason_name(PF_R_Interrupted)) ||
            at < 0 || at < since || ml < tl || strcmp(m + ml - tl, tail))
            continue;
        if (msg)
            snprintf(msg, len, "%s", m);
        return true;
    }
    return false;
}

cJSON *pf_node_conditions_patch(const struct pf_run *run, const cJSON *node,
                                const char *now)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *status = cJSON_AddObjectToObject(root, "status");
    cJSON *list = cJSON_AddArrayToObject(status, "conditions");
    char msg[384];
    int expect = run->instance ? run->instance->efa_count : -1;

    if (expect >= 0)
        snprintf(msg, sizeof(msg), "%d of %d EFA devices present, node "
                 "checks passed", run->node.efa_count, expect);
    else
        snprintf(msg, sizeof(msg), "%d EFA devices present, node checks "
                 "passed", run->node.efa_count);
    condition_from_checks(list, run, node, PF_COND_DEVICES, msg, now);

    if (pf_node_fabric_untested(run)) {
        add_condition(list, node, PF_COND_FABRIC, "Unknown",
                      pf_reason_name(PF_R_FabricUntested),
                      "no other pending node of this instance type and zone "
                      "to test the fabric with", now);
    } else {
        snprintf(msg, sizeof(msg), "all_reduce over %d nodes (%s engine): "
                 "peak busbw %.2f GB/s, average %.2f GB/s",
                 run->coll.nnodes, run->coll.engine[0] ? run->coll.engine : "?",
                 run->coll.peak_busbw, run->coll.avg_busbw);
        condition_from_checks(list, run, node, PF_COND_FABRIC, msg, now);
    }
    snprintf(msg, sizeof(msg), "%d GPU(s) read through NVML: no XID, ECC, "
             "remap, NVLink, PCIe or clock fault", run->node.gpuh.count);
    condition_from_checks(list, run, node, PF_COND_GPU, msg, now);
    return root;
}

cJSON *pf_node_taints_patch(const cJSON *node, const char *prefix, bool add,
                            const char *value, bool *changed)
{
    char key[PF_NAME_MAX + 16];
    const char *rv = pf_json_str(node, "metadata.resourceVersion");
    cJSON *root, *spec, *taints;
    const cJSON *t;
    bool had = false;

    snprintf(key, sizeof(key), "%sunhealthy", prefix);
    cJSON_ArrayForEach(t, pf_json_at(node, "spec.taints")) {
        const char *k = pf_json_str(t, "key");
        const char *e = pf_json_str(t, "effect");
        if (k && !strcmp(k, key) && e && !strcmp(e, "NoSchedule"))
            had = true;
    }
    *changed = had != add;
    if (!*changed)
        return NULL;

    root = cJSON_CreateObject();
    if (rv)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(root, "metadata"),
                                "resourceVersion", rv);
    spec = cJSON_AddObjectToObject(root, "spec");
    taints = cJSON_AddArrayToObject(spec, "taints");
    /* Everyone else's taints, untouched and in order. */
    cJSON_ArrayForEach(t, pf_json_at(node, "spec.taints")) {
        const char *k = pf_json_str(t, "key");
        const char *e = pf_json_str(t, "effect");
        if (k && !strcmp(k, key) && e && !strcmp(e, "NoSchedule"))
            continue;
        cJSON_AddItemToArray(taints, cJSON_Duplicate(t, 1));
    }
    if (add) {
        cJSON *mine = cJSON_CreateObject();
        char ts[32];
        pf_rfc3339(ts, 0);
        cJSON_AddStringToObject(mine, "key", key);
        if (value && pf_label_value_ok(value))
            cJSON_AddStringToObject(mine, "value", value);
        cJSON_AddStringToObject(mine, "effect", "NoSchedule");
        cJSON_AddStringToObject(mine, "timeAdded", ts);
        cJSON_AddItemToArray(taints, mine);
    }
    return root;
}

void pf_node_event_name(char *out, size_t len, const char *node,
                        unsigned long long ns)
{
    char suffix[24];
    int keep;

    snprintf(suffix, sizeof(suffix), ".%llx", ns);
    keep = PF_K8S_NAME_MAX - (int)strlen(suffix);
    snprintf(out, len, "%.*s%s", keep, node, suffix);
}

cJSON *pf_node_event_object(const char *name, const char *node,
                            const char *uid, const char *reason,
                            const char *message, bool warning,
                            const char *now, const char *reporter)
{
    cJSON *ev = pf_k8s_object("v1", "Event", name, "default", NULL);
    cJSON *io, *src;

    io = cJSON_AddObjectToObject(ev, "involvedObject");
    cJSON_AddStringToObject(io, "apiVersion", "v1");
    cJSON_AddStringToObject(io, "kind", "Node");
    cJSON_AddStringToObject(io, "name", node);
    if (uid && uid[0])
        cJSON_AddStringToObject(io, "uid", uid);
    cJSON_AddStringToObject(ev, "reason", reason);
    cJSON_AddStringToObject(ev, "message", message);
    cJSON_AddStringToObject(ev, "type", warning ? "Warning" : "Normal");
    src = cJSON_AddObjectToObject(ev, "source");
    cJSON_AddStringToObject(src, "component", "efa-preflight");
    cJSON_AddStringToObject(src, "host", node);
    cJSON_AddStringToObject(ev, "firstTimestamp", now);
    cJSON_AddStringToObject(ev, "lastTimestamp", now);
    cJSON_AddNumberToObject(ev, "count", 1);
    cJSON_AddStringToObject(ev, "reportingComponent", "efa-preflight");
    cJSON_AddStringToObject(ev, "reportingInstance", reporter);
    return ev;
}

cJSON *pf_node_event(const struct pf_run *run, const char *node,
                     const char *uid, const char *reporter, const char *now,
                     const char *name, const char *note)
{
    const struct pf_verdict *v = &run->verdict;
    const struct pf_check *c = first_check(v, NULL, PF_FAIL);
    char msg[1024], nums[256];
    int expect = run->instance ? run->instance->efa_count : -1;
    /* The floor the verdict applied: the collective's judgement. */
    const struct pf_judgement *j = &run->coll.judgement;
    double floor = j->floor.gbps;
    size_t n;

    if (!c)
        c = first_check(v, NULL, PF_WARN);
    n = (size_t)snprintf(nums, sizeof(nums), "efa %d", run->node.efa_count);
    if (expect >= 0 && n < sizeof(nums))
        n += (size_t)snprintf(nums + n, sizeof(nums) - n, "/%d", expect);
    if (run->coll.ran && n < sizeof(nums)) {
        if (j->judged)
            n += (size_t)snprintf(nums + n, sizeof(nums) - n,
                                  ", busbw %.2f GB/s at %llu bytes over %d "
                                  "nodes, floor %.1f", j->busbw_gbps,
                                  (unsigned long long)j->busbw_bytes,
                                  run->coll.nnodes, floor);
        else
            n += (size_t)snprintf(nums + n, sizeof(nums) - n,
                                  ", busbw %.2f GB/s over %d nodes, %s",
                                  run->coll.peak_busbw, run->coll.nnodes,
                                  floor > 0 ? "not judged" : "no floor");
    }
    if (c)
        snprintf(msg, sizeof(msg), "%s: %s; %s%s%s",
                 pf_class_status_word(v->cls), c->message, nums,
                 note && *note ? "; " : "", note ? note : "");
    else
        snprintf(msg, sizeof(msg), "%s: %s%s%s", pf_class_status_word(v->cls),
                 nums, note && *note ? "; " : "", note ? note : "");

    return pf_node_event_object(name, node, uid, pf_node_reason(run), msg,
                                v->overall != PF_PASS, now, reporter);
}

bool pf_node_marked(const cJSON *node, const char *prefix)
{
    char key[PF_NAME_MAX + 16];
    const cJSON *t;
    /* Not pf_json_str: the label key has dots of its own. */
    const cJSON *hv = cJSON_GetObjectItemCaseSensitive(
        pf_json_at(node, "metadata.labels"), PF_HYPERPOD_HEALTH_LABEL);
    const char *h = cJSON_IsString(hv) ? hv->valuestring : NULL;

    snprintf(key, sizeof(key), "%sunhealthy", prefix);
    cJSON_ArrayForEach(t, pf_json_at(node, "spec.taints")) {
        const char *k = pf_json_str(t, "key");
        if (k && !strcmp(k, key))
            return true;
    }
    return h && (!strcmp(h, "UnschedulablePendingReboot") ||
                 !strcmp(h, "UnschedulablePendingReplacement"));
}

int pf_blast_cap(const char *max_tainted, int total)
{
    double pct;
    int count;

    if (pf_parse_cap(max_tainted, &count, &pct) != PF_OK)
        return 0;
    if (count >= 0)
        return count;
    /* Round down, so a percentage is never exceeded, but allow one node in
     * any cluster (20% of 4 nodes would allow none: a small cluster could
     * never be tainted). "0%" allows none. */
    count = (int)((double)total * pct / 100.0 + 1e-9);
    return pct > 0 && count < 1 ? 1 : count;
}

const char *pf_hyperpod_action_value(enum pf_fail_action action)
{
    switch (action) {
    case PF_FAIL_ACTION_NONE: return NULL;
    case PF_FAIL_ACTION_HYPERPOD_REBOOT: return "UnschedulablePendingReboot";
    case PF_FAIL_ACTION_HYPERPOD_REPLACE: return "UnschedulablePendingReplacement";
    }
    return NULL;
}
