/* publish: stdout table + summary, JSON report (--json / --report FILE), and
 * in k8s mode the Node's labels, conditions, Event and taint. Publishers
 * only read the finished run. */
#ifndef PF_PUBLISH_H
#define PF_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "../k8s/session.h"
#include "../types/run.h"

/* Whether this run writes its verdict on a Node (k8s, --publish). */
bool pf_publish_to_node(const struct pf_run *run);
/* Before the run, in k8s mode: mark the Node as being validated
 * (node.c), so no stale pass outlives a failed or interrupted run. A
 * failure here is logged by the caller; the run goes on. */
pf_err pf_publish_begin(struct pf_run *run, char *err);
/* Writes the Node first (k8s; a usage error puts back what begin found),
 * then the report file, then stdout, so all three tell the same story:
 * a report that cannot be written is a check of its own (ReportFailed),
 * never a reason to skip the Node. Publishing reads the run and writes
 * none of it: its own checks and the exit code they make are in *out. */
pf_err pf_publish(const struct pf_run *run, struct pf_publish_outcome *out,
                  char *err);

/* Pieces, for tests and for the commands that need only one: of the run's
 * verdict, or (_of) of the verdict v as published. */
void pf_publish_table(const struct pf_run *run, FILE *out);
void pf_publish_table_of(const struct pf_run *run, const struct pf_verdict *v,
                         FILE *out);
/* Returns a malloc'd JSON document (schema docs/reference/report.md). */
char *pf_report_json(const struct pf_run *run);
char *pf_report_json_of(const struct pf_run *run, const struct pf_verdict *v);
/* What became of our mark (taint, HyperPod label) on a node proven
 * faulty: withheld is PF_R_None when it was written or not asked for. */
struct pf_mark_outcome {
    enum pf_reason withheld;          /* TaintCapReached, TaintBudgetUnavailable */
    char note[320];
};
/* Write labels/conditions/event/taint to the Node (node.c). */
pf_err pf_publish_node(const struct pf_run *run, struct pf_mark_outcome *mark,
                       char *err);
pf_err pf_publish_node_begin(struct pf_run *run, char *err);
pf_err pf_publish_node_undo(const struct pf_run *run, char *err);
/* What a Node write needs from the environment (identity, API server,
 * token and CA paths), read once on the main thread: another thread must
 * not call getenv while NCCL's set-up calls setenv. */
void pf_publish_target(const struct pf_config *cfg, struct pf_k8s_target *t);
/* A signal before the verdict: status=error (pending stays) and both
 * conditions Unknown/Interrupted, from the config and t alone (node "" =
 * resolve it), bounded by deadline. Safe on another thread than the run's:
 * it reads nothing of the run and no environment variable. */
pf_err pf_publish_node_interrupted(const struct pf_config *cfg,
                                   const struct pf_k8s_target *t,
                                   const char *node, int sig,
                                   int64_t deadline, char *err);
void pf_publish_mark_free(struct pf_run *run);
/* Whether peer rank `rank` (k8s: its pod and Node from discovery) was
 * stopped by a signal since this run began: its Node carries the
 * Interrupted mark naming its pod (pf_publish_node_interrupted). One Node
 * read, within 1.5 s, stopped by run->cancel; why says what the Node says.
 * ctx is the run: this is the rendezvous' pf_rdv_cfg.gone (set by main). */
bool pf_publish_peer_interrupted(void *ctx, int rank, char *why, size_t len);

/* ------------------------------------------ for the Node's other writer
 * The monitor writes on the same Node as the gate: the status label's
 * values, the Event in the gate's shape and our taint under the cluster's
 * taint budget come from here, so the two cannot drift apart. */

/* The status label the operator (or the node group) sets to ask the
 * DaemonSet for a validation; the agent never overwrites it before a
 * verdict. */
#define PF_NODE_PENDING "pending"
/* The status label while a run is under way. */
#define PF_NODE_VALIDATING "validating"
/* The status of a DaemonSet node that passed its node checks alone, its
 * pool having no other pending node: the fabric was not tested, and a
 * `status in (pass,warn)` selector does not admit it. */
#define PF_NODE_UNTESTED "untested"

/* The Event's name, client-go's way: node + "." + time in hex (ns), with
 * the node part cut so the name stays within the 253 characters the API
 * server allows. */
void pf_node_event_name(char *out, size_t len, const char *node,
                        unsigned long long ns);
/* A core/v1 Event on Node node (uid may be NULL or ""), in namespace
 * default, from component efa-preflight: the one shape the gate's and the
 * monitor's Events share. */
cJSON *pf_node_event_object(const char *name, const char *node,
                            const char *uid, const char *reason,
                            const char *message, bool warning,
                            const char *now, const char *reporter);

/* Add (add) or remove our taint <prefix>unhealthy:NoSchedule, its value
 * why's name, on node through k, re-reading the Node on a conflict
 * (taint.c). Adding takes a slot of cfg's taint budget first, by deadline:
 * with the budget full *applied stays false and nothing is written (a
 * warning says so); an error reading or writing the budget is returned,
 * named TaintBudgetUnavailable. Removing gives the slot back (best
 * effort). */
pf_err pf_publish_taint(struct pf_kube *k, const struct pf_config *cfg,
                        const char *node, bool add, enum pf_reason why,
                        int64_t deadline, bool *applied, char *err);

#endif
