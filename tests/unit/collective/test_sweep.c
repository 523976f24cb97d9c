/* The sweep's arithmetic, the ring schedule and the data pattern, then one
 * real sweep over the host engine (tcp, loopback, forked ranks). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/collective.h"
#include "collective/host/ring.h"
#include "collective/sweep.h"
#include "fork_boot.h"
#include "util/clock.h"

Test(sweep, busbw_factor_is_2n_minus_1_over_n)
{
    cr_assert_float_eq(pf_busbw_factor(1), 0.0, 1e-12);
    cr_assert_float_eq(pf_busbw_factor(2), 1.0, 1e-12);
    cr_assert_float_eq(pf_busbw_factor(4), 1.5, 1e-12);
    cr_assert_float_eq(pf_busbw_factor(8), 1.75, 1e-12);
    cr_assert_float_eq(pf_busbw_factor(16), 1.875, 1e-12);
}

Test(sweep, sizes_multiply_by_factor_up_to_max)
{
    uint64_t s[PF_MAX_ROWS];
    char err[PF_ERRLEN];
    int n;

    cr_assert_eq(pf_sweep_sizes(8, 128, 2, s, PF_MAX_ROWS, &n, err), PF_OK);
    cr_assert_eq(n, 5);
    cr_assert_eq(s[0], 8);
    cr_assert_eq(s[4], 128);
    /* max not on the grid: stop below it; sizes round to whole floats */
    cr_assert_eq(pf_sweep_sizes(6, 100, 3, s, PF_MAX_ROWS, &n, err), PF_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(s[0], 4);             /* 6 -> 4 */
    cr_assert_eq(s[1], 16);            /* 18 -> 16 */
    cr_assert_eq(s[2], 52);            /* 54 -> 52 */
    cr_assert_eq(pf_sweep_sizes(1 << 20, 1 << 20, 1, s, PF_MAX_ROWS, &n, err),
                 PF_OK);
    cr_assert_eq(n, 1);
    /* nccl-tests' default range 8 B .. 64 MiB: 24 sizes */
    cr_assert_eq(pf_sweep_sizes(8, 64ull << 20, 2, s, PF_MAX_ROWS, &n, err),
                 PF_OK);
    cr_assert_eq(n, 24);
    cr_assert_eq(s[23], 64ull << 20);
}

Test(sweep, sizes_reject_bad_input)
{
    uint64_t s[PF_MAX_ROWS];
    char err[PF_ERRLEN];
    int n;

    cr_assert_eq(pf_sweep_sizes(2, 64, 2, s, PF_MAX_ROWS, &n, err),
                 PF_ERR_USAGE);
    cr_assert_eq(pf_sweep_sizes(128, 64, 2, s, PF_MAX_ROWS, &n, err),
                 PF_ERR_USAGE);
    cr_assert(strstr(err, "max_bytes 64"), "%s", err);
    cr_assert_eq(pf_sweep_sizes(8, 64, 1, s, PF_MAX_ROWS, &n, err),
                 PF_ERR_USAGE);
    cr_assert_eq(pf_sweep_sizes(4, 1ull << 60, 2, s, PF_MAX_ROWS, &n, err),
                 PF_ERR_USAGE);
    cr_assert(strstr(err, "more than 48 sizes"), "%s", err);
}

Test(sweep, row_bandwidths_follow_nccl_tests)
{
    struct pf_row r;

    /* 1 GB in 0.5 s over 4 ranks: algbw 2 GB/s, busbw 3 GB/s */
    pf_sweep_fill_row(&r, 1000000000ull, 4, 0.5, 0.25, 3, 0);
    cr_assert_eq(r.count, 250000000ull);
    cr_assert_float_eq(r.oop_us, 500000.0, 1e-6);
    cr_assert_float_eq(r.oop_algbw, 2.0, 1e-12);
    cr_assert_float_eq(r.oop_busbw, 3.0, 1e-12);
    cr_assert_float_eq(r.ip_algbw, 4.0, 1e-12);
    cr_assert_float_eq(r.ip_busbw, 6.0, 1e-12);
    cr_assert_eq(r.oop_wrong, 3);
    cr_assert_eq(r.ip_wrong, 0);
}

Test(sweep, summary_is_mean_of_all_busbw_and_best_of_largest)
{
    struct pf_coll c;

    memset(&c, 0, sizeof(c));
    c.nrows = 2;
    pf_sweep_fill_row(&c.rows[0], 1000, 2, 1e-6, 1e-6, 0, 1); /* 1, 1 */
    pf_sweep_fill_row(&c.rows[1], 2000, 2, 1e-6, 2e-6, 2, 0); /* 2, 1 */
    pf_sweep_summarize(&c);
    cr_assert_float_eq(c.avg_busbw, 1.25, 1e-9);
    cr_assert_float_eq(c.peak_busbw, 2.0, 1e-9);
    cr_assert_eq(c.wrong_total, 3);
}

/* Segments and chunks tile [0, count) exactly, with no gap or overlap. */
Test(ring, segments_and_chunks_tile_the_buffer)
{
    const uint64_t counts[] = { 1, 3, 7, 8, 1000, 1001, 65537, 1000003 };
    for (int n = 2; n <= 8; n++) {
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            uint64_t count = counts[k], next = 0;
            uint64_t nch = pf_ring_nchunks(count, n, 1000);
            for (int s = 0; s < n; s++) {
                uint64_t off, len, pos = 0;
                pf_ring_segment(count, n, s, &off, &len);
                cr_assert_eq(off, next, "n=%d count=%lu seg %d", n,
                             (unsigned long)count, s);
                cr_assert(len == count / n || len == count / n + 1);
                for (uint64_t c = 0; c < nch; c++) {
                    uint64_t coff, clen;
                    pf_ring_chunk(len, nch, c, &coff, &clen);
                    cr_assert_eq(coff, pos);
                    cr_assert_leq(clen, 1000);
                    pos += clen;
                }
                cr_assert_eq(pos, len);
                next = off + len;
            }
            cr_assert_eq(next, count);
        }
    }
}

Test(ring, schedule_hands_each_step_to_the_next)
{
    for (int n = 2; n <= 8; n++) {
        for (int r = 0; r < n; r++) {
            /* what rank r receives at t is what it sends at t+1 */
            for (int t = 0; t + 1 < pf_ring_steps(n); t++)
                cr_assert_eq(pf_ring_recv_seg(r, n, t),
                             pf_ring_send_seg(r, n, t + 1));
            /* and its left neighbour sends exactly that at t */
            for (int t = 0; t < pf_ring_steps(n); t++)
                cr_assert_eq(pf_ring_send_seg((r + n - 1) % n, n, t),
                             pf_ring_recv_seg(r, n, t));
        }
    }
}

/* Run the schedule on n in-memory ranks (the engine's arithmetic without
 * the fabric) and compare with pf_expected, element by element. */
static void simulate(int n, uint64_t count, uint64_t chunk_elems)
{
    float **buf = calloc((size_t)n, sizeof(float *));
    float **msg = calloc((size_t)n, sizeof(float *));
    uint64_t nch = pf_ring_nchunks(count, n, chunk_elems);

    for (int r = 0; r < n; r++) {
        buf[r] = malloc(count * sizeof(float));
        msg[r] = malloc((count / n + 1) * sizeof(float));
        for (uint64_t i = 0; i < count; i++)
            buf[r][i] = pf_pattern(r, i);
    }
    for (int t = 0; t < pf_ring_steps(n); t++) {
        for (uint64_t c = 0; c < nch; c++) {
            for (int r = 0; r < n; r++) {          /* r sends to r+1 */
                uint64_t off, len, coff, clen;
                pf_ring_segment(count, n, pf_ring_send_seg(r, n, t), &off,
                                &len);
                pf_ring_chunk(len, nch, c, &coff, &clen);
                memcpy(msg[(r + 1) % n], buf[r] + off + coff,
                       clen * sizeof(float));
            }
            for (int r = 0; r < n; r++) {
                uint64_t off, len, coff, clen;
                pf_ring_segment(count, n, pf_ring_recv_seg(r, n, t), &off,
                                &len);
                pf_ring_chunk(len, nch, c, &coff, &clen);
                for (uint64_t k = 0; k < clen; k++) {
                    float *d = &buf[r][off + coff + k];
                    *d = pf_ring_is_reduce(n, t) ? *d + msg[r][k] : msg[r][k];
                }
            }
        }
    }
    for (int r = 0; r < n; r++) {
        for (uint64_t i = 0; i < count; i++)
            cr_assert_eq(buf[r][i], pf_expected(n, i),
                         "n=%d count=%lu rank %d element %lu", n,
                         (unsigned long)count, r, (unsigned long)i);
        free(buf[r]);
        free(msg[r]);
    }
    free(buf);
    free(msg);
}

Test(ring, schedule_computes_the_sum_for_2_to_8_ranks)
{
    const uint64_t counts[] = { 1, 5, 31, 97, 1000, 4099 };
    for (int n = 2; n <= 8; n++)
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            simulate(n, counts[k], 64);
            simulate(n, counts[k], 7);
        }
}

Test(pattern, expected_is_the_exact_float_sum)
{
    for (int n = 1; n <= 64; n *= 2)
        for (uint64_t i = 0; i < 200; i++) {
            float sum = 0;
            for (int r = 0; r < n; r++)
                sum += pf_pattern(r, i);
            cr_assert_eq(sum, pf_expected(n, i));
        }
    /* the engines rely on the period of 31 */
    for (uint64_t i = 0; i < 100; i++)
        cr_assert_eq(pf_pattern(5, i), pf_pattern(5, i + 31));
    /* ranks differ, so a rank's data cannot stand in for another's */
    cr_assert_neq(pf_pattern(0, 0), pf_pattern(1, 0));
}

/* ------------------------------------------------- a real sweep, 3 ranks */

struct sweep_out {
    pf_err rc;
    int nrows;
    long wrong_total;
    uint64_t last_bytes;
    double peak, rank_seconds[3];
    bool all_positive;
};

static int sweep_rank(struct pf_boot *b, void *arg)
{
    struct sweep_out *out = (struct sweep_out *)arg + b->rank;
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_engine e = { .ops = &pf_engine_host };
    char err[PF_ERRLEN] = "";
    int64_t deadline = pf_deadline_in(60000);

    snprintf(run->cfg.fabric_provider, 32, "tcp");
    snprintf(run->cfg.bind_addr, sizeof(run->cfg.bind_addr), "127.0.0.1");
    run->cfg.debug_corrupt_rank = run->cfg.debug_slow_rank = -1;
    run->cfg.min_bytes = 4;
    run->cfg.max_bytes = 4 << 20;
    run->cfg.step_factor = 8;
    run->cfg.iters = 3;
    run->cfg.warmup = 1;
    run->cfg.check = true;
    out->rc = pf_sweep_plan(&run->cfg, NULL, &run->coll.sweep, err);
    if (out->rc == PF_OK)
        out->rc = pf_test_engine_open(&e, run, b, run->cfg.max_bytes / 4,
                                      deadline, err);
    if (out->rc == PF_OK) {
        out->rc = pf_sweep(run, &e, b, deadline, err);
        e.ops->close(&e);
    }
    out->nrows = run->coll.nrows;
    out->wrong_total = run->coll.wrong_total;
    out->last_bytes = run->coll.nrows ? run->coll.rows[run->coll.nrows - 1].bytes
                                      : 0;
    out->peak = run->coll.peak_busbw;
    out->all_positive = true;
    for (int i = 0; i < run->coll.nrows; i++)
        out->all_positive &= run->coll.rows[i].oop_busbw > 0 &&
                             run->coll.rows[i].ip_busbw > 0;
    if (run->coll.rank_seconds && run->coll.nrank_seconds == 3)
        memcpy(out->rank_seconds, run->coll.rank_seconds, sizeof(double) * 3);
    if (out->rc != PF_OK)
        fprintf(stderr, "rank %d: %s\n", b->rank, err);
    pf_coll_free(&run->coll);
    free(run);
    return 0;
}

Test(sweep, host_engine_sweep_over_tcp_three_ranks, .timeout = 120)
{
    struct sweep_out *out = pf_test_shared(sizeof(*out) * 3);
    int codes[3];

    cr_assert_eq(pf_test_fork_ranks(3, sweep_rank, out, 90, codes), 0);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(out[r].rc, PF_OK, "rank %d rc %d", r, out[r].rc);
        /* 4, 32, 256, 2 KiB, 16 KiB, 128 KiB, 1 MiB (8 MiB > max) */
        cr_assert_eq(out[r].nrows, 7);
        cr_assert_eq(out[r].last_bytes, 1ull << 20);
        cr_assert_eq(out[r].wrong_total, 0);
        cr_assert(out[r].all_positive);
        cr_assert_gt(out[r].peak, 0);
        for (int k = 0; k < 3; k++)
            cr_assert_gt(out[r].rank_seconds[k], 0);
        /* every rank reports the same agreed numbers */
        cr_assert_eq(out[r].peak, out[0].peak);
    }
}
