/* The DaemonSet mode's cut (groups.c): the pool's coordinator (coord.h)
 * forms groups of the agents registered with it, nodes under the same
 * network nodes together. */
#ifndef PF_COORD_GROUPS_H
#define PF_COORD_GROUPS_H

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
