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

Test(inside, a_corrupting_gpu_has_both_links_wrong_and_is_blamed)
{
    double secs[3 * N];
    long wrong[3 * N];
    struct pf_link links[N];
    bool culprit[N];
    char note[320];

    phases(5, -1, secs, wrong);
    cr_assert_eq(pf_inside_blame(N, secs, wrong, true, 1 << 20, 3, links,
                                 culprit, note, sizeof(note)), 1);
    cr_assert(culprit[5]);
    cr_assert_eq(links[4].wrong, 6);
    cr_assert_eq(links[5].wrong, 6);
    cr_assert_eq(links[0].wrong, 0);
    cr_assert_eq(links[7].a, 7);
    cr_assert_eq(links[7].b, 0);
}

Test(inside, a_slow_gpu_is_blamed_by_its_two_slow_links)
{
    double secs[3 * N];
    long wrong[3 * N];
    struct pf_link links[N];
    bool culprit[N];
    char note[320];

    phases(-1, 2, secs, wrong);
    cr_assert_eq(pf_inside_blame(N, secs, wrong, false, 1 << 20, 3, links,
                                 culprit, note, sizeof(note)), 1);
    cr_assert(culprit[2]);
    cr_assert_float_eq(links[1].gbps, (1 << 20) * 3 / 10.0 / 1e9, 1e-12);
    cr_assert_float_eq(links[3].gbps, (1 << 20) * 3 / 1.0 / 1e9, 1e-12);
}

Test(inside, links_alike_blame_nobody)
{
    double secs[3 * N];
    long wrong[3 * N];
    struct pf_link links[N];
    bool culprit[N];
    char note[320];

    phases(-1, -1, secs, wrong);
    cr_assert_eq(pf_inside_blame(N, secs, wrong, false, 1 << 20, 3, links,
                                 culprit, note, sizeof(note)), 0);
    for (int i = 0; i < N; i++)
        cr_assert(!culprit[i]);
    cr_assert(strstr(note, "alike"), "%s", note);
}
