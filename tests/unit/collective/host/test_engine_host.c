/* The host engine over real libfabric providers (tcp on loopback, shm),
 * with ranks as forked processes joined by tests/fakes/fork_boot.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "collective/collective.h"
#include "collective/host/host.h"
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
    char (*eager)[24];                /* shared: FI_OFI_RXM_EAGER_LIMIT after
                                         open, one per rank */
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
    rc = pf_test_engine_open(&e, run, b, j->count, deadline, err);
    if (rc == PF_OK && b->rank == j->quit_rank)
        _exit(0);                     /* vanish without closing anything */
    snprintf(j->eager[b->rank], sizeof(j->eager[0]), "%s",
             getenv("FI_OFI_RXM_EAGER_LIMIT") ? getenv("FI_OFI_RXM_EAGER_LIMIT")
                                              : "unset");
    for (int ip = 0; ip < 2 && rc == PF_OK; ip++) {
        rc = e.ops->fill(&e, j->count, ip, err);
        if (rc == PF_OK)
            rc = e.ops->run(&e, j->count, ip, 1, &secs, deadline, err);
        if (rc == PF_OK)
            rc = e.ops->check(&e, j->count, ip, &wrong, err);
        total += wrong;
    }
    rc = pf_test_rank_done(b, rc, deadline, err);
    if (rc == PF_OK)
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
    j->eager = pf_test_shared(sizeof(j->eager[0]) * 16);
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

/* Ring chunks go eager over rxm (one trip, not a rendezvous' three); a
 * limit the user set stays, and the ring stays exact either way. */
Test(engine_host, tcp_sends_ring_chunks_eagerly_unless_the_user_says,
     .timeout = 120)
{
    char chunk[24];
    const struct {
        const char *provider, *user, *want;
        int ranks;
    } cases[] = {
        { "tcp", NULL, chunk, 3 },
        { "tcp", "65536", "65536", 3 },   /* larger chunks: rendezvous */
        { "shm", NULL, "unset", 2 },      /* not rxm: left alone */
    };

    snprintf(chunk, sizeof(chunk), "%u", PF_HOST_CHUNK_BYTES);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct job j = { .provider = cases[i].provider,
                         .count = 3 * (PF_HOST_CHUNK_BYTES / 4) + 5,
                         .corrupt_rank = -1, .quit_rank = -1 };
        if (cases[i].user)
            setenv("FI_OFI_RXM_EAGER_LIMIT", cases[i].user, 1);
        else
            unsetenv("FI_OFI_RXM_EAGER_LIMIT");
        run_job(&j, cases[i].ranks);
        for (int r = 0; r < cases[i].ranks; r++) {
            cr_assert_eq(j.rc[r], PF_OK, "case %zu rank %d rc %d", i, r,
                         j.rc[r]);
            cr_assert_eq(j.wrong[r], 0, "case %zu rank %d", i, r);
            cr_assert_str_eq(j.eager[r], cases[i].want, "case %zu rank %d", i,
                             r);
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

/* A fabric that accepts connections but never answers (what a security
 * group without the self rule looks like) while the bootstrap works: rank
 * 1 publishes the address of a socket that listens and never reads, as
 * host_ep.c exchanges them: NIC and lane counts, then each rail's name as
 * a 2-byte length and the name, padded to the longest. */
struct silent {
    pf_err rc;
    char msg[PF_ERRLEN];
    int64_t ms;
};

static int silent_rank(struct pf_boot *b, void *arg)
{
    struct silent *out = arg;
    struct { int32_t nics, lanes, addrlen; } count = { 1, 1, 16 }, counts[2];
    uint8_t blob[2 + PF_HOST_ADDR_MAX], all[2][2 + PF_HOST_ADDR_MAX];
    char err[PF_ERRLEN] = "";

    memset(blob, 0, sizeof(blob));
    if (b->rank == 1) {
        struct sockaddr_in sa = { .sin_family = AF_INET };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        size_t stride;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8) ||
            getsockname(fd, (struct sockaddr *)&sa, &len))
            return 3;
        if (pf_boot_allgather(b, &count, sizeof(count), counts,
                              pf_deadline_in(10000), err) != PF_OK)
            return 4;
        stride = 2 + (size_t)(counts[0].addrlen > 16 ? counts[0].addrlen : 16);
        blob[1] = sizeof(sa);
        memcpy(blob + 2, &sa, sizeof(sa));
        if (pf_boot_allgather(b, blob, stride, all, pf_deadline_in(10000),
                              err) != PF_OK)
            return 4;
        /* stay until rank 0 has given up */
        return pf_boot_barrier(b, pf_deadline_in(20000), err) == PF_OK ? 0 : 5;
    }
    struct pf_run *run = new_run("tcp");
    struct pf_engine e = { .ops = &pf_engine_host };
    int64_t t0 = pf_now_ms();
    out->rc = pf_test_engine_open(&e, run, b, 1024, pf_deadline_in(2000),
                                  out->msg);
    out->ms = pf_now_ms() - t0;
    if (out->rc == PF_OK)
        e.ops->close(&e);
    pf_boot_barrier(b, pf_deadline_in(10000), err);
    return 0;
}

Test(engine_host, silent_fabric_times_out_with_security_group_hint,
     .timeout = 60)
{
    struct silent *out = pf_test_shared(sizeof(*out));
    int codes[2];

    cr_assert_eq(pf_test_fork_ranks(2, silent_rank, out, 40, codes), 0,
                 "codes %d %d", codes[0], codes[1]);
    cr_assert_eq(out->rc, PF_ERR_TIMEOUT, "rc %d: %s", out->rc, out->msg);
    cr_assert(strstr(out->msg, "fabric handshake over tcp;ofi_rxm timed out"),
              "%s", out->msg);
    cr_assert(strstr(out->msg, "from rank 1"), "%s", out->msg);
    cr_assert(strstr(out->msg, "security group"), "%s", out->msg);
    cr_assert_geq(out->ms, 1900);
    cr_assert_lt(out->ms, 4000);
}

/* --debug-slow-rank: the slow rank sleeps debug_slow_ms before each of the
 * 2(n-1) ring steps, and the ring makes every rank wait for it. */
struct slow {
    double secs[3];
    pf_err rc[3];
    int slow_rank;
};

static int slow_rank_fn(struct pf_boot *b, void *arg)
{
    struct slow *out = arg;
    struct pf_run *run = new_run("tcp");
    struct pf_engine e = { .ops = &pf_engine_host };
    char err[PF_ERRLEN] = "";
    int64_t deadline = pf_deadline_in(30000);
    pf_err rc;

    run->cfg.debug_slow_rank = out->slow_rank;
    run->cfg.debug_slow_ms = 250;
    rc = pf_test_engine_open(&e, run, b, 4096, deadline, err);
    if (rc == PF_OK)
        rc = e.ops->fill(&e, 4096, false, err);
    if (rc == PF_OK)
        rc = e.ops->run(&e, 4096, false, 2, &out->secs[b->rank], deadline,
                        err);
    rc = pf_test_rank_done(b, rc, deadline, err);
    if (rc == PF_OK)
        e.ops->close(&e);
    out->rc[b->rank] = rc;
    free(run);
    return 0;
}

Test(engine_host, slow_rank_delays_every_rank, .timeout = 60)
{
    struct slow *out = pf_test_shared(sizeof(*out));
    int codes[3];

    /* 3 ranks: 4 steps x 250 ms x 2 all_reduces = 2 s of sleep, far above
     * what two healthy 16 KiB all_reduces take on a busy machine (0.5 s
     * seen with three test suites on 2 cores) */
    out->slow_rank = 2;
    cr_assert_eq(pf_test_fork_ranks(3, slow_rank_fn, out, 40, codes), 0);
    /* the slow rank sleeps 2 s itself; the others wait for most of it
     * (their clocks start a little later than its first sleep) */
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(out->rc[r], PF_OK);
        cr_assert_geq(out->secs[r], r == 2 ? 1.95 : 1.5,
                      "rank %d took %.3f s", r, out->secs[r]);
    }
    out->slow_rank = -1;
    cr_assert_eq(pf_test_fork_ranks(3, slow_rank_fn, out, 40, codes), 0);
    for (int r = 0; r < 3; r++)
        cr_assert_lt(out->secs[r], 1.5, "rank %d took %.3f s", r,
                     out->secs[r]);
}
