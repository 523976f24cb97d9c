/* The time plan (collective/plan.h): the split, when the sweep stops, and
 * how many pairwise iterations fit. */
#include <criterion/criterion.h>
#include <string.h>

#include "collective/plan.h"

Test(plan, the_sweep_gets_its_share_and_localisation_the_rest)
{
    struct pf_time_plan p;

    /* 100 s run, 30 s gone, collective deadline 2 s before the end. */
    pf_plan_make(&p, 130000, 100000, 100, 198000, 2.0);
    cr_assert_float_eq(p.before_s, 30.0, 1e-9);
    cr_assert_float_eq(p.sweep_s, 34.0, 1e-9);
    cr_assert_float_eq(p.after_s, 34.0, 1e-9);
    cr_assert_eq(p.sweep_end, 164000);
}

static struct pf_plan_size size_of(uint64_t bytes, double op_s, double left_s)
{
    return (struct pf_plan_size){ .bytes = bytes, .op_s = op_s, .ops = 8,
                                  .busbw = 10, .floor_gbps = 8,
                                  .floor_from = 1 << 20, .left_s = left_s };
}

Test(plan, wrong_data_decides_the_ring_at_once)
{
    struct pf_plan_size s = size_of(1024, 0.001, 100);
    char why[200];

    s.wrong = 3;
    cr_assert(pf_plan_sweep_stops(&s, 4096, why, sizeof(why)));
    cr_assert(strstr(why, "3 wrong elements"), "%s", why);
}

Test(plan, under_half_the_floor_where_it_holds_decides_the_ring)
{
    struct pf_plan_size s = size_of(1 << 20, 0.001, 100);
    char why[200];

    s.busbw = 3.9;                    /* under 4 = half of 8 */
    cr_assert(pf_plan_sweep_stops(&s, 4 << 20, why, sizeof(why)));
    cr_assert(strstr(why, "under half the floor"), "%s", why);
    s.busbw = 4.1;                    /* slow, not decided */
    cr_assert_not(pf_plan_sweep_stops(&s, 4 << 20, why, sizeof(why)));
    s.busbw = 0.1;                    /* below the floor's size: no verdict */
    s.bytes = 512 << 10;
    cr_assert_not(pf_plan_sweep_stops(&s, 1 << 20, why, sizeof(why)));
}

Test(plan, a_size_that_would_outrun_the_share_is_not_started)
{
    /* 1 MiB at 0.5 s an op, 8 ops: 4 MiB would take 16 s. */
    struct pf_plan_size s = size_of(1 << 20, 0.5, 15);
    char why[200];

    cr_assert(pf_plan_sweep_stops(&s, 4 << 20, why, sizeof(why)));
    cr_assert(strstr(why, "16.0 s"), "%s", why);
    s.left_s = 17;
    cr_assert_not(pf_plan_sweep_stops(&s, 4 << 20, why, sizeof(why)));
    cr_assert_not(pf_plan_sweep_stops(&s, 0, why, sizeof(why)),
                  "the last size ends the sweep anyway");
}

Test(plan, fewer_pairwise_iterations_rather_than_none)
{
    /* 4 rounds of (iters + 1) exchanges of 1 s, plus 1 s. */
    cr_assert_eq(pf_plan_pair_iters(100, 4, 1.0, 3), 3);
    cr_assert_eq(pf_plan_pair_iters(16, 4, 1.0, 3), 2);   /* 13 s fits */
    cr_assert_eq(pf_plan_pair_iters(9, 4, 1.0, 3), 1);
    cr_assert_eq(pf_plan_pair_iters(8.5, 4, 1.0, 3), 0);
}
