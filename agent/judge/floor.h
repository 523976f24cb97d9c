/* The floor curves' arithmetic: the catalog's points (by node count, the
 * host engine's by NIC count, each by message size) read at one run's
 * size. Which curve applies to a run is the rule in judge.h. */
#ifndef PF_JUDGE_FLOOR_H
#define PF_JUDGE_FLOOR_H

#include <stdbool.h>
#include <stdint.h>

#include "../types/catalog.h"

/* The points of the curve around a node count: lo the largest count <=
 * nodes, hi the smallest >= nodes (equal on a point). Across nodes only
 * multi-node points count (the 1-node point measures NVLink, not EFA);
 * below the first of them lo = hi = that point, beyond the last lo = hi =
 * the last. false when none applies. */
bool pf_floor_points(const struct pf_instance *it, int nodes,
                     const struct pf_floor **lo, const struct pf_floor **hi);
/* The floor curve at a node count, into out (out->nodes = nodes): linear
 * in log2 N between the points around it, flat below the first multi-node
 * point and beyond the last; one node takes the 1-node point only (NVLink,
 * not EFA). Between two points from_bytes is the larger, verified both,
 * and source says which points. false (out zeroed) when no point applies. */
bool pf_instance_floor(const struct pf_instance *it, int nodes,
                       struct pf_floor *out);
/* The host engine's floor over nics NICs: the host_floors entry with the
 * largest count <= nics; NULL when none applies. */
const struct pf_floor *pf_instance_host_floor(const struct pf_instance *it,
                                              int nics);

/* A point's sizes into out (PF_MAX_SIZE_FLOORS room): its own list, else
 * its one size (from_bytes), else none (a bare number: busbw_gbps at any
 * size). Returns how many. */
int pf_floor_sizes(const struct pf_floor *f, struct pf_size_floor *out);
/* A size curve (ascending) at bytes: linear in log2 size between two
 * points, flat beyond the last, 0 below the first or when n is 0. */
double pf_size_floor_at(const struct pf_size_floor *s, int n, uint64_t bytes);
/* A rule's floor at a message size: its size curve, or gbps from
 * from_bytes on; 0 where none holds. */
double pf_floor_rule_at(const struct pf_floor_rule *r, uint64_t bytes);
/* The smallest size at which the rule holds (0: any). */
uint64_t pf_floor_rule_min_bytes(const struct pf_floor_rule *r);

#endif
