/* libFuzzer target: a Node object as GET /api/v1/nodes/{name} returns it,
 * through what the publisher builds from it: the conditions patch (keeps
 * lastTransitionTime while a condition's status holds) and the taints
 * patch (adds or removes only <prefix>unhealthy:NoSchedule). Invariants:
 * applying the add patch makes a second add a no-op; every other taint is
 * kept; the first input byte picks the verdict the run carries. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "publish/node.h"
#include "k8s/client.h"
#include "util/json.h"

#define PREFIX "efa-preflight.io/"

static void set_check(struct pf_check *c, const char *cond, enum pf_status st,
                      enum pf_reason reason)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "check");
    snprintf(c->condition, sizeof(c->condition), "%s", cond);
    c->reason = reason;
    snprintf(c->message, sizeof(c->message), "fuzz");
    c->status = st;
}

static int count_taints(const cJSON *taints, bool *mine)
{
    const cJSON *t;
    int n = 0;

    *mine = false;
    cJSON_ArrayForEach(t, taints) {
        const char *k = pf_json_str(t, "key"), *e = pf_json_str(t, "effect");
        if (k && !strcmp(k, PREFIX "unhealthy") && e &&
            !strcmp(e, "NoSchedule"))
            *mine = true;
        n++;
    }
    return n;
}

static void check_taints(const cJSON *node)
{
    bool changed, had = false, mine, again;
    const cJSON *taints = pf_json_at(node, "spec.taints");
    cJSON *patch, *applied, *next;

    if (cJSON_IsArray(taints))
        count_taints(taints, &had);
    patch = pf_node_taints_patch(node, PREFIX, true, "fail", &changed);
    if (changed != !had || (patch != NULL) != changed)
        __builtin_trap();
    if (!patch)
        return;
    taints = pf_json_at(patch, "spec.taints");
    if (!cJSON_IsArray(taints) || count_taints(taints, &mine) < 1 || !mine)
        __builtin_trap();
    /* The Node as it is after the patch: a second add has nothing to do,
     * a remove takes ours away again. */
    applied = cJSON_CreateObject();
    cJSON_AddItemToObject(cJSON_AddObjectToObject(applied, "spec"), "taints",
                          cJSON_Duplicate(taints, 1));
    next = pf_node_taints_patch(applied, PREFIX, true, "fail", &again);
    if (again || next)
        __builtin_trap();
    next = pf_node_taints_patch(applied, PREFIX, false, NULL, &again);
    if (!again || !next)
        __builtin_trap();
    count_taints(pf_json_at(next, "spec.taints"), &mine);
    if (mine)
        __builtin_trap();
    cJSON_Delete(next);
    cJSON_Delete(applied);
    cJSON_Delete(patch);
}

static void check_conditions(const struct pf_run *run, const cJSON *node)
{
    cJSON *patch = pf_node_conditions_patch(run, node, "2026-11-22T01:00:00Z");
    const cJSON *c, *old;

    cJSON_ArrayForEach(c, pf_json_at(patch, "status.conditions")) {
        const char *type = pf_json_str(c, "type");
        const char *st = pf_json_str(c, "status");
        const char *since = pf_json_str(c, "lastTransitionTime");
        if (!type || !st || !since)
            __builtin_trap();
        /* The first condition of that type on the Node decides. */
        cJSON_ArrayForEach(old, pf_json_at(node, "status.conditions")) {
            const char *t = pf_json_str(old, "type");
            const char *s = pf_json_str(old, "status");
            const char *l = pf_json_str(old, "lastTransitionTime");
            if (!t || strcmp(t, type))
                continue;
            if (s && !strcmp(s, st) && l && strcmp(l, since))
                __builtin_trap();
            break;
        }
    }
    cJSON_Delete(patch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pf_run run;
    cJSON *node;
    uint8_t pick;

    if (size < 1)
        return 0;
    pick = data[0];
    node = cJSON_ParseWithLength((const char *)data + 1, size - 1);
    if (!node)
        return 0;
    memset(&run, 0, sizeof(run));
    run.verdict.n = 2;
    set_check(&run.verdict.checks[0], PF_COND_DEVICES, (enum pf_status)(pick & 3),
              PF_R_EFADeviceCountMismatch);
    set_check(&run.verdict.checks[1], PF_COND_FABRIC,
              (enum pf_status)((pick >> 2) & 3), PF_R_BandwidthBelowThreshold);
    run.coll.ran = pick & 16;
    run.coll.nnodes = pick & 32 ? 1 : 2;
    run.node.efa_count = 32;
    run.cfg.mode = pick & 64 ? PF_MODE_DAEMONSET : PF_MODE_INITCONTAINER;
    check_conditions(&run, node);
    check_taints(node);
    cJSON_Delete(node);
    return 0;
}
