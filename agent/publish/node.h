/* The Node publisher's pieces (node.c drives them): what to write, built
 * as JSON from the finished run and the Node as last read. Only keys under
 * cfg.label_prefix, the condition types EFADevicesReady / EFAFabricReady and
 * the taint <prefix>unhealthy are ever written; everything else on the Node
 * is left as it was. */
#ifndef PF_PUBLISH_NODE_H
#define PF_PUBLISH_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "../types/run.h"
#include "publish.h"

/* The status label's values (PF_NODE_PENDING, ...) and the Event's shape
 * (pf_node_event_name, pf_node_event_object) are in publish.h: the
 * monitor writes them too. */

/* Label values; "" means "remove the label". */
struct pf_node_labels {
    char status[16];                  /* pass|warn|fail|error|untested,
                                         or pending kept (stay_pending) */
    char efa_count[16];
    char busbw_gbps[32];
    char validated_at[32];            /* 20261122T010203Z */
    char valid_until[32];
    char valid_until_epoch[24];       /* the same, seconds: nodeAffinity Gt/Lt */
    char fabric[16];                  /* tested|untested */
    char gpu_health[16];              /* GPUHealthy in words: pass|warn|
                                         fail|unknown; "" = no GPU check */
    char health_status[40];           /* HyperPod recovery ask, "" = none */
};

/* SageMaker HyperPod's node health label: UnschedulablePendingReboot /
 * UnschedulablePendingReplacement start its documented recovery. */
#define PF_HYPERPOD_HEALTH_LABEL "sagemaker.amazonaws.com/node-health-status"

/* The labels the agent writes (under the prefix), in order; NULL past the
 * last. */
const char *pf_node_label_name(size_t i);

/* ISO 8601 basic format, UTC: colons are not allowed in label values. */
void pf_node_label_time(char out[32], time_t t);
/* True when this run is the DaemonSet's group of one (no fabric partner). */
bool pf_node_fabric_untested(const struct pf_run *run);
void pf_node_labels_make(const struct pf_run *run, time_t now,
                         struct pf_node_labels *l);
/* {"metadata":{"labels":{...}}} for a JSON merge patch. */
cJSON *pf_node_labels_patch(const char *prefix, const struct pf_node_labels *l);

/* {"status":{"conditions":[...]}} for a strategic merge patch, keeping
 * each condition's lastTransitionTime from node while its status is the
 * same. now is RFC 3339. */
cJSON *pf_node_conditions_patch(const struct pf_run *run, const cJSON *node,
                                const char *now);

/* Crash-consistent publishing (node.c): before the run the Node says that
 * no verdict stands, so a stale pass never outlives a failed or interrupted
 * run.
 *
 * {"metadata":{"labels":{...}}}: status=status (kept when it is
 * "pending"), the labels that speak for a verdict (validated-at,
 * valid-until, valid-until-epoch, busbw-gbps, fabric) removed. */
cJSON *pf_node_state_labels_patch(const char *prefix, const cJSON *node,
                                  const char *status);
/* Both conditions Unknown with reason and message (a strategic merge
 * patch, lastTransitionTime kept while they were Unknown already). */
cJSON *pf_node_state_conditions_patch(const cJSON *node, enum pf_reason reason,
                                      const char *message, const char *now);
/* The Interrupted mark's message: "run stopped by signal SIG (NAME) at NOW
 * before its verdict (pod POD)". It names the pod, so the peers that wait
 * for that pod can tell its mark from another agent's on the same Node. */
void pf_node_interrupted_message(char *out, size_t len, int sig,
                                 const char *signame, const char *now,
                                 const char *pod);
/* Whether node carries the Interrupted mark of pod's agent written at or
 * after since (Unix seconds): one of our two conditions with reason
 * Interrupted, its lastHeartbeatTime not before since, its message naming
 * pod as pf_node_interrupted_message does. msg gets that message. */
bool pf_node_interrupted_mark(const cJSON *node, const char *pod, int64_t since,
                              char *msg, size_t len);
/* Patches that put back our labels / conditions as node has them (absent
 * ones removed): what a run that ends in a usage error leaves. */
cJSON *pf_node_undo_labels_patch(const char *prefix, const cJSON *node);
cJSON *pf_node_undo_conditions_patch(const cJSON *node);

/* {"metadata":{"resourceVersion":RV},"spec":{"taints":[...]}}: the node's
 * taints with <prefix>unhealthy:NoSchedule added (add) or removed. NULL
 * with *changed = false when nothing would change. */
cJSON *pf_node_taints_patch(const cJSON *node, const char *prefix, bool add,
                            const char *value, bool *changed);

/* The gate's Event on the Node: Normal on pass, Warning otherwise. */
cJSON *pf_node_event(const struct pf_run *run, const char *node,
                     const char *uid, const char *reporter, const char *now,
                     const char *name, const char *note);

/* Blast radius. A node carries our mark when it has our taint or a
 * HyperPod recovery label asking for a reboot or replacement. */
bool pf_node_marked(const cJSON *node, const char *prefix);
/* How many nodes of total may carry the mark at once, from
 * cfg.max_tainted ("5" or "20%": rounded down, but at least 1 for a
 * percentage above 0; an unparsable value allows none). */
int pf_blast_cap(const char *max_tainted, int total);
/* The HyperPod label value for cfg.on_fail_action, NULL for none. */
const char *pf_hyperpod_action_value(enum pf_fail_action action);
/* The reason summing up the run: PreflightPassed or the first failing
 * (else warning) check's reason. */
const char *pf_node_reason(const struct pf_run *run);

#endif
