/* What a link must reach (judge/links.c): a pair is held to max(catalog
 * floor, fraction x the fleet's median) once the key has PF_BASE_MIN_RUNS
 * runs; where no floor applies, a fraction of the median link (of each
 * rank's better link at 3 ranks of one node). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "baseline/baseline.h"
#include "judge/links.h"

#define GIB (1ull << 30)

static void fold(struct pf_baseline *b, double gbps)
{
    struct pf_base_obs o = { .nodes = 2, .bytes = GIB, .gbps = gbps };
    char err[PF_ERRLEN];

    snprintf(o.type, sizeof(o.type), "p5.48xlarge");
    snprintf(o.engine, sizeof(o.engine), "nccl");
    snprintf(o.kind, sizeof(o.kind), "pair");
    cr_assert_eq(pf_base_fold(b, &o, "2026-11-28T12:00:00Z", err), PF_OK,
                 "%s", err);
}

/* A pair at 60 % of the baseline is held to 0.8 x the median and flagged;
 * one at 95 % is not; the catalog floor alone (50) would pass both. */
Test(links, pair_at_60_percent_flagged_95_not)
{
    struct pf_baseline b = { 0 };
    struct pf_base_held h;
    double thr;

    for (int i = 0; i < 5; i++)
        fold(&b, 100);
    thr = pf_base_pair_floor(&b, "p5.48xlarge", "nccl", GIB, 50, 0.8, &h);
    cr_assert_float_eq(thr, 80, 1e-9);
    cr_assert(h.applied);
    cr_assert_eq(h.runs, 5);
    cr_assert(strstr(h.note, "0.80 x the fleet's median pair link 100 GB/s"),
              "%s", h.note);
    cr_assert(60 < thr, "60 %% of the median is below the bar");
    cr_assert(95 >= thr, "95 %% of the median passes");
    cr_assert(60 >= 50, "the catalog floor alone passes it");
    pf_base_free(&b);
}

/* No baseline, too few runs, another size or type, a catalog floor above
 * the fraction, or fraction 0: the catalog floor alone, and the note says
 * so. */
Test(links, no_baseline_means_the_catalog_floor)
{
    struct pf_baseline b = { 0 };
    struct pf_base_held h;

    cr_assert_float_eq(pf_base_pair_floor(&b, "p5.48xlarge", "nccl", GIB, 250,
                                          0.8, &h), 250, 1e-9);
    cr_assert_not(h.applied);
    cr_assert(strstr(h.note, "catalog floor alone"), "%s", h.note);
    fold(&b, 400);
    fold(&b, 400);
    cr_assert_float_eq(pf_base_pair_floor(&b, "p5.48xlarge", "nccl", GIB, 250,
                                          0.8, &h), 250, 1e-9);
    cr_assert(strstr(h.note, "fewer than 3"), "%s", h.note);
    fold(&b, 400);
    cr_assert_float_eq(pf_base_pair_floor(&b, "p5.48xlarge", "nccl", GIB, 250,
                                          0.8, &h), 320, 1e-9);
    cr_assert_float_eq(pf_base_pair_floor(&b, "p5.48xlarge", "nccl", 2 * GIB,
                                          250, 0.8, &h), 250, 1e-9);
    cr_assert_float_eq(pf_base_pair_floor(&b, "p5e.48xlarge", "nccl", GIB,
                                          250, 0.8, &h), 250, 1e-9);
    cr_assert_float_eq(pf_base_pair_floor(&b, "p5.48xlarge", "nccl", GIB, 350,
                                          0.8, &h), 350, 1e-9);
    cr_assert_float_eq(pf_base_pair_floor(&b, "p5.48xlarge", "nccl", GIB, 250,
                                          0, &h), 250, 1e-9);
    pf_base_free(&b);
}

Test(links, the_relative_floor_holds_at_three_ranks)
{
    /* rank 2 slow: links 1-2 and 2-0 at 0.1, 0-1 at 1.0. The median link
     * is a slow one; the median of each rank's better link is not. */
    const double g[3] = { 1.0, 0.1, 0.1 };
    /* 4 ranks, rank 2 slow, link 3-0 slowed by a busy host: still well
     * above the threshold the median link gives */
    const double four[4] = { 0.52, 0.01, 0.01, 0.15 };

    cr_assert_float_eq(pf_links_relative_floor(3, g), 0.05, 1e-9);
    cr_assert_float_eq(pf_inside_relative_floor(3, g), 0.5, 1e-9);
    cr_assert_float_eq(pf_inside_relative_floor(4, four),
                       pf_links_relative_floor(4, four), 1e-12);
    cr_assert_lt(pf_inside_relative_floor(4, four), 0.15);
}
