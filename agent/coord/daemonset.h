/* DaemonSet pre-flight mode (daemonset.c): discover/k8s.c hands over here
 * once it has the API client and the own pod; the groups are formed by the
 * pool's coordinator (coord.h) and cut by groups.c. */
#ifndef PF_COORD_DAEMONSET_H
#define PF_COORD_DAEMONSET_H

#include <cjson/cJSON.h>

#include "../types/run.h"
#include "../util/kubeapi.h"

/* The whole run's group in DaemonSet mode. */
pf_err pf_discover_daemonset(struct pf_run *run, struct pf_kube *k,
                             const struct pf_kube_identity *id,
                             const cJSON *own_pod, char *err);

/* One member for the DaemonSet grouping: node name and its network nodes
 * (layer 1..3 labels, "" when unlabelled). */
struct pf_k8s_topo {
    const char *node;
    const char *layer[3];
};
/* Cut n members into groups of g, nodes under the same network nodes
 * first (groups.c says how). Writes each member's group and rank within
 * it; returns the number of groups, -1 when out of memory. */
int pf_k8s_topo_groups(const struct pf_k8s_topo *m, int n, int g, int *gid,
                       int *rank);

#endif
