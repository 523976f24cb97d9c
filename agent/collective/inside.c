/* Inside one node (inside.h): who each rank is, and the pairwise test of
 * one process's GPUs. */
#include "inside.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blame.h"
#include "straggler.h"
#include "../util/clock.h"
#include "../util/log.h"

/* What one process says about its ranks, gathered from every process. */
struct ids_block {
    int32_t n;
    struct pf_rank_id ids[PF_MAX_GPUS];
};

static pf_err gather_ids(struct pf_coll *c, struct pf_engine *e,
                         struct pf_boot *b, struct ids_block *mine,
                         int64_t deadline, char *err)
{
    struct pf_inside *in = &c->inside;
    struct ids_block *all;
    int n = c->nranks > 0 ? c->nranks : b->world;
    pf_err rc;

    memset(mine, 0, sizeof(*mine));
    if (e->ops->describe)
        mine->n = e->ops->describe(e, mine->ids, PF_MAX_GPUS);
    all = calloc((size_t)b->world, sizeof(*all));
    in->ids = calloc((size_t)n, sizeof(*in->ids));
    if (!all || !in->ids) {
        free(all);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for %d ranks' "
                       "identities", n);
    }
    rc = pf_boot_allgather(b, mine, sizeof(*mine), all, deadline, err);
    if (rc != PF_OK) {
        free(all);
        pf_err_prefix(err, "inside one node: who each rank is");
        return rc;
    }
    in->nids = n;
    for (int r = 0; r < n; r++)
        in->ids[r] = (struct pf_rank_id){ .rank = r, .proc = -1, .gpu = -1 };
    for (int p = 0; p < b->world; p++) {
        /* Without describe, a process is one rank of the same number. */
        if (all[p].n == 0 && p < n)
            in->ids[p].proc = p;
        for (int k = 0; k < all[p].n && k < PF_MAX_GPUS; k++) {
            struct pf_rank_id id = all[p].ids[k];
            if (id.rank < 0 || id.rank >= n)
                continue;
            id.bus[sizeof(id.bus) - 1] = '\0';
            id.nic[sizeof(id.nic) - 1] = '\0';
            id.proc = p;
            in->ids[id.rank] = id;
        }
    }
    free(all);
    return PF_OK;
}

int pf_inside_blame(int n, const double *secs, const long *wrong, bool data,
                    uint64_t bytes, int iters, struct pf_link *links,
                    bool *culprit, char *note, size_t len)
{
    double *gbps = calloc((size_t)n, sizeof(*gbps));
    long *lw = calloc((size_t)n, sizeof(*lw));
    int count = 0;

    if (!gbps || !lw) {
        snprintf(note, len, "GPU pairs: out of memory");
        for (int r = 0; r < n; r++)
            culprit[r] = false;
        free(gbps);
        free(lw);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int a = i, bb = (i + 1) % n, ph = pf_straggler_link_phase(n, i);
        double sa = secs[ph * n + a], sb = secs[ph * n + bb];
        struct pf_link *l = &links[i];

        l->a = a;
        l->b = bb;
        l->seconds = sa > sb ? sa : sb;
        l->gbps = l->seconds > 0
                      ? (double)bytes * iters / l->seconds / 1e9 : 0;
        l->wrong = wrong[ph * n + a] + wrong[ph * n + bb];
        gbps[i] = l->gbps;
        lw[i] = l->wrong;
    }
    count = pf_straggler_blame(n, gbps, data ? lw : NULL, culprit, note, len);
    free(gbps);
    free(lw);
    return count;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The GPUs of this process, pair by pair. */
static pf_err gpu_pairs(struct pf_run *run, struct pf_engine *e,
                        const struct ids_block *mine, bool data,
                        int64_t deadline, char *err)
{
    struct pf_coll *c = &run->coll;
    struct pf_inside *in = &c->inside;
    int n = e->local_ranks, nph = pf_straggler_nphases(n);
    int iters = PF_INSIDE_PAIR_ITERS;
    uint64_t largest = c->nrows > 0 ? c->rows[c->nrows - 1].bytes : 0;
    uint64_t bytes = largest < PF_INSIDE_PAIR_MAX_BYTES
                         ? largest : PF_INSIDE_PAIR_MAX_BYTES;
    double per_op = c->rank_seconds && c->nrank_seconds > 0
                        ? c->rank_seconds[0] : 0;
    double need_s = nph * (iters + 1) * per_op + 1.0;
    double left_s = (double)pf_ms_left(deadline) / 1000.0;
    double *secs = NULL;
    long *wrong = NULL;
    int *partner = NULL;
    bool *culprit = NULL;
    pf_err rc = PF_OK;

    snprintf(in->kind, sizeof(in->kind), "%s", data ? "data" : "slow");
    if (left_s < need_s) {
        snprintf(in->note, sizeof(in->note), "not localised inside the node: "
                 "%.1f s left before the deadline, the GPU pairs need about "
                 "%.1f s", left_s, need_s);
        return PF_OK;
    }
    bytes = bytes / sizeof(float) * sizeof(float);
    if (bytes == 0)
        bytes = sizeof(float);
    secs = calloc((size_t)(nph * n), sizeof(*secs));
    wrong = calloc((size_t)(nph * n), sizeof(*wrong));
    partner = calloc((size_t)n, sizeof(*partner));
    culprit = calloc((size_t)n, sizeof(*culprit));
    free(in->links);
    in->links = calloc((size_t)n, sizeof(*in->links));
    if (!secs || !wrong || !partner || !culprit || !in->links) {
        rc = pf_fail(err, PF_ERR_NOMEM, "GPU pairs: no memory for %d GPUs", n);
        goto out;
    }
    pf_info("inside this node: %s, pairwise test of the ring of %d GPUs",
            data ? "wrong data" : "below the floor", n);
    for (int ph = 0; ph < nph && rc == PF_OK; ph++) {
        for (int i = 0; i < n; i++)
            partner[i] = pf_straggler_peer(i, n, ph);
        rc = e->ops->local_pairs(e, partner, bytes / sizeof(float), iters,
                                 secs + (size_t)ph * n, wrong + (size_t)ph * n,
                                 deadline, err);
    }
    if (rc != PF_OK) {
        pf_err_prefix(err, "pairwise test of this node's GPUs");
        goto out;
    }
    snprintf(in->method, sizeof(in->method), "gpu-pairs");
    in->nlinks = n;
    in->nculprits = pf_inside_blame(n, secs, wrong, data, bytes, iters,
                                    in->links, culprit, in->note,
                                    sizeof(in->note));
    /* Local ranks to global ones. */
    for (int i = 0; i < n; i++) {
        in->links[i].a = mine->ids[in->links[i].a].rank;
        in->links[i].b = mine->ids[in->links[i].b].rank;
        pf_info("inside this node: GPUs %d-%d %.3f GB/s, %ld wrong",
                in->links[i].a, in->links[i].b, in->links[i].gbps,
                in->links[i].wrong);
    }
    free(in->culprits);
    in->culprits = calloc((size_t)(in->nculprits ? in->nculprits : 1),
                          sizeof(*in->culprits));
    if (!in->culprits) {
        in->nculprits = 0;
        rc = pf_fail(err, PF_ERR_NOMEM, "GPU pairs: out of memory");
        goto out;
    }
    for (int i = 0, k = 0; i < n; i++)
        if (culprit[i])
            in->culprits[k++] = mine->ids[i].rank;
    pf_info("inside this node: %s", in->note);
out:
    free(secs);
    free(wrong);
    free(partner);
    free(culprit);
    return rc;
}

/* Whether process p was singled out by the re-test between processes;
 * its PF_LINK_* kinds. */
static unsigned retest_blames(const struct pf_straggler *s, int p)
{
    for (int k = 0; k < s->nculprits && s->culprits; k++)
        if (s->culprits[k] == p)
            return s->culprit_bad ? s->culprit_bad[k]
                   : !strcmp(s->kind, "data") ? PF_LINK_DATA : PF_LINK_SLOW;
    return 0;
}

/* Whether rank r of process p (one of several) is at fault for kinds, by
 * its own share of the pairwise test (each GPU pairs with the same GPU of
 * the partner): wrong data in its results, or its exchanges taking
 * PF_STRAG_TIME_RATIO times the median of the process's other GPUs'. */
static bool gpu_at_fault(const struct pf_inside *in, int p, int r,
                         unsigned kinds)
{
    double *others, median, mine = in->ids[r].pair_seconds;
    int n = 0;

    if ((kinds & PF_LINK_DATA) && in->ids[r].pair_wrong > 0)
        return true;
    if (!(kinds & PF_LINK_SLOW) || !(mine > 0) ||
        !(others = calloc((size_t)in->nids, sizeof(*others))))
        return false;
    for (int k = 0; k < in->nids; k++)
        if (k != r && in->ids[k].proc == p)
            others[n++] = in->ids[k].pair_seconds > 0
                              ? in->ids[k].pair_seconds : 0;
    qsort(others, (size_t)n, sizeof(*others), by_value);
    median = n == 0 ? mine
             : n % 2 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
    free(others);
    return mine > PF_STRAG_TIME_RATIO * median;
}

/* The ranks of each process the re-test between processes singled out
 * (in->ids known for them) into in->culprits: its one rank, or, when it
 * drives several GPUs, those at fault by their own share of the pairwise
 * test (gpu_at_fault); none when that does not single any out. */
static pf_err from_retest(struct pf_run *run, char *err)
{
    struct pf_coll *c = &run->coll;
    const struct pf_straggler *s = &c->strag;
    struct pf_inside *in = &c->inside;
    int *who;
    int n = 0;

    if (strcmp(s->method, "pairwise") || s->nculprits <= 0 || in->nids < 1)
        return PF_OK;
    who = calloc((size_t)in->nids, sizeof(*who));
    if (!who)
        return pf_fail(err, PF_ERR_NOMEM, "inside: out of memory");
    for (int k = 0; k < s->nculprits; k++) {
        int p = s->culprits[k], mine = 0;
        unsigned kinds = retest_blames(s, p);
        for (int r = 0; r < in->nids; r++)
            mine += in->ids[r].proc == p;
        for (int r = 0; r < in->nids; r++)
            if (in->ids[r].proc == p &&
                (mine == 1 || gpu_at_fault(in, p, r, kinds)))
                who[n++] = r;
    }
    free(in->culprits);
    in->culprits = who;
    in->nculprits = n;
    snprintf(in->method, sizeof(in->method), "pairwise");
    snprintf(in->kind, sizeof(in->kind), "%s", s->kind);
    snprintf(in->note, sizeof(in->note), "%s", s->note);
    return PF_OK;
}

/* A run of several nodes whose re-test blamed this one: its own ranks,
 * described here (nothing crosses the network), and which of them are at
 * fault. */
static pf_err own_ranks(struct pf_run *run, struct pf_engine *e,
                        struct pf_boot *b, char *err)
{
    struct pf_coll *c = &run->coll;
    struct pf_inside *in = &c->inside;
    struct pf_rank_id ids[PF_MAX_GPUS];
    int n = c->nranks, got;

    if (!retest_blames(&c->strag, b->rank) || !e->ops->describe || n < 1)
        return PF_OK;
    got = e->ops->describe(e, ids, PF_MAX_GPUS);
    free(in->ids);
    in->ids = calloc((size_t)n, sizeof(*in->ids));
    if (!in->ids)
        return pf_fail(err, PF_ERR_NOMEM, "inside: no memory for %d ranks' "
                       "identities", n);
    in->nids = n;
    for (int r = 0; r < n; r++)
        in->ids[r] = (struct pf_rank_id){ .rank = r, .proc = -1, .gpu = -1 };
    for (int k = 0; k < got; k++) {
        struct pf_rank_id id = ids[k];
        if (id.rank < 0 || id.rank >= n)
            continue;
        id.proc = b->rank;
        in->ids[id.rank] = id;
    }
    return from_retest(run, err);
}

pf_err pf_inside(struct pf_run *run, struct pf_engine *e, struct pf_boot *b,
                 int64_t deadline, char *err)
{
    struct pf_coll *c = &run->coll;
    struct ids_block *mine;
    double floor = c->judgement.floor.gbps, judged = c->judgement.busbw_gbps;
    bool data, below;
    pf_err rc;

    if (c->nnodes != 1)
        return own_ranks(run, e, b, err);
    mine = calloc(1, sizeof(*mine));
    if (!mine)
        return pf_fail(err, PF_ERR_NOMEM, "inside one node: out of memory");
    rc = gather_ids(c, e, b, mine, deadline, err);
    /* Several processes: the re-test between them named the culprit. */
    if (rc == PF_OK && b->world > 1)
        rc = from_retest(run, err);
    /* One process of 3 or more GPUs: the re-test between processes had
     * nothing to split. */
    if (rc != PF_OK || b->world != 1 || e->local_ranks < 3 ||
        mine->n != e->local_ranks || !e->ops->local_pairs)
        goto out;
    data = c->wrong_total > 0;
    below = floor > 0 && c->nrows > 0 && judged >= 0 && judged < floor;
    if (data || below)
        rc = gpu_pairs(run, e, mine, data, deadline, err);
out:
    free(mine);
    return rc;
}
