/* The judgement (judge/judge.h): each step fills its part of
 * run->coll.judgement once, from what is known at that step, and the
 * readers (the pairwise phase, the verdict) read it instead of applying
 * the rule again. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "collective/sweep.h"
#include "config/catalog.h"
#include "config/config.h"
#include "judge/floor.h"
#include "judge/judge.h"
#include "verdict/verdict.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static struct pf_catalog cat;

static void load(void)
{
    char err[PF_ERRLEN];
    cr_assert_eq(pf_catalog_load(&cat, "", err), PF_OK, "%s", err);
}

static void unload(void) { pf_catalog_free(&cat); }

TestSuite(judge, .init = load, .fini = unload);

/* An 8-node p5 ring over efa, swept at 256 MiB, 1 GiB and 2 GiB with
 * busbw gbps at each. */
static struct pf_run *p5_run(double gbps)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;
    const uint64_t sizes[] = { 256 * MIB, GIB, 2 * GIB };

    cr_assert_not_null(run);
    pf_config_defaults(&run->cfg);
    run->instance = pf_catalog_find(&cat, "p5.48xlarge");
    snprintf(run->node.instance_type, sizeof(run->node.instance_type),
             "p5.48xlarge");
    run->node.efa_count = 32;
    c->ran = true;
    snprintf(c->engine, sizeof(c->engine), "nccl");
    c->engine_kind = PF_ENGINE_NCCL;
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "efa");
    c->nnodes = 8;
    c->nranks = 64;
    c->nrows = 3;
    for (int i = 0; i < 3; i++) {
        double s = (double)sizes[i] * pf_busbw_factor(64) / 1e9 / gbps;
        pf_sweep_fill_row(&c->rows[i], sizes[i], 64, s, s, 0, 0);
    }
    pf_sweep_summarize(c);
    return run;
}

static const struct pf_check *find(const struct pf_run *run, const char *n)
{
    for (int i = 0; i < run->verdict.n; i++)
        if (!strcmp(run->verdict.checks[i].name, n))
            return &run->verdict.checks[i];
    return NULL;
}

/* The ring at its node count, by the largest row with a floor (a curve by
 * size: the floor at that row's size); the links at the 2-node floor at
 * the smallest row from its size on. */
Test(judge, fills_the_ring_and_the_pairs_once)
{
    struct pf_run *run = p5_run(300);
    const struct pf_judgement *j = &run->coll.judgement;
    struct pf_floor_rule at8, at2;

    pf_judge(run);
    pf_floor_for(&run->cfg, run->instance, PF_ENGINE_NCCL, NULL, 8, 0, &at8);
    pf_floor_for(&run->cfg, run->instance, PF_ENGINE_NCCL, NULL, 2, 0, &at2);
    cr_assert(j->done);
    cr_assert_not(j->other_provider);
    cr_assert_eq(j->busbw_bytes, 2 * GIB);
    cr_assert_float_eq(j->busbw_gbps, 300, 1e-6);
    cr_assert_float_eq(j->floor.gbps, pf_floor_rule_at(&at8, 2 * GIB), 1e-9);
    cr_assert_float_eq(j->floor.gbps, 200 + 50.0 / 3, 1e-9);
    cr_assert(j->judged);
    cr_assert_eq(j->pair_rule.from_bytes, GIB);
    cr_assert_float_eq(j->pair_rule.gbps, at2.gbps, 1e-9);
    cr_assert(j->pair_by_floor);
    cr_assert_eq(j->pair_bytes, GIB);
    cr_assert_float_eq(j->pair_catalog_gbps, 250, 1e-9);
    cr_assert_float_eq(j->pair_gbps, 250, 1e-9);
    cr_assert_not(j->pair_held.applied);
    free(run);
}

/* The steps keep each other's parts, each from its own inputs: the plan
 * from the provider asked for and this node's EFA devices, the stop rule
 * from what every rank shares (no NIC count), the judgement from the NICs
 * striped over. trn1 has host floors by NIC count only. */
Test(judge, each_step_rests_on_its_own_inputs)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    struct pf_coll *c = &run->coll;
    struct pf_judgement *j = &c->judgement;

    pf_config_defaults(&run->cfg);
    run->instance = pf_catalog_find(&cat, "trn1.32xlarge");
    run->node.efa_count = 8;
    snprintf(c->engine, sizeof(c->engine), "host");
    c->engine_kind = PF_ENGINE_HOST;
    c->nnodes = 2;
    pf_judge_plan(run);
    cr_assert_float_eq(j->planned.gbps, 6, 1e-9, "%s", j->planned.src);
    cr_assert_eq(j->planned.from_bytes, 16 * MIB);
    snprintf(c->fabric.provider, sizeof(c->fabric.provider), "efa");
    pf_judge_stop(run);
    cr_assert_float_eq(j->stop.gbps, 0, 1e-9, "%s", j->stop.src);
    c->nics.nrails = 1;
    c->nrows = 1;
    pf_sweep_fill_row(&c->rows[0], 64 * MIB, 2, 0.1, 0.1, 0, 0);
    pf_sweep_summarize(c);
    pf_judge(run);
    cr_assert(j->done);
    cr_assert_float_eq(j->floor.gbps, 2, 1e-9, "%s", j->floor.src);
    /* the earlier steps' parts stay as they were computed */
    cr_assert_float_eq(j->planned.gbps, 6, 1e-9);
    cr_assert_float_eq(j->stop.gbps, 0, 1e-9);
    /* a provider asked for that is not efa: no floor planned */
    snprintf(run->cfg.fabric_provider, sizeof(run->cfg.fabric_provider),
             "tcp");
    pf_judge_plan(run);
    cr_assert_float_eq(j->planned.gbps, 0, 1e-9);
    cr_assert(strstr(j->planned.src, "provider tcp is not EFA"), "%s",
              j->planned.src);
    free(run);
}

/* The verdict reads the judgement: the rule is not applied again, so a
 * floor changed after the judgement (here --min-busbw-gbps) does not move
 * the busbw check, and a report, a metric and the verdict agree. */
Test(judge, the_verdict_reads_it_and_does_not_reapply_the_rule)
{
    struct pf_run *run = p5_run(300);

    pf_judge(run);
    run->cfg.min_busbw_gbps = 1e6;
    pf_verdict_fabric(run);
    cr_assert_not_null(find(run, "busbw"));
    cr_assert_eq(find(run, "busbw")->status, PF_PASS, "%s",
                 find(run, "busbw")->message);
    cr_assert(strstr(find(run, "busbw")->message, "216.67"), "%s",
              find(run, "busbw")->message);
    /* judged again, the new floor holds */
    run->verdict.n = 0;
    pf_judge(run);
    pf_verdict_fabric(run);
    cr_assert_eq(find(run, "busbw")->status, PF_FAIL, "%s",
                 find(run, "busbw")->message);
    free(run);
}

/* The fleet baseline raises the links' bar above the 2-node floor; over
 * another provider neither applies. */
Test(judge, the_baseline_raises_the_pairs_bar_over_efa_only)
{
    struct pf_run *run = p5_run(300);
    const struct pf_judgement *j = &run->coll.judgement;
    struct pf_base_entry e = { .nodes = 2, .bytes = GIB, .n = 3,
                               .v = { 400, 410, 390 } };

    snprintf(e.type, sizeof(e.type), "p5.48xlarge");
    snprintf(e.engine, sizeof(e.engine), "nccl");
    snprintf(e.kind, sizeof(e.kind), "pair");
    run->baseline.e = &e;
    run->baseline.n = run->baseline.cap = 1;
    run->cfg.baseline_fraction = 0.8;
    pf_judge(run);
    cr_assert(j->pair_held.applied, "%s", j->pair_held.note);
    cr_assert_float_eq(j->pair_held.median_gbps, 400, 1e-9);
    cr_assert_float_eq(j->pair_gbps, 320, 1e-9);
    cr_assert_float_eq(j->pair_catalog_gbps, 250, 1e-9);

    run->coll.fabric.provider_is_fallback = true;
    snprintf(run->coll.fabric.provider, sizeof(run->coll.fabric.provider),
             "tcp");
    pf_judge(run);
    cr_assert(j->other_provider);
    cr_assert_float_eq(j->floor.gbps, 0, 1e-9);
    cr_assert_not(j->judged);
    cr_assert_not(j->pair_held.applied);
    cr_assert_float_eq(j->pair_gbps, 0, 1e-9);
    /* a test may ask for the floors over any provider */
    run->cfg.debug_floor_any_provider = true;
    pf_judge(run);
    cr_assert_not(j->other_provider);
    cr_assert_float_eq(j->pair_gbps, 320, 1e-9);
    run->baseline.e = NULL;
    free(run);
}

/* No sweep ran (the pipeline's case when discovery failed): the floor
 * that would have applied, nothing judged, the links' size the smallest
 * whole float. */
Test(judge, no_rows_states_the_floor_and_judges_nothing)
{
    struct pf_run *run = p5_run(300);
    const struct pf_judgement *j = &run->coll.judgement;

    run->coll.nrows = 0;
    run->coll.ran = false;
    pf_judge(run);
    cr_assert_gt(j->floor.gbps, 0);
    cr_assert_float_eq(j->busbw_gbps, -1, 1e-9);
    cr_assert_eq(j->busbw_bytes, 0);
    cr_assert_not(j->judged);
    cr_assert_not(j->pair_by_floor);
    cr_assert_eq(j->pair_bytes, sizeof(float));
    free(run);
}

/* A floor by size is judged at the largest size swept that has one, held
 * to the floor at that size (2 GiB, 8 GiB: 290 GB/s is below the 8 GiB
 * floor though above the 1 GiB one); a one-size floor keeps the best row
 * from its size on; a sweep below the smallest size judges nothing. */
Test(judge, judged_at_the_largest_size_with_a_floor)
{
    struct pf_coll c;
    struct pf_floor_rule r;
    uint64_t at;
    double bw;

    memset(&c, 0, sizeof(c));
    memset(&r, 0, sizeof(r));
    c.nrows = 3;
    c.rows[0] = (struct pf_row){ .bytes = 256ull << 20, .oop_busbw = 220 };
    c.rows[1] = (struct pf_row){ .bytes = 1ull << 30, .oop_busbw = 300,
                                 .ip_busbw = 310 };
    c.rows[2] = (struct pf_row){ .bytes = 8ull << 30, .oop_busbw = 290 };
    r.gbps = 250;
    r.from_bytes = 1ull << 30;
    r.nsizes = 3;
    r.sizes[0] = (struct pf_size_floor){ 256ull << 20, 200 };
    r.sizes[1] = (struct pf_size_floor){ 1ull << 30, 250 };
    r.sizes[2] = (struct pf_size_floor){ 8ull << 30, 300 };
    bw = pf_judged_busbw(&c, &r, &at);
    cr_assert_eq(at, 8ull << 30);
    cr_assert_float_eq(bw, 290, 1e-9);
    cr_assert_lt(bw, pf_floor_rule_at(&r, at));
    /* swept to 1 GiB only: held to the 1 GiB floor, met */
    c.nrows = 2;
    bw = pf_judged_busbw(&c, &r, &at);
    cr_assert_eq(at, 1ull << 30);
    cr_assert_float_eq(bw, 310, 1e-9);
    cr_assert_geq(bw, pf_floor_rule_at(&r, at));
    /* one size: the best row from it on */
    c.nrows = 3;
    r.nsizes = 0;
    bw = pf_judged_busbw(&c, &r, &at);
    cr_assert_eq(at, 1ull << 30);
    cr_assert_float_eq(bw, 310, 1e-9);
    /* below the smallest size: nothing judged */
    r.nsizes = 3;
    c.nrows = 1;
    c.rows[0].bytes = 128ull << 20;
    cr_assert_float_eq(pf_judged_busbw(&c, &r, &at), -1, 1e-9);
    cr_assert_eq(at, 0);
}
