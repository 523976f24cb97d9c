/* The blame rules (blame.h): the pair schedule, a link's verdict, the
 * confirmation plan, and who is failed for what, with the words why. */
#include "blame.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../judge/links.h"

void pf_pairs_split_degraded(int n, const struct pf_confirm *conf, int nconf,
                             double catalog_floor, double base_floor,
                             unsigned *culprit)
{
    if (base_floor <= 0 || base_floor <= catalog_floor)
        return;
    for (int r = 0; r < n; r++) {
        bool below_catalog = false;
        if (!(culprit[r] & PF_LINK_SLOW))
            continue;
        for (int k = 0; k < nconf; k++)
            if (conf[k].suspect == r && conf[k].gbps < catalog_floor)
                below_catalog = true;
        if (!below_catalog)
            culprit[r] = (culprit[r] & ~PF_LINK_SLOW) | PF_LINK_DEGRADED;
    }
}

int pf_straggler_nphases(int n)
{
    if (n < 2)
        return 0;
    if (n == 2)
        return 1;
    return n % 2 ? 3 : 2;
}

int pf_straggler_link_phase(int n, int i)
{
    /* Odd n: the closing link (n-1, 0) shares rank 0 with link 0 and rank
     * n-1 with link n-2, so it gets a phase of its own. */
    if (n % 2 && n > 2 && i == n - 1)
        return 2;
    return i % 2;
}

int pf_straggler_peer(int rank, int n, int phase)
{
    int left;

    if (n < 2 || rank < 0 || rank >= n)
        return -1;
    if (n == 2)
        return phase == 0 ? 1 - rank : -1;
    if (pf_straggler_link_phase(n, rank) == phase)
        return (rank + 1) % n;
    left = (rank + n - 1) % n;
    if (pf_straggler_link_phase(n, left) == phase)
        return left;
    return -1;
}

static double good(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

int pf_straggler_from_links(int n, const double *link_gbps, char *note,
                            size_t len)
{
    double *score, lo_link, hi_link;
    int best = 0, lo_i = 0;

    if (n < 2) {
        snprintf(note, len, "%d rank(s): no link to test", n);
        return -1;
    }
    if (n == 2) {
        snprintf(note, len, "2 ranks share one link (%.3f GB/s): a pairwise "
                 "test cannot tell which end is slow", good(link_gbps[0]));
        return -1;
    }
    score = calloc((size_t)n, sizeof(*score));
    if (!score) {
        snprintf(note, len, "pairwise: no memory to score %d ranks", n);
        return -1;
    }
    /* A rank's score is its better link: only the straggler has no good
     * link, while a healthy neighbour of it still has one. */
    for (int r = 0; r < n; r++) {
        double l = good(link_gbps[(r + n - 1) % n]), m = good(link_gbps[r]);
        score[r] = l > m ? l : m;
        if (score[r] < score[best])
            best = r;
    }
    double second = -1;
    for (int r = 0; r < n; r++)
        if (r != best && (second < 0 || score[r] < second))
            second = score[r];
    if (score[best] < PF_STRAG_LINK_RATIO * second) {
        int left = (best + n - 1) % n, right = (best + 1) % n;
        snprintf(note, len, "pairwise: rank %d's links are both slow (%d-%d "
                 "%.3f GB/s, %d-%d %.3f GB/s) while every other rank has a "
                 "link of at least %.3f GB/s", best, left, best,
                 good(link_gbps[left]), best, right, good(link_gbps[best]),
                 second);
        free(score);
        return best;
    }
    free(score);
    lo_link = hi_link = good(link_gbps[0]);
    for (int i = 1; i < n; i++) {
        double g = good(link_gbps[i]);
        if (g < lo_link) {
            lo_link = g;
            lo_i = i;
        }
        if (g > hi_link)
            hi_link = g;
    }
    if (lo_link < PF_STRAG_LINK_RATIO * hi_link)
        snprintf(note, len, "pairwise: the slow links do not share one rank "
                 "(slowest %d-%d %.3f GB/s, best %.3f GB/s): a slow link or "
                 "several slow ranks, not one straggler", lo_i,
                 (lo_i + 1) % n, lo_link, hi_link);
    else
        snprintf(note, len, "pairwise: every link alike (%.3f..%.3f GB/s): "
                 "no single rank is slow, the fabric as a whole is", lo_link,
                 hi_link);
    return -1;
}

unsigned pf_link_judge(double gbps, long wrong, double slow_below)
{
    unsigned bad = wrong > 0 ? PF_LINK_DATA : 0;

    if (slow_below > 0 && good(gbps) < slow_below)
        bad |= PF_LINK_SLOW;
    return bad;
}

/* Rank r's two ring links, as judged. */
static unsigned left_bad(int n, const unsigned *ring_bad, int r)
{
    return ring_bad[(r + n - 1) % n];
}

int pf_pairs_confirm_plan(int n, const unsigned *ring_bad, int max_rounds,
                          int *partner)
{
    int *goods, *suspects, ngood = 0, nsusp = 0, rounds;

    for (int i = 0; i < n * max_rounds; i++)
        partner[i] = -1;
    if (n < 3 || max_rounds < 1)
        return 0;
    goods = calloc((size_t)n, sizeof(*goods));
    suspects = calloc((size_t)n, sizeof(*suspects));
    if (!goods || !suspects) {
        free(goods);
        free(suspects);
        return 0;
    }
    for (int r = 0; r < n; r++)
        if (!ring_bad[r] && !left_bad(n, ring_bad, r))
            goods[ngood++] = r;
    /* Both links bad first: they are the likely culprits, and a node
     * between two bad ones is among them and must get its chance. */
    for (int both = 1; both >= 0; both--)
        for (int r = 0; r < n; r++) {
            unsigned l = left_bad(n, ring_bad, r), m = ring_bad[r];
            if ((l || m) && (both ? l && m : !(l && m)))
                suspects[nsusp++] = r;
        }
    rounds = 0;
    if (ngood > 0 && nsusp > 0) {
        rounds = (nsusp + ngood - 1) / ngood;
        if (rounds > max_rounds)
            rounds = max_rounds;
        for (int k = 0; k < rounds; k++)
            for (int j = 0; j < ngood && k * ngood + j < nsusp; j++) {
                int sus = suspects[k * ngood + j], g = goods[j];
                partner[k * n + sus] = g;
                partner[k * n + g] = sus;
            }
    }
    free(goods);
    free(suspects);
    return rounds;
}

/* "2, 5" into out. */
static void rank_list(const unsigned *culprit, unsigned kind, int n,
                      char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int r = 0; r < n && used + 16 < len; r++)
        if (culprit[r] & kind)
            used += (size_t)snprintf(out + used, len - used, "%s%d",
                                     used ? ", " : "", r);
}

/* Append to note what rank r's links and confirmation showed. */
static void say_culprit(int n, int r, unsigned kinds, const double *gbps,
                        const long *wrong, const unsigned *ring_bad,
                        const struct pf_confirm *c, char *note, size_t len)
{
    size_t used = strlen(note);
    int l = (r + n - 1) % n, m = (r + 1) % n;
    unsigned lb = ring_bad[l], mb = ring_bad[r];

    if (used + 2 >= len)
        return;
    if (kinds & PF_LINK_SLOW) {
        if ((lb & mb) & PF_LINK_SLOW)
            used += (size_t)snprintf(note + used, len - used, "%srank %d's "
                                     "links are both slow (%d-%d %.3f GB/s, "
                                     "%d-%d %.3f GB/s)", used ? "; " : "", r,
                                     l, r, good(gbps[l]), r, m,
                                     good(gbps[r]));
        else
            used += (size_t)snprintf(note + used, len - used, "%srank %d's "
                                     "link to %d is slow (%.3f GB/s)",
                                     used ? "; " : "", r,
                                     lb & PF_LINK_SLOW ? l : m,
                                     good(gbps[lb & PF_LINK_SLOW ? l : r]));
        if (used < len)
            used += (size_t)snprintf(note + used, len - used, ", and with "
                                     "rank %d (proven good) %.3f GB/s",
                                     c->good, good(c->gbps));
    }
    if ((kinds & PF_LINK_DATA) && used < len) {
        if ((lb & mb) & PF_LINK_DATA)
            used += (size_t)snprintf(note + used, len - used, "%srank %d's "
                                     "links both carry wrong data (%d-%d %ld, "
                                     "%d-%d %ld wrong)", used ? "; " : "", r,
                                     l, r, wrong[l], r, m, wrong[r]);
        else
            used += (size_t)snprintf(note + used, len - used, "%srank %d's "
                                     "link to %d carries wrong data (%ld "
                                     "wrong)", used ? "; " : "", r,
                                     lb & PF_LINK_DATA ? l : m,
                                     wrong[lb & PF_LINK_DATA ? l : r]);
        if (used < len)
            snprintf(note + used, len - used, ", and with rank %d (proven "
                     "good) %ld wrong", c->good, c->wrong);
    }
}

/* Append the suspects whose re-test fell just under the floor, within
 * the margin, and were not blamed for it (the first 4 and a count). */
static void say_marginal(const int *marginal, int nmarginal,
                         double slow_below, char *note, size_t len)
{
    size_t used = strlen(note);

    if (nmarginal == 0 || used + 2 >= len)
        return;
    used += (size_t)snprintf(note + used, len - used, "; not blamed, within "
                             "%.0f %% of the floor %.3f GB/s on the re-test: "
                             "rank", (1 - PF_STRAG_CLEAR_RATIO) * 100,
                             slow_below);
    for (int i = 0; i < nmarginal && i < 4 && used < len; i++)
        used += (size_t)snprintf(note + used, len - used, "%s %d",
                                 i ? "," : "", marginal[i]);
    if (nmarginal > 4 && used < len)
        snprintf(note + used, len - used, " and %d more", nmarginal - 4);
}

int pf_pairs_blame(int n, const double *ring_gbps, const long *ring_wrong,
                   const unsigned *ring_bad, const struct pf_confirm *conf,
                   int nconf, double slow_below, unsigned *culprit,
                   char *note, size_t len)
{
    int count = 0, nbad = 0, ngood = 0, marginal[4], nmarginal = 0;
    unsigned seen = 0;
    char who[160];

    for (int r = 0; r < n; r++)
        culprit[r] = 0;
    if (len)
        note[0] = '\0';
    if (n < 2) {
        snprintf(note, len, "%d rank(s): no link to test", n);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        seen |= ring_bad[i];
        nbad += ring_bad[i] != 0;
        ngood += !ring_bad[i] && !ring_bad[(i + n - 1) % n];
    }
    if (n == 2) {
        snprintf(note, len, "2 ranks share one link (%.3f GB/s%s): a pairwise "
                 "test cannot tell which end is at fault",
                 good(ring_gbps[0]), ring_wrong[0] > 0 ? ", wrong data" : "");
        return 0;
    }
    if (nbad == 0) {
        if (slow_below > 0)
            snprintf(note, len, "pairwise: every link good (%d links at or "
                     "above %.3f GB/s, right data)", n, slow_below);
        else
            snprintf(note, len, "pairwise: every link carried right data "
                     "(%d links; speed not judged: no floor)", n);
        return 0;
    }
    if (ngood == 0) {
        snprintf(note, len, "pairwise: %d of %d links %s, and no rank has two "
                 "good links: no node proven good to confirm against, none "
                 "blamed", nbad, n,
                 seen == (PF_LINK_SLOW | PF_LINK_DATA) ? "slow or wrong"
                 : seen & PF_LINK_DATA ? "carry wrong data" : "slow");
        return 0;
    }
    /* A suspect fails when its re-test with a node proven good is bad in a
     * way one of its ring links was; slow only when clearly under the
     * floor (PF_STRAG_CLEAR_RATIO). */
    for (int k = 0; k < nconf; k++) {
        const struct pf_confirm *c = &conf[k];
        unsigned bad;
        int r = c->suspect;
        if (r < 0 || r >= n)
            continue;
        bad = c->bad & (ring_bad[r] | left_bad(n, ring_bad, r));
        if ((bad & PF_LINK_SLOW) && slow_below > 0 &&
            good(c->gbps) >= PF_STRAG_CLEAR_RATIO * slow_below) {
            bad &= ~PF_LINK_SLOW;
            if (nmarginal < 4)
                marginal[nmarginal] = r;
            nmarginal++;
        }
        culprit[r] |= bad;
    }
    for (int r = 0; r < n; r++)
        count += culprit[r] != 0;
    if (2 * count > n) {
        for (int r = 0; r < n; r++)
            culprit[r] = 0;
        snprintf(note, len, "pairwise: %d of %d ranks failed their links and "
                 "the re-test with a node proven good: not a minority, the "
                 "fabric as a whole is suspect, none blamed", count, n);
        return 0;
    }
    if (count == 0) {
        snprintf(note, len, "pairwise: %d of %d links %s, but %s suspect "
                 "passed its re-test with a node proven good (%d re-test%s): "
                 "no node singled out", nbad, n,
                 seen & PF_LINK_DATA ? "bad" : "slow",
                 nmarginal ? "no clear failure: every other" : "every",
                 nconf, nconf == 1 ? "" : "s");
        say_marginal(marginal, nmarginal, slow_below, note, len);
        return 0;
    }
    snprintf(note, len, "pairwise: ");
    for (int r = 0; r < n; r++) {
        const struct pf_confirm *c = NULL;
        if (!culprit[r])
            continue;
        for (int k = 0; k < nconf && !c; k++)
            if (conf[k].suspect == r)
                c = &conf[k];
        if (c)
            say_culprit(n, r, culprit[r], ring_gbps, ring_wrong, ring_bad, c,
                        note + 10, len > 10 ? len - 10 : 0);
    }
    if (slow_below > 0 && strlen(note) + 40 < len) {
        rank_list(culprit, PF_LINK_SLOW, n, who, sizeof(who));
        if (who[0])
            snprintf(note + strlen(note), len - strlen(note), " (slow below "
                     "%.3f GB/s)", slow_below);
    }
    say_marginal(marginal, nmarginal, slow_below, note, len);
    return count;
}

/* The ring-neighbour rule alone (no re-test with a node proven good),
 * for the ranks of one node (inside.c), where every link is local. */
/* "2, 5" into out. */
static void bool_rank_list(const bool *culprit, int n, char *out, size_t len)
{
    size_t used = 0;

    out[0] = '\0';
    for (int r = 0; r < n && used + 16 < len; r++)
        if (culprit[r])
            used += (size_t)snprintf(out + used, len - used, "%s%d",
                                     used ? ", " : "", r);
}

int pf_straggler_blame(int n, const double *link_gbps, const long *link_wrong,
                       bool *culprit, char *note, size_t len)
{
    bool data = false, *bad;
    double best = 0;
    int count = 0, stray = -1;
    char who[256];

    for (int r = 0; r < n; r++)
        culprit[r] = false;
    if (n < 2) {
        snprintf(note, len, "%d rank(s): no link to test", n);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        data |= link_wrong && link_wrong[i] > 0;
        if (good(link_gbps[i]) > best)
            best = good(link_gbps[i]);
    }
    if (n == 2) {
        snprintf(note, len, "2 ranks share one link (%.3f GB/s%s): a pairwise "
                 "test cannot tell which end is at fault", good(link_gbps[0]),
                 data ? ", wrong data" : "");
        return 0;
    }
    if (!data) {
        /* The classic one straggler keeps its words. */
        int one = pf_straggler_from_links(n, link_gbps, note, len);
        if (one >= 0) {
            culprit[one] = true;
            return 1;
        }
    }
    bad = calloc((size_t)n, sizeof(*bad));
    if (!bad) {
        snprintf(note, len, "pairwise: out of memory");
        return 0;
    }
    /* A bad link carried wrong data or, when none did, ran below
     * PF_STRAG_LINK_RATIO of the best link. */
    for (int i = 0; i < n; i++)
        bad[i] = data ? link_wrong[i] > 0
                      : good(link_gbps[i]) < PF_STRAG_LINK_RATIO * best;
    for (int r = 0; r < n; r++) {
        culprit[r] = bad[r] && bad[(r + n - 1) % n];
        count += culprit[r];
    }
    for (int i = 0; i < n; i++)
        if (bad[i] && !culprit[i] && !culprit[(i + 1) % n])
            stray = i;
    free(bad);
    /* Blame only what the links prove: every bad link ends at a culprit,
     * and the culprits are a minority (else the fabric as a whole is). */
    if (count == 0 || stray >= 0 || 2 * count > n) {
        for (int r = 0; r < n; r++)
            culprit[r] = false;
        if (data)
            snprintf(note, len, "pairwise: the links that carried wrong data "
                     "do not single out a minority of ranks: no node is "
                     "blamed");
        else if (len && note[0] == '\0')
            snprintf(note, len, "pairwise: no rank singled out");
        return 0;
    }
    bool_rank_list(culprit, n, who, sizeof(who));
    snprintf(note, len, "pairwise: rank%s %s %s both links %s while every "
             "other rank has a good one", count > 1 ? "s" : "", who,
             count > 1 ? "have" : "has", data ? "carry wrong data" : "slow");
    return count;
}

int pf_straggler_from_times(int n, const double *secs, char *note,
                            size_t len)
{
    int worst = 0;
    double next = -1;

    if (n < 2) {
        snprintf(note, len, "%d rank(s): no timings to compare", n);
        return -1;
    }
    for (int r = 1; r < n; r++)
        if (good(secs[r]) > good(secs[worst]))
            worst = r;
    for (int r = 0; r < n; r++)
        if (r != worst && good(secs[r]) > next)
            next = good(secs[r]);
    if (good(secs[worst]) > PF_STRAG_TIME_RATIO * next) {
        snprintf(note, len, "per-rank timings: rank %d took %.4f s per "
                 "all_reduce, the next slowest %.4f s", worst,
                 good(secs[worst]), next);
        return worst;
    }
    double fastest = good(secs[0]);
    for (int r = 1; r < n; r++)
        if (good(secs[r]) < fastest)
            fastest = good(secs[r]);
    snprintf(note, len, "per-rank timings %.4f..%.4f s per all_reduce: no "
             "rank stands out (in a ring every rank waits for the slowest)",
             fastest, good(secs[worst]));
    return -1;
}

/* "1-2 128 wrong" or "1-2 0.412 GB/s" for link i into out. */
static int link_words(int n, int i, unsigned kind, const double *gbps,
                      const long *wrong, char *out, size_t len)
{
    if (kind & PF_LINK_DATA)
        return snprintf(out, len, "%d-%d %ld wrong", i, (i + 1) % n,
                        wrong[i]);
    return snprintf(out, len, "%d-%d %.3f GB/s", i, (i + 1) % n,
                    gbps[i] > 0 ? gbps[i] : 0);
}

int pf_inside_ring_blame(int n, const double *gbps, const long *wrong,
                         const unsigned *ring_bad, unsigned *culprit,
                         char *note, size_t len)
{
    static const unsigned kinds[] = { PF_LINK_DATA, PF_LINK_SLOW };
    char buf[320];
    size_t used = 0;
    int count = 0;

    for (int r = 0; r < n; r++)
        culprit[r] = 0;
    if (n < 3)
        return 0;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        unsigned kind = kinds[k];
        int blamed = 0, stray = 0;
        for (int r = 0; r < n; r++)
            if ((ring_bad[r] & kind) && (ring_bad[(r + n - 1) % n] & kind)) {
                culprit[r] |= kind;
                blamed++;
            }
        for (int i = 0; i < n; i++)
            stray += (ring_bad[i] & kind) && !(culprit[i] & kind) &&
                     !(culprit[(i + 1) % n] & kind);
        if (blamed == 0 || stray > 0 || 2 * blamed > n)
            for (int r = 0; r < n; r++)
                culprit[r] &= ~kind;
    }
    for (int r = 0; r < n; r++)
        count += culprit[r] != 0;
    if (count == 0)
        return 0;
    buf[0] = '\0';
    for (int r = 0; r < n && used + 1 < sizeof(buf); r++) {
        char l[64], m[64];
        unsigned kind = culprit[r] & PF_LINK_DATA ? PF_LINK_DATA
                                                  : PF_LINK_SLOW;
        if (!culprit[r])
            continue;
        link_words(n, (r + n - 1) % n, kind, gbps, wrong, l, sizeof(l));
        link_words(n, r, kind, gbps, wrong, m, sizeof(m));
        int w = snprintf(buf + used, sizeof(buf) - used, "%srank %d's links "
                         "%s (%s, %s)", used ? "; " : "", r,
                         kind == PF_LINK_DATA ? "both carry wrong data"
                                              : "are both slow", l, m);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    snprintf(note, len, "pairwise inside this node: %s, while every other "
             "link was good (both ends of a link are this node's ranks, so "
             "a good link clears both)", buf);
    return count;
}
