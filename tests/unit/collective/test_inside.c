/* Inside one node (collective/inside.c): per-phase results of the GPU
 * pairs into links and the blame, as the re-test between processes. */
#include <criterion/criterion.h>
#include <string.h>

#include "collective/inside.h"
#include "collective/straggler.h"

#define N 8

/* Every local rank's time and wrong count in every phase: 1 s per pair,
 * wrong elements on both ends of bad's pairs, slow's pairs 10 s. */
static void phases(int bad, int slow, double *secs, long *wrong)
{
    int nph = pf_straggler_nphases(N);

    for (int ph = 0; ph < nph; ph++)
        for (int i = 0; i < N; i++) {
            int p = pf_straggler_peer(i, N, ph);
            secs[ph * N + i] = p < 0 ? 0 : (i == slow || p == slow) ? 10 : 1;
            wrong[ph * N + i] = p >= 0 && (i == bad || p == bad) ? 3 : 0;
        }
}

/* What pf_inside_blame makes of the phases. */
struct blamed {
    struct pf_link links[N];
    bool culprit[N];
    char note[320];
};

/* The phases of bad and slow, 1 MiB 3 times, data checked or not, blamed
 * into *b; the number of culprits. */
static int blame(int bad, int slow, bool data, struct blamed *b)
{
    double secs[3 * N];
    long wrong[3 * N];

    phases(bad, slow, secs, wrong);
    return pf_inside_blame(N, secs, wrong, data, 1 << 20, 3, b->links,
                           b->culprit, b->note, sizeof(b->note));
}

Test(inside, a_corrupting_gpu_has_both_links_wrong_and_is_blamed)
{
    struct blamed got;

    cr_assert_eq(blame(5, -1, true, &got), 1);
    cr_assert(got.culprit[5]);
    cr_assert_eq(got.links[4].wrong, 6);
    cr_assert_eq(got.links[5].wrong, 6);
    cr_assert_eq(got.links[0].wrong, 0);
    cr_assert_eq(got.links[7].a, 7);
    cr_assert_eq(got.links[7].b, 0);
}

Test(inside, a_slow_gpu_is_blamed_by_its_two_slow_links)
{
    struct blamed got;

    cr_assert_eq(blame(-1, 2, false, &got), 1);
    cr_assert(got.culprit[2]);
    cr_assert_float_eq(got.links[1].gbps, (1 << 20) * 3 / 10.0 / 1e9, 1e-12);
    cr_assert_float_eq(got.links[3].gbps, (1 << 20) * 3 / 1.0 / 1e9, 1e-12);
}

Test(inside, links_alike_blame_nobody)
{
    struct blamed got;

    cr_assert_eq(blame(-1, -1, false, &got), 0);
    for (int i = 0; i < N; i++)
        cr_assert(!got.culprit[i]);
    cr_assert(strstr(got.note, "alike"), "%s", got.note);
}
