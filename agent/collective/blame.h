/* Who is to blame, from the links' numbers: the pure rules of the
 * pairwise phase (straggler.c runs it, inside.c runs it among one node's
 * GPUs), testable without a fabric. Nothing here measures, sends or reads
 * the run; both runners call in, this calls neither. The floors the links
 * are held to come from the judgement (judge/judge.h). */
#ifndef PF_BLAME_H
#define PF_BLAME_H

#include <stdbool.h>
#include <stddef.h>

#include "../types/coll.h"

/* A suspect is slow when its re-test with a node proven good is under
 * this fraction of the floor: a link measured at 0.95 of its floor on a
 * busy host is noise, not a straggler, and blaming a good node costs more
 * than missing a marginal one. Between this and the floor it is named in
 * the note as marginal, not blamed. */
#define PF_STRAG_CLEAR_RATIO 0.9
/* Timings single a rank out when it took this many times the next one. */
#define PF_STRAG_TIME_RATIO 1.5

/* The pure decisions, testable without a fabric. ---------------------- */

/* Phases of the pairwise re-test for n ranks (0 for n < 2). */
int pf_straggler_nphases(int n);
/* Phase in which link i (rank i with rank (i+1) % n) is tested. */
int pf_straggler_link_phase(int n, int i);
/* rank's partner in phase, -1 when it sits that phase out. */
int pf_straggler_peer(int rank, int n, int phase);

/* link_gbps[i] = bandwidth between rank i and rank (i+1) % n. Returns the
 * straggler's rank or -1 (2 ranks, links alike, slow links that do not
 * share one rank); note says which and why, in words and numbers. */
int pf_straggler_from_links(int n, const double *link_gbps, char *note,
                            size_t len);

/* The ring-neighbour rule alone, for the ranks inside one node
 * (inside.c): link i joins rank i and rank (i+1) % n; with link_wrong
 * given and any link carrying wrong data, the bad links are those; else
 * those below PF_STRAG_LINK_RATIO of the best link. culprit[r] is set for
 * each rank whose two links are bad, only when every bad link ends at one
 * of them and they are at most half the ranks. Returns how many. */
int pf_straggler_blame(int n, const double *link_gbps, const long *link_wrong,
                       bool *culprit, char *note, size_t len);

/* The blame rule, for slowness and wrong data alike. ---------------- */

/* Confirmation rounds at most: each pairs every suspect it can with a
 * distinct node proven good. */
#define PF_PAIR_CONFIRM_ROUNDS 2

/* What a link of gbps carrying wrong elements is: PF_LINK_SLOW below
 * slow_below (0: slowness not judged), PF_LINK_DATA with wrong data. */
unsigned pf_link_judge(double gbps, long wrong, double slow_below);

/* After the neighbour rounds (ring_bad[i]: link i, rank i with rank
 * (i+1) % n, as pf_link_judge said): pair each suspect (a bad link) with a
 * node proven good (both links good), suspects with both links bad first,
 * one good node per suspect per round, at most max_rounds rounds.
 * partner[k * n + r] is rank r's partner in confirmation round k, -1 when
 * it sits the round out (n x max_rounds entries). Returns the rounds
 * needed (0: no suspect, no good node or n < 3). */
int pf_pairs_confirm_plan(int n, const unsigned *ring_bad, int max_rounds,
                          int *partner);

/* One confirmation: suspect re-tested with good; bad as pf_link_judge. */
struct pf_confirm {
    int suspect, good;
    unsigned bad;
    double gbps;
    long wrong;
};

/* The verdict of the links: culprit[r] (n entries) gets the PF_LINK_*
 * kinds for which rank r is failed: its confirmation link was bad in a
 * way one of its ring links was. Nobody when n < 3, when no node was
 * proven good, or when more than half the ranks would be. Returns how many
 * ranks are blamed; note says what was seen, in words and numbers
 * (ring_gbps and ring_wrong: the n ring links, for it). */
int pf_pairs_blame(int n, const double *ring_gbps, const long *ring_wrong,
                   const unsigned *ring_bad, const struct pf_confirm *conf,
                   int nconf, double slow_below, unsigned *culprit,
                   char *note, size_t len);

/* After pf_pairs_blame with the links held to base_floor (a fleet
 * baseline above catalog_floor): a slow culprit whose confirmation link
 * met the catalog floor is PF_LINK_DEGRADED instead (a warning, not a
 * proven fault of the fabric). Nothing when base_floor <= catalog_floor. */
void pf_pairs_split_degraded(int n, const struct pf_confirm *conf, int nconf,
                             double catalog_floor, double base_floor,
                             unsigned *culprit);

/* secs[r] = rank r's time per all_reduce. Returns the rank that took
 * PF_STRAG_TIME_RATIO times the next slowest, else -1; note as above. */
int pf_straggler_from_times(int n, const double *secs, char *note,
                            size_t len);

/* The ring rule inside one node, for the re-test between its processes
 * (straggler.c calls it at 3 ranks, where none has two good links and no
 * confirmation can run). Both ends of every link are this node's ranks, so a good link
 * clears both of them: for each kind (PF_LINK_SLOW, PF_LINK_DATA) a rank
 * whose two ring links (ring_bad[i]: rank i with rank (i+1) % n) are bad
 * that way is blamed, when every such link ends at a blamed rank and the
 * blamed are at most half the ranks. culprit[r] gets the kinds; returns
 * how many ranks, and only then writes note (gbps and wrong: the links,
 * for its numbers). */
int pf_inside_ring_blame(int n, const double *gbps, const long *wrong,
                         const unsigned *ring_bad, unsigned *culprit,
                         char *note, size_t len);

#endif
