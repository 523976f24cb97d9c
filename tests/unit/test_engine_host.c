/* The host engine over real libfabric providers (tcp on loopback, shm),
 * with ranks as forked processes joined by tests/unit/fork_boot.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collective/collective.h"
#include "collective/host.h"
#include "fork_boot.h"
#include "util/clock.h"

struct job {
    const char *provider;
    uint64_t count;                   /* elements per all_reduce */
    int corrupt_rank;
    long *wrong;                      /* shared: one per rank */
    pf_err *rc;                       /* shared: one per rank */
    int quit_rank;                    /* leaves right after open, -1 none */
    int deadline_ms;
};

static struct pf_run *new_run(const char *provider)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider), "%s",
             provider);
    snprintf(run->cfg.bind_addr, sizeof(run->cfg.bind_addr), "127.0.0.1");
    run->cfg.debug_corrupt_rank = -1;
    run->cfg.debug_slow_rank = -1;
    return run;
}

/* open, then out-of-place and in-place all_reduce + exact check. */
static int one_rank(struct pf_boot *b, void *arg)
{
    struct job *j = arg;
    struct pf_run *run = new_run(j->provider);
    struct pf_engine e = { .ops = &pf_engine_host };
    char err[PF_ERRLEN] = "";
    int64_t deadline = pf_deadline_in(j->deadline_ms);
    long wrong = 0, total = 0;
    double secs;
    pf_err rc;

    run->cfg.debug_corrupt_rank = j->corrupt_rank;
    rc = e.ops->open(&e, run, b, j->count, deadline, err);
    if (rc == PF_OK && b->rank == j->quit_rank)
        _exit(0);                     /* vanish without closing anything */
    for (int ip = 0; ip < 2 && rc == PF_OK; ip++) {
        rc = e.ops->fill(&e, j->count, ip, err);
        if (rc == PF_OK)
            rc = e.ops->run(&e, j->count, ip, 1, &secs, deadline, err);
        if (rc == PF_OK)
            rc = e.ops->check(&e, j->count, ip, &wrong, err);
        total += wrong;
    }
    if (rc != PF_OK)
        fprintf(stderr, "rank %d: %s\n", b->rank, err);
    else
        e.ops->close(&e);
    j->wrong[b->rank] = total;
    j->rc[b->rank] = rc;
    free(run);
    return 0;
}

static void run_job(struct job *j, int world)
{
    int codes[16];
    j->wrong = pf_test_shared(sizeof(long) * 16);
    j->rc = pf_test_shared(sizeof(pf_err) * 16);
    if (!j->deadline_ms)
        j->deadline_ms = 30000;
    for (int r = 0; r < world; r++) {
        j->wrong[r] = -1;
        j->rc[r] = PF_ERR_SYS;
    }
    cr_assert_eq(pf_test_fork_ranks(world, one_rank, j, 60, codes), 0);
}

Test(engine_host, tcp_ring_exact_for_2_to_4_ranks, .timeout = 120)
{
    /* Several chunks per segment, more chunks than columns in flight, a
     * count divisible by none of 2, 3, 4 (odd, not a multiple of 3). */
    uint64_t count = 5 * (PF_HOST_CHUNK_BYTES / 4) * PF_HOST_DEPTH / 2 + 7;
    for (int n = 2; n <= 4; n++) {
        struct job j = { .provider = "tcp", .count = count,
                         .corrupt_rank = -1, .quit_rank = -1 };
        run_job(&j, n);
        for (int r = 0; r < n; r++) {
            cr_assert_eq(j.rc[r], PF_OK, "n=%d rank %d rc %d", n, r, j.rc[r]);
            cr_assert_eq(j.wrong[r], 0, "n=%d rank %d wrong %ld", n, r,
                         j.wrong[r]);
        }
    }
}

Test(engine_host, fewer_elements_than_ranks, .timeout = 60)
{
    struct job j = { .provider = "tcp", .count = 3, .corrupt_rank = -1,
                     .quit_rank = -1 };
    run_job(&j, 4);
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(j.rc[r], PF_OK);
        cr_assert_eq(j.wrong[r], 0);
    }
}

Test(engine_host, corrupt_rank_is_seen_by_every_rank, .timeout = 60)
{
    /* 10000 elements, one in 1024 flipped on rank 1: elements 0, 1024,
     * ..., 9216 = 10 wrong per check, out-of-place + in-place = 20. */
    struct job j = { .provider = "tcp", .count = 10000, .corrupt_rank = 1,
                     .quit_rank = -1 };
    run_job(&j, 3);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(j.rc[r], PF_OK);
        cr_assert_eq(j.wrong[r], 20, "rank %d wrong %ld", r, j.wrong[r]);
    }
}

Test(engine_host, shm_provider, .timeout = 60)
{
    struct job j = { .provider = "shm", .count = 1000003, .corrupt_rank = -1,
                     .quit_rank = -1 };
    run_job(&j, 2);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(j.rc[r], PF_OK);
        cr_assert_eq(j.wrong[r], 0);
    }
}

Test(engine_host, single_rank_loopback, .timeout = 60)
{
    struct job j = { .provider = "tcp", .count = 4096, .corrupt_rank = -1,
                     .quit_rank = -1 };
    run_job(&j, 1);
    cr_assert_eq(j.rc[0], PF_OK);
    cr_assert_eq(j.wrong[0], 0);
}

Test(engine_host, vanished_peer_is_peer_lost_not_a_hang, .timeout = 60)
{
    struct job j = { .provider = "tcp", .count = 1 << 20, .corrupt_rank = -1,
                     .quit_rank = 1, .deadline_ms = 20000 };
    int64_t t0 = pf_now_ms();
    run_job(&j, 2);
    cr_assert_eq(j.rc[0], PF_ERR_LOST, "rc %d", j.rc[0]);
    cr_assert_lt(pf_now_ms() - t0, 15000);
}

Test(engine_host, unknown_provider_is_unsupported, .timeout = 30)
{
    struct job j = { .provider = "nosuchprov", .count = 16,
                     .corrupt_rank = -1, .quit_rank = -1 };
    run_job(&j, 1);
    cr_assert_eq(j.rc[0], PF_ERR_UNSUPPORTED);
}
