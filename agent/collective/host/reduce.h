/* The host engine's float32 sums. One kernel per shape; the engine runs
 * them on each rail's own progress thread (engine_host.c), so with k rails
 * k cores sum at once, each its own chunks. pf_reduce_part cuts one range
 * among threads (bench/host_reduce and the tests sum one buffer with T
 * threads that way). */
#ifndef PF_HOST_REDUCE_H
#define PF_HOST_REDUCE_H

#include <stdint.h>

/* d[i] += in[i], i < n. d and in must not overlap. */
void pf_reduce_add(float *restrict d, const float *restrict in, uint64_t n);

/* d[i] = a[i] + b[i], i < n. d must not overlap a or b. */
void pf_reduce_add3(float *restrict d, const float *restrict a,
                    const float *restrict b, uint64_t n);

/* Part k of nparts of n elements: parts start on 16-float (64-byte)
 * boundaries, so threads never write the same cache line; they cover
 * 0..n exactly, and trailing parts may be empty. */
void pf_reduce_part(uint64_t n, int nparts, int k, uint64_t *off,
                    uint64_t *len);

#endif
