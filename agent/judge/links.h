/* What a link must reach, beside the catalog's floors (judge.h says when
 * each applies): the fleet baseline's bar on the links between two nodes,
 * and, where no floor applies, a fraction of the median link. */
#ifndef PF_JUDGE_LINKS_H
#define PF_JUDGE_LINKS_H

#include <stdint.h>

#include "../types/baseline.h"

/* A rank is the straggler when the better of its two links is below this
 * fraction of every other rank's better link; where no floor applies, a
 * link below this fraction of the median one is slow. */
#define PF_STRAG_LINK_RATIO 0.5

/* The floor a pair link at bytes is held to: the larger of catalog (the
 * 2-node catalog floor, 0 = none) and fraction x the median of the key
 * (type, engine, pair, 2, bytes) once it holds PF_BASE_MIN_RUNS values;
 * the catalog floor alone otherwise. h (may be NULL) says what and why. */
double pf_base_pair_floor(const struct pf_baseline *b, const char *type,
                          const char *engine, uint64_t bytes, double catalog,
                          double fraction, struct pf_base_held *h);

/* The relative threshold, where no floor applies: PF_STRAG_LINK_RATIO of
 * the median of n links. */
double pf_links_relative_floor(int n, const double *gbps);

/* The slow threshold for the ring links of one node's processes, where
 * no floor applies (link i: rank i with rank (i+1) % n). At 3 ranks a
 * slow rank spoils two of the three links, so the median link is one of
 * its: PF_STRAG_LINK_RATIO of the median of each rank's better link
 * instead (a slow rank spoils no other rank's better one). Else the
 * re-test's own, pf_links_relative_floor: from 4 ranks on the median link
 * reaches above a slow one, and a higher threshold would count a healthy
 * link slowed by a busy host as slow. */
double pf_inside_relative_floor(int n, const double *gbps);

#endif
