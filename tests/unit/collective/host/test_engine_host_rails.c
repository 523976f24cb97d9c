/* The host engine over several NICs: one tcp endpoint per loopback
 * address (127.0.0.x), ranks as forked processes (fork_boot.h). Every
 * result exact, every rail carrying its share, per-rail accounting for
 * the harness (engine op `rails`), rail counts agreed between ranks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/collective.h"
#include "collective/host/host.h"
#include "fork_boot.h"
#include "util/clock.h"

#define FORKED_RANKS 4                /* the processes this test forks */

struct rails_job {
    const char *addrs[FORKED_RANKS];     /* --fabric-addrs of each rank */
    int lanes[FORKED_RANKS];          /* --fabric-lanes, 0 = auto */
    uint64_t counts[3];               /* all_reduce sizes, elements */
    int ncounts;
    bool pair;                        /* also a pair exchange 0 <-> 1 */
    /* shared results */
    pf_err rc[FORKED_RANKS];
    long wrong[FORKED_RANKS];
    int nrails[FORKED_RANKS];
    struct pf_rail_use rails[FORKED_RANKS][PF_MAX_EFA];
    struct pf_rail_use pair_rails[FORKED_RANKS][PF_MAX_EFA];
};

static int rails_rank(struct pf_boot *b, void *arg)
{
    struct rails_job *j = arg;
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_engine e = { .ops = &pf_engine_host };
    char err[PF_ERRLEN] = "";
    int64_t deadline = pf_deadline_in(40000);
    uint64_t max = 0;
    long wrong = 0, total = 0;
    double secs;
    pf_err rc;

    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider), "tcp");
    run->cfg.fabric_addrs = strdup(j->addrs[b->rank]);
    run->cfg.fabric_lanes = j->lanes[b->rank];
    run->cfg.debug_corrupt_rank = run->cfg.debug_slow_rank = -1;
    for (int i = 0; i < j->ncounts; i++)
        max = j->counts[i] > max ? j->counts[i] : max;
    rc = pf_test_engine_open(&e, run, b, max, deadline, err);
    for (int i = 0; i < j->ncounts && rc == PF_OK; i++)
        for (int ip = 0; ip < 2 && rc == PF_OK; ip++) {
            rc = e.ops->fill(&e, j->counts[i], ip, err);
            if (rc == PF_OK)
                rc = e.ops->run(&e, j->counts[i], ip, 1, &secs, deadline, err);
            if (rc == PF_OK)
                rc = e.ops->check(&e, j->counts[i], ip, &wrong, err);
            total += wrong;
        }
    if (rc == PF_OK)
        j->nrails[b->rank] = e.ops->rails(&e, j->rails[b->rank], PF_MAX_EFA);
    if (rc == PF_OK && j->pair && b->rank < 2) {
        long pair_wrong = 0;
        rc = e.ops->pair(&e, 1 - b->rank, 0, max, 2, &secs, &pair_wrong,
                         deadline, err);
        if (rc == PF_OK && pair_wrong)
            rc = pf_fail(err, PF_ERR_DATA, "pair: %ld wrong", pair_wrong);
        if (rc == PF_OK)
            e.ops->rails(&e, j->pair_rails[b->rank], PF_MAX_EFA);
    }
    rc = pf_test_rank_done(b, rc, deadline, err);
    if (rc == PF_OK)
        e.ops->close(&e);
    j->rc[b->rank] = rc;
    j->wrong[b->rank] = total;
    free(run->cfg.fabric_addrs);
    free(run);
    return 0;
}

static struct rails_job *run_rails(int world, struct rails_job *proto)
{
    struct rails_job *j = pf_test_shared(sizeof(*j));
    int codes[FORKED_RANKS];

    *j = *proto;
    for (int r = 0; r < world; r++)
        j->rc[r] = PF_ERR_SYS;
    cr_assert_eq(pf_test_fork_ranks(world, rails_rank, j, 90, codes), 0);
    for (int r = 0; r < world; r++) {
        cr_assert_eq(j->rc[r], PF_OK, "rank %d rc %d", r, j->rc[r]);
        cr_assert_eq(j->wrong[r], 0, "rank %d: %ld wrong", r, j->wrong[r]);
    }
    return j;
}

static const char *const EIGHT = "127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4,"
                                 "127.0.0.5,127.0.0.6,127.0.0.7,127.0.0.8";

Test(host_rails, two_nics_exact_and_both_carry_their_share, .timeout = 120)
{
    /* many 1 MiB chunks, odd; then fewer chunks than rails; then 3 */
    uint64_t big = 9 * (PF_HOST_CHUNK_BYTES / 4) + 13;
    for (int n = 2; n <= 3; n++) {
        struct rails_job proto = { .counts = { big, 70001, 3 }, .ncounts = 3 };
        struct rails_job *j;

        for (int r = 0; r < n; r++)
            proto.addrs[r] = "127.0.0.1,127.0.0.2";
        j = run_rails(n, &proto);
        for (int r = 0; r < n; r++) {
            const struct pf_rail_use *u = j->rails[r];
            cr_assert_eq(j->nrails[r], 2, "n=%d rank %d", n, r);
            cr_assert_str_eq(u[0].nic, "127.0.0.1");
            cr_assert_str_eq(u[1].nic, "127.0.0.2");
            cr_assert_gt(u[0].bytes, 0);
            cr_assert_gt(u[1].seconds, 0);
            /* striped chunk by chunk: shares within one chunk's worth */
            cr_assert_lt((double)u[0].bytes / (double)u[1].bytes, 1.5,
                         "%llu vs %llu", (unsigned long long)u[0].bytes,
                         (unsigned long long)u[1].bytes);
            cr_assert_gt((double)u[0].bytes / (double)u[1].bytes, 0.67);
        }
    }
}

Test(host_rails, eight_nics_like_a_trn1_every_one_used, .timeout = 120)
{
    /* 2 MiB over 3 ranks: 2 one-MiB chunks per segment by size alone,
     * cut to 8 so every NIC gets one */
    struct rails_job proto = { .counts = { (2u << 20) / 4 + 5 }, .ncounts = 1 };
    struct rails_job *j;

    for (int r = 0; r < 3; r++)
        proto.addrs[r] = EIGHT;
    j = run_rails(3, &proto);
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(j->nrails[r], 8);
        for (int k = 0; k < 8; k++) {
            char want[16];
            snprintf(want, sizeof(want), "127.0.0.%d", k + 1);
            cr_assert_str_eq(j->rails[r][k].nic, want);
            cr_assert_gt(j->rails[r][k].bytes, 0, "rank %d rail %d idle", r, k);
        }
    }
}

Test(host_rails, ranks_agree_on_the_smallest_rail_count, .timeout = 60)
{
    struct rails_job proto = {
        .addrs = { "127.0.0.1,127.0.0.2", "127.0.0.1,127.0.0.2,127.0.0.3" },
        .counts = { 300001 }, .ncounts = 1,
    };
    struct rails_job *j = run_rails(2, &proto);

    cr_assert_eq(j->nrails[0], 2);
    cr_assert_eq(j->nrails[1], 2);
}

Test(host_rails, pair_exchange_is_striped_and_timed_per_rail, .timeout = 60)
{
    struct rails_job proto = { .counts = { 1u << 20 }, .ncounts = 1,
                               .pair = true };
    struct rails_job *j;

    for (int r = 0; r < 3; r++)
        proto.addrs[r] = "127.0.0.1,127.0.0.2";
    j = run_rails(3, &proto);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++) {
            uint64_t moved = j->pair_rails[r][k].bytes - j->rails[r][k].bytes;
            /* 2 timed exchanges of 4 MiB, half on each rail, both ways */
            cr_assert_eq(moved, 2ull * 2 * (2u << 20), "rank %d rail %d: %llu",
                         r, k, (unsigned long long)moved);
            cr_assert_gt(j->pair_rails[r][k].seconds, j->rails[r][k].seconds);
        }
}

/* Lanes: several endpoints (each with its thread) per address. Ranks agree
 * on the fewest lanes; results exact at sizes that leave lanes idle or cut
 * chunks unevenly; the engine reports NICs, not lanes, with every NIC's
 * bytes; the pair exchange runs over every lane too. */
Test(host_rails, lanes_agree_stay_exact_and_report_per_nic, .timeout = 120)
{
    struct rails_job proto = {
        .addrs = { "127.0.0.1,127.0.0.2", "127.0.0.1,127.0.0.2",
                   "127.0.0.1,127.0.0.2" },
        .lanes = { 3, 2, 3 },
        .counts = { 9 * (PF_HOST_CHUNK_BYTES / 4) + 13, 70001, 3 },
        .ncounts = 3, .pair = true,
    };
    struct rails_job *j = run_rails(3, &proto);

    for (int r = 0; r < 3; r++) {
        const struct pf_rail_use *u = j->rails[r];
        cr_assert_eq(j->nrails[r], 2, "rank %d: %d NICs", r, j->nrails[r]);
        cr_assert_str_eq(u[0].nic, "127.0.0.1");
        cr_assert_str_eq(u[1].nic, "127.0.0.2");
        cr_assert_gt(u[0].bytes, 0);
        cr_assert_gt(u[1].bytes, 0);
        cr_assert_lt((double)u[0].bytes / (double)u[1].bytes, 1.5);
        cr_assert_gt((double)u[0].bytes / (double)u[1].bytes, 0.67);
    }
    for (int r = 0; r < 2; r++)
        cr_assert_gt(j->pair_rails[r][1].bytes, j->rails[r][1].bytes,
                     "rank %d: the pair exchange left NIC 2 out", r);
}
