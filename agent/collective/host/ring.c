#include "ring.h"

static int mod(int a, int n) { return ((a % n) + n) % n; }

int pf_ring_send_seg(int rank, int n, int t)
{
    if (pf_ring_is_reduce(n, t))
        return mod(rank - t, n);
    return mod(rank + 1 - (t - (n - 1)), n);
}

int pf_ring_recv_seg(int rank, int n, int t)
{
    if (pf_ring_is_reduce(n, t))
        return mod(rank - t - 1, n);
    return mod(rank - (t - (n - 1)), n);
}

void pf_ring_segment(uint64_t count, int n, int s, uint64_t *off,
                     uint64_t *len)
{
    uint64_t base = count / (uint64_t)n, extra = count % (uint64_t)n;
    uint64_t us = (uint64_t)s;

    *off = us * base + (us < extra ? us : extra);
    *len = base + (us < extra ? 1 : 0);
}

uint64_t pf_ring_nchunks(uint64_t count, int n, uint64_t chunk_elems)
{
    uint64_t longest = (count + (uint64_t)n - 1) / (uint64_t)n;

    if (chunk_elems == 0)
        chunk_elems = 1;
    if (longest == 0)
        return 1;
    return (longest + chunk_elems - 1) / chunk_elems;
}

void pf_ring_chunk(uint64_t seg_len, uint64_t nchunks, uint64_t c,
                   uint64_t *off, uint64_t *len)
{
    uint64_t base = seg_len / nchunks, extra = seg_len % nchunks;

    *off = c * base + (c < extra ? c : extra);
    *len = base + (c < extra ? 1 : 0);
}
