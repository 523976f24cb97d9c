/* The DaemonSet mode's pool as the API server shows it: the own Node's
 * instance type and zone, the pending Nodes of that pool and the agent
 * pods on them, and the pod behind a Lease holder. The coordinator
 * (coord/) and an agent's path through it (discover/daemonset.c) read the
 * pool only through here. */
#ifndef PF_K8S_POOL_H
#define PF_K8S_POOL_H

#include <stddef.h>

#include "../util/err.h"
#include "../util/sizes.h"
#include "session.h"

struct pf_k8s_pool {
    struct pf_kube *k;
    char ns[PF_NAME_MAX];             /* the agents' namespace */
    char node[PF_NAME_MAX];           /* own Node */
    char type[128], zone[128];        /* the pool: instance type, zone */
    char nodes_path[PF_PATH_MAX * 2]; /* pending Nodes (list) */
    char pods_path[PF_PATH_MAX * 3];  /* agent pods (list) */
};

/* Read own Node's instance type and zone into p (k, ns and node set by
 * the caller). */
pf_err pf_k8s_pool_node(struct pf_k8s_pool *p, char *err);
/* The lists the coordinator reads: Nodes labelled <label_prefix>status=
 * pending of the pool's instance type (the zone is checked on each), and
 * the agent pods that selector matches in p->ns. */
pf_err pf_k8s_pool_select(struct pf_k8s_pool *p, const char *label_prefix,
                          const char *selector, char *err);

/* An agent on a pending Node: none, starting (up less than
 * PF_K8S_AGENT_STARTING_S, may not have registered yet) or up. */
enum { PF_K8S_AGENT_NONE, PF_K8S_AGENT_STARTING, PF_K8S_AGENT_UP };
#define PF_K8S_AGENT_STARTING_S 5

/* One pending Node of the pool: its network nodes (layer 1..3 labels, ""
 * when unlabelled) and its agent pod with an address, if any. */
struct pf_k8s_pool_node {
    char name[PF_NAME_MAX];
    char layer[3][PF_NAME_MAX];
    char pod[PF_NAME_MAX], ip[64];
    int agent;                        /* PF_K8S_AGENT_* */
};
/* The pool now: *out (malloc, *n entries) the pending Nodes of its type
 * and zone, own Node included. */
pf_err pf_k8s_pool_view(const struct pf_k8s_pool *p,
                        struct pf_k8s_pool_node **out, int *n, char *err);
/* How many other pending Nodes of the pool have an agent pod (starting or
 * running, not finished nor being deleted): the agents we could pair
 * with. An error: we cannot tell. */
pf_err pf_k8s_pool_others(const struct pf_k8s_pool *p, int *others,
                          char *err);

/* The address of the Lease holder "<pod>_<random>"'s pod in ns.
 * PF_ERR_NOTFOUND: that pod is gone (deleted, finished, never had an
 * address): its holder is dead. */
pf_err pf_k8s_holder_address(struct pf_kube *k, const char *ns,
                             const char *holder, char *ip, size_t len,
                             char *err);

#endif
