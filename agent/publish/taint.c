/* Our taint on a Node under the cluster's taint budget (budget.h), for the
 * Node's other writer, the monitor (publish.h: pf_publish_taint). */
#include "publish.h"
#include "budget.h"
#include "node.h"

#include "../config/config.h"
#include "../k8s/nodes.h"
#include "../util/log.h"

#define CONFLICT_RETRIES 5

pf_err pf_publish_taint(struct pf_kube *k, const struct pf_config *cfg,
                        const char *node, bool add, enum pf_reason why,
                        int64_t deadline, bool *applied, char *err)
{
    struct pf_budget b = { .k = k, .node = node,
                           .prefix = cfg->label_prefix,
                           .max_tainted = cfg->max_tainted };
    bool allowed = true;
    pf_err rc;

    *applied = false;
    rc = pf_budget_target(&b, cfg->taint_budget, err);
    if (rc != PF_OK)
        return rc;
    b.deadline = deadline;
    if (add) {
        rc = pf_budget_take(&b, &allowed, err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "%s",
                          pf_reason_name(PF_R_TaintBudgetUnavailable));
            return rc;
        }
        if (!allowed) {
            pf_warn("node %s: not tainted (%s): %d of %d nodes hold the "
                    "budget, max_tainted %s allows %d",
                    node, pf_reason_name(PF_R_TaintCapReached), b.others,
                    b.total, cfg->max_tainted, b.cap);
            return PF_OK;
        }
    }
    for (int attempt = 1; attempt <= CONFLICT_RETRIES; attempt++) {
        cJSON *obj = NULL, *patch;
        bool changed = false;
        long code = 0;

        rc = pf_k8s_node_get(k, node, &obj, err);
        if (rc != PF_OK)
            return rc;
        patch = pf_node_taints_patch(obj, cfg->label_prefix, add,
                                     pf_reason_name(why), &changed);
        cJSON_Delete(obj);
        if (!changed)
            break;
        rc = pf_k8s_node_patch(k, node, PF_K8S_NODE_META, patch, &code, err);
        cJSON_Delete(patch);
        if (rc != PF_OK)
            return rc;
        if (code != 409)
            break;
    }
    *applied = true;
    if (!add && pf_budget_release(&b, err) != PF_OK)
        pf_warn("node %s: taint budget slot not released (%s); it goes "
                "stale in %d s", node, err, PF_BUDGET_STALE_S);
    return PF_OK;
}
