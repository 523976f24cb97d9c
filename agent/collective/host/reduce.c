#include "reduce.h"

/* gcc -O2's cheap vectorizer refuses a loop of unknown trip count; a
 * fixed 16-float inner block it turns into packed adds, and restrict
 * rules out the overlap checks: memory speed instead of one float a cycle
 * (bench/results/host_allreduce.md). */
#define BLOCK 16

void pf_reduce_add(float *restrict d, const float *restrict in, uint64_t n)
{
    uint64_t k = 0;

    for (; k + BLOCK <= n; k += BLOCK)
        for (int j = 0; j < BLOCK; j++)
            d[k + j] += in[k + j];
    for (; k < n; k++)
        d[k] += in[k];
}

void pf_reduce_add3(float *restrict d, const float *restrict a,
                    const float *restrict b, uint64_t n)
{
    uint64_t k = 0;

    for (; k + BLOCK <= n; k += BLOCK)
        for (int j = 0; j < BLOCK; j++)
            d[k + j] = a[k + j] + b[k + j];
    for (; k < n; k++)
        d[k] = a[k] + b[k];
}

void pf_reduce_part(uint64_t n, int nparts, int k, uint64_t *off,
                    uint64_t *len)
{
    uint64_t blocks = (n + BLOCK - 1) / BLOCK, per, start, end;

    if (nparts < 1)
        nparts = 1;
    per = (blocks + (uint64_t)nparts - 1) / (uint64_t)nparts;
    start = (uint64_t)k * per * BLOCK;
    end = start + per * BLOCK;
    if (start > n)
        start = n;
    if (end > n)
        end = n;
    *off = start;
    *len = end - start;
}
