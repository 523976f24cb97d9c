/* The cluster-wide budget of marked nodes (--max-tainted), taken atomically.
 *
 * A node "carries our mark" when it has our taint or a HyperPod recovery
 * label (node.h: pf_node_marked). The budget is one ConfigMap
 * (cfg.taint_budget, default efa-preflight/efa-preflight-taint-budget) whose
 * data holds one key per node holding a slot, the value the time (RFC 3339)
 * it took it:
 *
 *   take     list the Nodes (paged): how many there are (the cap) and which
 *            carry our mark; read the ConfigMap; the holders are its fresh
 *            keys plus every marked node (a mark written by hand or by an
 *            older agent counts too). A node already holding (a key or a
 *            mark) may stay marked; else, with fewer holders than the cap,
 *            it adds its key and writes the ConfigMap back with the
 *            resourceVersion it read (POST when there is none). A 409 means
 *            another node wrote first: read again and decide again, after a
 *            jittered backoff, until the deadline. Only a successful write
 *            lets a node be marked: no count-then-write.
 *   release  after our taint came off (the node passed), drop our key the
 *            same way.
 *   prune    a key whose node carries no mark and is older than
 *            PF_BUDGET_STALE_S (a node that took a slot and died before
 *            marking, one untainted by hand, one HyperPod already repaired)
 *            is not counted and is dropped at the next write.
 *
 * Whoever cannot read or write the budget does not mark (fail safe). */
#ifndef PF_PUBLISH_BUDGET_H
#define PF_PUBLISH_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "../util/err.h"
#include "../k8s/session.h"

/* Longer than any run's publishing takes from taking a slot to the mark. */
#define PF_BUDGET_STALE_S 600

struct pf_budget {
    struct pf_kube *k;
    char ns[PF_NAME_MAX];
    char name[PF_NAME_MAX];
    const char *node;                 /* this node */
    const char *prefix;               /* label prefix (our taint's key) */
    const char *max_tainted;          /* "20%" or a count */
    int64_t deadline;                 /* retries end here (clock.h) */
    /* filled by pf_budget_take */
    int total;                        /* Nodes in the cluster */
    int cap;                          /* marks allowed at once */
    int others;                       /* holders other than this node */
};

enum pf_budget_decision {
    PF_BUDGET_HOLDS,                  /* already a holder: may stay marked */
    PF_BUDGET_TAKE,                   /* a slot is free: write *out */
    PF_BUDGET_FULL,                   /* others hold every slot */
};

/* Pure (unit-tested). data: the ConfigMap's data as read (NULL: none);
 * marked: sorted names of the Nodes carrying our mark. *others: holders
 * other than self. With PF_BUDGET_TAKE, *out is the data to write: the
 * fresh keys plus self at now (caller frees). */
enum pf_budget_decision pf_budget_decide(const cJSON *data,
                                         char *const *marked, int nmarked,
                                         const char *self, int cap,
                                         time_t now, int *others,
                                         cJSON **out);

/* Take a slot for b->node. *allowed false with PF_OK: the budget is full
 * (b->others, b->cap, b->total say how). An error: the budget could not be
 * read or written; the caller must not mark. */
pf_err pf_budget_take(struct pf_budget *b, bool *allowed, char *err);
/* Drop b->node's key, if it has one. */
pf_err pf_budget_release(struct pf_budget *b, char *err);
/* Split cfg.taint_budget ("namespace/name") into b->ns and b->name. */
pf_err pf_budget_target(struct pf_budget *b, const char *spec, char *err);

#endif
