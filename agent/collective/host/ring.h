/* The ring all_reduce schedule: which segment a rank sends and receives at
 * each step, and how segments are cut into pipelined chunks. Pure
 * arithmetic, kept apart from the fabric so it can be tested alone.
 *
 * count elements are cut into n segments (the first count % n get one more
 * element). Steps 0..n-2 are the reduce-scatter, n-1..2n-3 the all-gather.
 * At step t a rank sends segment pf_ring_send_seg(rank, n, t) to rank+1 and
 * receives pf_ring_recv_seg(rank, n, t) from rank-1; what it receives at t
 * is what it sends at t+1, which is what lets chunks flow step to step.
 * Every segment is cut into the same number of chunks, so chunk c of step t
 * on one rank matches chunk c of step t on its neighbour. */
#ifndef PF_RING_H
#define PF_RING_H

#include <stdint.h>

/* Number of steps of one all_reduce over n ranks: 2(n-1). */
static inline int pf_ring_steps(int n) { return n > 1 ? 2 * (n - 1) : 0; }

/* True while step t belongs to the reduce-scatter half. */
static inline int pf_ring_is_reduce(int n, int t) { return t < n - 1; }

int pf_ring_send_seg(int rank, int n, int t);
int pf_ring_recv_seg(int rank, int n, int t);

/* Offset and length (elements) of segment s. */
void pf_ring_segment(uint64_t count, int n, int s, uint64_t *off,
                     uint64_t *len);

/* Chunks per segment so that none exceeds chunk_elems (at least 1). */
uint64_t pf_ring_nchunks(uint64_t count, int n, uint64_t chunk_elems);

/* Offset (within the segment) and length of chunk c of a segment of
 * seg_len elements cut into nchunks. Lengths differ by at most one; a
 * chunk may be empty when the segment is shorter than nchunks. */
void pf_ring_chunk(uint64_t seg_len, uint64_t nchunks, uint64_t c,
                   uint64_t *off, uint64_t *len);

#endif
