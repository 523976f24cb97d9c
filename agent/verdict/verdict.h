/* verdict: turn facts into checks (pass/warn/fail, CamelCase reason, one-line
 * remedy) and an exit code. Thresholds come from the catalog entry and the
 * node count, overridable by config. */
#ifndef PF_VERDICT_H
#define PF_VERDICT_H

#include "../types/run.h"

/* Node checks (EFADevicesReady): node_checks.c */
void pf_verdict_node(struct pf_run *run);
/* GPU health checks (GPUHealthy) from run->node.gpuh: gpu_checks.c. */
void pf_verdict_gpu(struct pf_run *run);
/* Collective checks (EFAFabricReady): fabric_checks.c */
void pf_verdict_fabric(struct pf_run *run);
/* Per-NIC checks (EFANICIdle, EFANICErrors, EFANICSlow): nic_checks.c,
 * called by pf_verdict_fabric after a collective that finished. */
void pf_verdict_nics(struct pf_run *run);
/* NCCL transport checks (SocketFallback, NetPluginMissing, GDRDisabled):
 * transport_checks.c, called by pf_verdict_fabric. */
void pf_verdict_transport(struct pf_run *run);
/* One node (collective/inside.h): a bootstrap rank's GPUs or NICs in
 * words ("GPU 2, bus 0000:1a:00.0"), "" when unknown; and the data or
 * bandwidth check naming the rank at fault, added only when one was
 * singled out (false otherwise): inside_checks.c. */
const char *pf_inside_proc(const struct pf_run *run, int proc, char *buf,
                           size_t len);
bool pf_verdict_inside(struct pf_run *run, bool data, const char *seen);
/* The global ranks of run->coll.inside.culprits at fault for kind
 * (PF_LINK_SLOW / PF_LINK_DATA), at most max into out; returns how many.
 * And the same in words into out, "rank 300 (GPU 4, bus 0000:1c:00.0)",
 * "" for none, returning how many: on several nodes, the GPUs of this
 * node the re-test blamed. */
int pf_inside_culprits(const struct pf_run *run, unsigned kind, int *out,
                       int max);
int pf_inside_words(const struct pf_run *run, unsigned kind, char *out,
                    size_t len);
/* Overall status, the deciding reason and its class, the exit code:
 * verdict.c. Nothing here looks at a reason's word. */
void pf_verdict_finish(struct pf_run *run);
/* The same over any list of checks: publishing settles its own outcome,
 * the verdict with its checks added, with it (publish/publish.c). */
void pf_verdict_settle(struct pf_verdict *v);

/* Append a check; returns it for further editing (NULL when full). The
 * condition is the reason's own where the table names one. A warn or fail
 * takes the reason's remedy from the table (reasons.h), its placeholder
 * filled with remedy_arg: "" for a remedy that has none. */
struct pf_check *pf_verdict_add(struct pf_verdict *v, const char *name,
                                const char *condition, enum pf_status st,
                                enum pf_reason reason, const char *remedy_arg,
                                const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Worst status of the checks feeding a condition (PF_SKIP when none). */
enum pf_status pf_verdict_condition(const struct pf_verdict *v,
                                    const char *condition);

/* A condition as the checks feeding it decide it, for the Node and the
 * report alike. The deciding check is the one whose class ranks highest: a
 * fault proven here (node, fabric: False) before anything that could not
 * judge this node (usage, group, infrastructure, peer: Unknown), then warn
 * and pass (True). Every check skipped: Unknown with that check's reason
 * (NotTested when it has none). */
struct pf_condition {
    const char *status;               /* "True", "False", "Unknown" */
    const char *word;                 /* the report's: pass, warn, fail,
                                         unknown */
    enum pf_reason reason;            /* PreflightPassed on a clean pass */
    enum pf_reason_class cls;         /* the deciding check's class */
    const struct pf_check *check;     /* the deciding check */
};
/* false (out zeroed) when no check feeds the condition. */
bool pf_verdict_condition_of(const struct pf_verdict *v, const char *condition,
                             struct pf_condition *out);

#endif
