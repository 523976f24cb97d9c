/* The DaemonSet grouping: a plain cut in name order without topology
 * labels, nodes under one network node together when labelled. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "coord/groups.h"

/* Groups of the plain cut (no topology labels): member i's group and
 * rank, checked against the first member and size wanted. */
static void group(int n, int g, int i, int want_first, int want_count)
{
    struct pf_k8s_topo m[16];
    char names[16][8];
    int gid[16], rank[16], first = -1, count = 0;

    for (int k = 0; k < n; k++) {
        snprintf(names[k], sizeof(names[k]), "n%02d", k);
        m[k] = (struct pf_k8s_topo){ names[k], { "", "", "" } };
    }
    cr_assert_geq(pf_k8s_topo_groups(m, n, g, gid, rank), 1);
    for (int k = 0; k < n; k++) {
        if (gid[k] != gid[i])
            continue;
        count++;
        if (rank[k] == 0)
            first = k;
    }
    cr_assert(first == want_first && count == want_count,
              "n=%d g=%d i=%d: got %d+%d, want %d+%d", n, g, i, first, count,
              want_first, want_count);
}

Test(k8s_discover, daemonset_groups_without_topology_cut_in_name_order)
{
    group(3, 2, 0, 0, 3);     /* the leftover joins: one group of 3 */
    group(3, 2, 2, 0, 3);
    group(4, 2, 3, 2, 2);
    group(5, 2, 4, 2, 3);
    group(1, 2, 0, 0, 1);     /* alone: fabric untested */
    group(8, 3, 7, 6, 2);     /* a remainder of 2 is its own group */
    group(7, 3, 6, 3, 4);
    group(2, 4, 1, 0, 2);
}

Test(k8s_discover, daemonset_groups_keep_nodes_under_one_spine_together)
{
    /* Name order would pair a-b and c-d; the spines pair a-c and b-d. */
    struct pf_k8s_topo m[] = {
        { "a", { "nn-1", "nn-2", "spine-x" } },
        { "b", { "nn-1", "nn-2", "spine-y" } },
        { "c", { "nn-1", "nn-2", "spine-x" } },
        { "d", { "nn-1", "nn-2", "spine-y" } },
        { "e", { "nn-1", "nn-3", "spine-z" } },
    };
    int gid[5], rank[5];

    cr_assert_eq(pf_k8s_topo_groups(m, 5, 2, gid, rank), 2);
    cr_assert_eq(gid[0], gid[2]);
    cr_assert_eq(gid[1], gid[3]);
    cr_assert_neq(gid[0], gid[1]);
    /* e has no partner under its layer-2 node: it joins the last group
     * rather than stay alone. */
    cr_assert(gid[4] == gid[0] || gid[4] == gid[1]);
    cr_assert_eq(rank[4], 2);
    cr_assert_eq(rank[0] + rank[2], 1);
}

Test(k8s_discover, daemonset_leftovers_of_spines_meet_one_layer_up)
{
    /* Three spines under one layer-2 node, one node each, group size 2:
     * two of them pair, the third joins that pair (never alone). */
    struct pf_k8s_topo m[] = {
        { "a", { "l1", "l2", "s1" } },
        { "b", { "l1", "l2", "s2" } },
        { "c", { "l1", "l2", "s3" } },
        { "d", { "l1", "l2b", "s4" } },
        { "e", { "l1", "l2b", "s4" } },
    };
    int gid[5], rank[5];

    cr_assert_eq(pf_k8s_topo_groups(m, 5, 2, gid, rank), 2);
    cr_assert_eq(gid[3], gid[4]);
    cr_assert_eq(gid[0], gid[1]);
    cr_assert_eq(gid[2], gid[0]);
    cr_assert_neq(gid[0], gid[3]);
}
