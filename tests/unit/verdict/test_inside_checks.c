/* Inside one node (verdict/inside_checks.c): the node fails as a whole, and
 * the message names the rank at fault with its GPU and bus id, or its NIC,
 * from the re-test between processes or the GPU pairs of one process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/collective.h"
#include "collective/sweep.h"
#include "verdict/verdict.h"

#include "run_fixture.h"

/* One node, n ranks; gpus: one process driving n GPUs (bus 0000:1X:00.0),
 * else n host processes with a NIC each; wrong: elements wrong. */
static struct pf_run *one_node(int n, bool gpus, long wrong)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;

    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "%s", gpus ? "nccl" : "host");
    c->engine_kind = gpus ? PF_ENGINE_NCCL : PF_ENGINE_HOST;
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "tcp");
    c->fabric.provider_is_fallback = true;
    c->nranks = n;
    c->nnodes = 1;
    c->nrows = 1;
    pf_sweep_fill_row(&c->rows[0], 1 << 20, n, 0.01, 0.01, wrong, 0);
    pf_sweep_summarize(c);
    c->inside.nids = n;
    c->inside.ids = calloc((size_t)n, sizeof(*c->inside.ids));
    for (int r = 0; r < n; r++) {
        struct pf_rank_id *id = &c->inside.ids[r];
        id->rank = r;
        id->proc = gpus ? 0 : r;
        id->gpu = gpus ? r : -1;
        if (gpus)
            snprintf(id->bus, sizeof(id->bus), "0000:%02x:00.0", 0x18 + r);
        else
            snprintf(id->nic, sizeof(id->nic), "rdmap%ds0", 16 + r);
    }
    return run;
}

/* The GPU pairs inside the process (method NULL: none named) or the
 * pairwise re-test between processes (retest) name rank, for kind. */
static void culprit(struct pf_run *run, bool retest, const char *method,
                    const char *kind, int rank)
{
    struct pf_inside *in = &run->coll.inside;
    struct pf_straggler *s = &run->coll.strag;
    int *list = calloc(1, sizeof(int));

    cr_assert_not_null(list);
    list[0] = rank;
    if (retest) {
        snprintf(s->method, sizeof(s->method), "%s", method);
        snprintf(s->kind, sizeof(s->kind), "%s", kind);
        s->nculprits = 1;
        s->culprits = list;
    } else {
        snprintf(in->method, sizeof(in->method), "%s", method ? method : "");
        snprintf(in->kind, sizeof(in->kind), "%s", kind);
        in->nculprits = 1;
        in->culprits = list;
    }
}

/* The fabric judged as the run would. */
static void judge(struct pf_run *run)
{
    pf_test_judged(run);
    pf_verdict_fabric(run);
}

static void done(struct pf_run *run)
{
    pf_coll_free(&run->coll);
    free(run);
}

Test(inside_checks, a_corrupting_gpu_among_8_is_named_by_index_and_bus_id)
{
    struct pf_run *run = one_node(8, true, 12);
    struct pf_inside *in = &run->coll.inside;
    const struct pf_check *k;

    culprit(run, false, "gpu-pairs", "data", 5);
    snprintf(in->note, sizeof(in->note), "pairwise: rank 5 has both links "
             "carry wrong data");
    judge(run);
    pf_verdict_finish(run);
    k = pf_test_check_says(run, "data", PF_R_DataCorruption,
                           "this node corrupts data at rank 5 (GPU 5, "
                           "bus 0000:1d:00.0)");
    cr_assert_eq(k->status, PF_FAIL);
    cr_assert_eq(run->verdict.exit_code, 1);
    done(run);
}

Test(inside_checks, a_corrupting_process_is_named_with_its_nic)
{
    struct pf_run *run = one_node(4, false, 40);

    culprit(run, true, "pairwise", "data", 2);
    judge(run);
    pf_test_check_says(run, "data", PF_R_DataCorruption,
                       "at rank 2 (NIC rdmap18s0)");
    done(run);
}

Test(inside_checks, a_slow_gpu_below_the_floor_is_named)
{
    struct pf_run *run = one_node(8, true, 0);

    run->cfg.min_busbw_gbps = 1e6;    /* every ring is below it */
    culprit(run, false, NULL, "slow", 6);
    judge(run);
    pf_test_check_says(run, "busbw", PF_R_NodeBandwidthBelowThreshold,
                       "this node is slow at rank 6 (GPU 6, bus "
                       "0000:1e:00.0)");
    done(run);
}

Test(inside_checks, nobody_singled_out_keeps_the_node_wide_words)
{
    struct pf_run *run = one_node(8, true, 12);

    snprintf(run->coll.inside.kind, sizeof(run->coll.inside.kind), "data");
    judge(run);
    pf_test_check_says(run, "data", PF_R_DataCorruption,
                       "every rank of the run");
    done(run);
}

Test(inside_checks, a_process_is_described_by_all_its_gpus)
{
    struct pf_run *run = one_node(3, true, 0);
    char buf[256];

    cr_assert_str_eq(pf_inside_proc(run, 0, buf, sizeof(buf)),
                     "GPU 0, bus 0000:18:00.0; GPU 1, bus 0000:19:00.0; "
                     "GPU 2, bus 0000:1a:00.0");
    cr_assert_str_eq(pf_inside_proc(run, 1, buf, sizeof(buf)), "");
    done(run);
}

Test(inside_checks, each_culprit_process_is_named_for_its_own_kind)
{
    /* the re-test between 4 processes: rank 1 slow, rank 3 corrupting */
    struct pf_run *run = one_node(4, false, 40);
    struct pf_straggler *s = &run->coll.strag;
    struct pf_inside *in = &run->coll.inside;
    char words[256];
    int who[4];

    snprintf(s->method, sizeof(s->method), "pairwise");
    snprintf(s->kind, sizeof(s->kind), "slow+data");
    s->nculprits = 2;
    s->culprits = calloc(2, sizeof(int));
    s->culprit_bad = calloc(2, sizeof(unsigned));
    s->culprits[0] = 1;
    s->culprit_bad[0] = PF_LINK_SLOW;
    s->culprits[1] = 3;
    s->culprit_bad[1] = PF_LINK_DATA;
    snprintf(in->method, sizeof(in->method), "pairwise");
    snprintf(in->kind, sizeof(in->kind), "slow+data");
    in->nculprits = 2;
    in->culprits = calloc(2, sizeof(int));
    in->culprits[0] = 1;
    in->culprits[1] = 3;
    cr_assert_eq(pf_inside_culprits(run, PF_LINK_DATA, who, 4), 1);
    cr_assert_eq(who[0], 3);
    cr_assert_eq(pf_inside_culprits(run, PF_LINK_SLOW, who, 4), 1);
    cr_assert_eq(who[0], 1);
    cr_assert_eq(pf_inside_words(run, PF_LINK_SLOW, words, sizeof(words)), 1);
    cr_assert_str_eq(words, "rank 1 (NIC rdmap17s0)");
    judge(run);
    pf_test_check_says(run, "data", PF_R_DataCorruption,
                       "corrupts data at rank 3 (NIC rdmap19s0): ");
    done(run);
}

Test(inside_checks, two_ranks_say_why_nobody_inside_is_named)
{
    struct pf_run *run = one_node(2, false, 8);
    struct pf_straggler *s = &run->coll.strag;
    const struct pf_check *k;

    snprintf(s->method, sizeof(s->method), "timings");
    snprintf(s->note, sizeof(s->note), "2 ranks share one link: a pairwise "
             "test cannot tell which end is at fault");
    judge(run);
    k = pf_test_check(run, "data");
    cr_assert(k);
    cr_assert(strstr(k->message, "every rank of the run"), "%s", k->message);
    cr_assert(strstr(k->message, "cannot tell which end is at fault"), "%s",
              k->message);
    done(run);
}
