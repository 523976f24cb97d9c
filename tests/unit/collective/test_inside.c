/* Inside one node (collective/inside.c): per-phase results of the GPU
 * pairs into links and the blame, as the re-test between processes. */
#include <criterion/criterion.h>
#include <string.h>

#include "collective/inside.h"
#include "collective/blame.h"
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

/* The ring rule for one node's processes (straggler.c calls it when no
 * confirmation ran): ring_bad[i] is link i-(i+1). */
static int ring_blame(int n, const unsigned *bad, unsigned *culprit,
                      char *note, size_t len)
{
    double gbps[8];
    long wrong[8];

    for (int i = 0; i < n; i++) {
        gbps[i] = bad[i] & PF_LINK_SLOW ? 0.1 : 1.0;
        wrong[i] = bad[i] & PF_LINK_DATA ? 128 : 0;
    }
    snprintf(note, len, "untouched");
    return pf_inside_ring_blame(n, gbps, wrong, bad, culprit, note, len);
}

Test(inside, three_ranks_the_one_in_both_bad_pairs_is_blamed)
{
    /* links 0-1 good, 1-2 and 2-0 wrong: rank 2 is in both bad pairs and
     * absent from the good one */
    const unsigned bad[3] = { 0, PF_LINK_DATA, PF_LINK_DATA };
    unsigned culprit[3];
    char note[320];

    cr_assert_eq(ring_blame(3, bad, culprit, note, sizeof(note)), 1);
    cr_assert_eq(culprit[0], 0);
    cr_assert_eq(culprit[1], 0);
    cr_assert_eq(culprit[2], PF_LINK_DATA);
    cr_assert(strstr(note, "rank 2's links both carry wrong data (1-2 128 "
                           "wrong, 2-0 128 wrong)"), "%s", note);
}

Test(inside, three_ranks_a_slow_one_is_blamed_for_slowness_only)
{
    const unsigned bad[3] = { PF_LINK_SLOW, PF_LINK_SLOW, 0 };
    unsigned culprit[3];
    char note[320];

    cr_assert_eq(ring_blame(3, bad, culprit, note, sizeof(note)), 1);
    cr_assert_eq(culprit[1], PF_LINK_SLOW);
    cr_assert(strstr(note, "rank 1's links are both slow (0-1 0.100 GB/s, "
                           "1-2 0.100 GB/s)"), "%s", note);
}

Test(inside, links_that_single_out_nobody_blame_nobody)
{
    unsigned culprit[5];
    char note[320];
    /* one bad link: its two ends cannot be told apart */
    const unsigned one[3] = { PF_LINK_DATA, 0, 0 };
    /* every link bad: no good link clears anyone, and not a minority */
    const unsigned all[3] = { PF_LINK_DATA, PF_LINK_DATA, PF_LINK_DATA };
    /* 5 ranks, rank 1 with both links bad and link 3-4 bad too: that
     * link ends at no culprit */
    const unsigned stray[5] = { PF_LINK_DATA, PF_LINK_DATA, 0, PF_LINK_DATA,
                                0 };
    /* two ranks: one link */
    const unsigned two[2] = { PF_LINK_DATA, PF_LINK_DATA };

    cr_assert_eq(ring_blame(3, one, culprit, note, sizeof(note)), 0);
    cr_assert_str_eq(note, "untouched");
    cr_assert_eq(ring_blame(3, all, culprit, note, sizeof(note)), 0);
    cr_assert_eq(ring_blame(5, stray, culprit, note, sizeof(note)), 0);
    for (int r = 0; r < 5; r++)
        cr_assert_eq(culprit[r], 0);
    cr_assert_eq(ring_blame(2, two, culprit, note, sizeof(note)), 0);
}

Test(inside, two_neighbours_of_four_with_a_good_link_between_the_others)
{
    /* 0-1, 1-2, 2-3 wrong, 3-0 good: 0 and 3 cleared, 1 and 2 blamed */
    const unsigned bad[4] = { PF_LINK_DATA, PF_LINK_DATA, PF_LINK_DATA, 0 };
    unsigned culprit[4];
    char note[320];

    cr_assert_eq(ring_blame(4, bad, culprit, note, sizeof(note)), 2, "%s",
                 note);
    cr_assert_eq(culprit[0], 0);
    cr_assert_eq(culprit[1], PF_LINK_DATA);
    cr_assert_eq(culprit[2], PF_LINK_DATA);
    cr_assert_eq(culprit[3], 0);
    cr_assert(strstr(note, "rank 1's links both carry wrong data (0-1 128 "
                           "wrong, 1-2 128 wrong); rank 2's links"), "%s",
              note);
}
