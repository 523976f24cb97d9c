/* Cutting the DaemonSet coordinator's waiting agents into groups, nodes
 * under the same network nodes first (EKS labels them
 * topology.k8s.aws/network-node-layer-1..3, layer 3 nearest the instance).
 *
 * Members are sorted by (layer 1, layer 2, layer 3, node name). Full groups
 * are cut inside each layer-3 set first; what is left of each set moves up
 * and is cut within its layer-2 set, then layer 1, then the whole pool. A
 * final remainder of one joins the last group formed (so a pair plus one
 * straggler is one group of 3, never a node alone beside a group); a larger
 * remainder is a smaller group of its own. Without topology labels every
 * layer is "" and this is a plain cut in node-name order. */
#include "groups.h"

#include <stdlib.h>
#include <string.h>

static int cmp_member(const struct pf_k8s_topo *a, const struct pf_k8s_topo *b,
                      int depth)
{
    for (int l = 0; l < depth && l < 3; l++) {
        int c = strcmp(a->layer[l] ? a->layer[l] : "",
                       b->layer[l] ? b->layer[l] : "");
        if (c)
            return c;
    }
    return depth > 3 ? strcmp(a->node, b->node) : 0;
}

/* qsort has no context argument: sort pointers instead of indices. */
static int by_topo(const void *x, const void *y)
{
    const struct pf_k8s_topo *const *a = x, *const *b = y;
    return cmp_member(*a, *b, 4);
}

int pf_k8s_topo_groups(const struct pf_k8s_topo *m, int n, int g, int *gid,
                       int *rank)
{
    const struct pf_k8s_topo **sorted, **carry, **next;
    int ncarry, ngroups = 0, last = -1;
    int *size;

    if (n <= 0)
        return 0;
    if (g < 1)
        g = 1;
    sorted = malloc((size_t)n * sizeof(*sorted));
    next = malloc((size_t)n * sizeof(*next));
    size = calloc((size_t)n + 1, sizeof(*size));
    if (!sorted || !next || !size) {
        free(sorted);
        free(next);
        free(size);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        sorted[i] = &m[i];
        gid[i] = -1;
    }
    qsort(sorted, (size_t)n, sizeof(*sorted), by_topo);
    carry = sorted;
    ncarry = n;
    for (int depth = 3; depth >= 0; depth--) {
        int nnext = 0;
        for (int s = 0; s < ncarry;) {
            int e = s + 1, full;
            while (e < ncarry && !cmp_member(carry[s], carry[e], depth))
                e++;
            full = (e - s) / g;
            for (int j = 0; j < full * g; j++) {
                int i = (int)(carry[s + j] - m);
                gid[i] = ngroups + j / g;
                rank[i] = j % g;
            }
            if (full) {
                for (int j = 0; j < full; j++)
                    size[ngroups + j] = g;
                ngroups += full;
                last = ngroups - 1;
            }
            for (int j = s + full * g; j < e; j++)
                next[nnext++] = carry[j];
            s = e;
        }
        /* next and carry may alias sorted: copy back before the next pass. */
        memmove(sorted, next, (size_t)nnext * sizeof(*next));
        carry = sorted;
        ncarry = nnext;
    }
    /* At depth 0 every leftover is in one run: fewer than g remain. */
    if (ncarry == 1 && last >= 0) {
        int i = (int)(carry[0] - m);
        gid[i] = last;
        rank[i] = size[last]++;
    } else if (ncarry > 0) {
        for (int j = 0; j < ncarry; j++) {
            int i = (int)(carry[j] - m);
            gid[i] = ngroups;
            rank[i] = j;
        }
        ngroups++;
    }
    free(sorted);
    free(next);
    free(size);
    return ngroups;
}
