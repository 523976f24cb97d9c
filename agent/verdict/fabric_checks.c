/* Collective checks, condition EFAFabricReady: did the ranks meet, was
 * every element right, and is the bus bandwidth above the floor.
 *
 * The floor and the busbw held against it are the run's judgement
 * (run->coll.judgement; the rule: judge/judge.h), read here, never
 * decided again. Order matters: the first failing check is the run's
 * headline reason.
 *
 * Each node is judged by its own links (collective/straggler.h): a node
 * the pairwise test singled out fails (StragglerNode for slow links,
 * DataCorruption for wrong data, both when both), and the others warn
 * naming it (SlowPeer, PeerDataCorruption: class peer). Slowness and data
 * are judged apart, so a slow node is named even when another corrupts.
 * The ring is the gang's test, judged against the floor at its node
 * count: when it misses and nobody is singled out, the run fails as a
 * group (BandwidthBelowThreshold), nobody blamed. */
#include "verdict.h"

#include <stdio.h>
#include <string.h>

#include "../discover/discover.h"

#define COND PF_COND_FABRIC

static void human_bytes(char *out, size_t len, uint64_t b)
{
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        snprintf(out, len, "%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        snprintf(out, len, "%llu MiB", (unsigned long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(out, len, "%llu KiB", (unsigned long long)(b >> 10));
    else
        snprintf(out, len, "%llu B", (unsigned long long)b);
}

/* Who rank r is, for messages: "node, address" (either alone when the
 * other is unknown or the same). */
static const char *rank_host(const struct pf_run *run, int r, char *buf,
                             size_t len)
{
    const struct pf_roster *p = &run->coll.roster;
    const char *node, *addr;

    if (!p->list || r < 0 || r >= p->world)
        return "?";
    node = p->list[r].node;
    addr = p->list[r].host;
    if (node[0] && addr[0] && strcmp(node, addr))
        snprintf(buf, len, "%s, %s", node, addr);
    else
        snprintf(buf, len, "%s", node[0] ? node : addr[0] ? addr : "?");
    return buf;
}

/* Whether ranks a and b run on one node, which then fails with its
 * straggler: the one node identity of discover/. */
static bool same_node(const struct pf_run *run, int a, int b)
{
    return pf_roster_same_node(&run->coll.roster, a, b);
}

/* "pod p-2, node-c, 10.0.1.9" for messages: pod where known, node and
 * address. */
static const char *rank_desc(const struct pf_run *run, int r, char *buf,
                             size_t len)
{
    const struct pf_roster *p = &run->coll.roster;
    char host[2 * PF_NAME_MAX + 4], id[160];

    rank_host(run, r, host, sizeof(host));
    id[0] = '\0';
    if (run->coll.nnodes == 1)                  /* one node: GPU or NIC */
        pf_inside_proc(run, r, id, sizeof(id));
    if (p->list && r >= 0 && r < p->world && p->list[r].pod[0])
        snprintf(buf, len, "pod %s, %s%s%s", p->list[r].pod, host,
                 id[0] ? ", " : "", id);
    else
        snprintf(buf, len, "%s%s%s", host, id[0] ? ", " : "", id);
    return buf;
}

/* What the pairwise test blamed culprit k for (PF_LINK_*). */
static unsigned culprit_kinds(const struct pf_straggler *s, int k)
{
    if (s->culprit_bad)
        return s->culprit_bad[k];
    if (!strcmp(s->kind, "slow+data"))
        return PF_LINK_SLOW | PF_LINK_DATA;
    return !strcmp(s->kind, "data") ? PF_LINK_DATA
           : !strcmp(s->kind, "slow") ? PF_LINK_SLOW : 0;
}

/* Culprits of a kind (PF_LINK_*). */
static int count_culprits(const struct pf_run *run, unsigned kind)
{
    const struct pf_straggler *s = &run->coll.strag;
    int n = 0;

    for (int k = 0; k < s->nculprits; k++)
        n += (culprit_kinds(s, k) & kind) != 0;
    return n;
}

/* The culprit of a kind that is this node, or -1: this rank, or a rank
 * on the same node (which fails with it). */
static int own_culprit(const struct pf_run *run, unsigned kind)
{
    const struct pf_straggler *s = &run->coll.strag;

    for (int k = 0; k < s->nculprits; k++)
        if ((culprit_kinds(s, k) & kind) &&
            same_node(run, s->culprits[k], s->self))
            return s->culprits[k];
    return -1;
}

/* "rank 2 (...), rank 5 (...)" for every culprit of a kind. */
static void culprit_list(const struct pf_run *run, unsigned kind, char *out,
                         size_t len)
{
    const struct pf_straggler *s = &run->coll.strag;
    size_t used = 0;

    out[0] = '\0';
    for (int k = 0; k < s->nculprits && used + 8 < len; k++) {
        char who[3 * PF_NAME_MAX];
        if (!(culprit_kinds(s, k) & kind))
            continue;
        used += (size_t)snprintf(out + used, len - used, "%srank %d (%s)",
                                 used ? ", " : "", s->culprits[k],
                                 rank_desc(run, s->culprits[k], who,
                                           sizeof(who)));
    }
}

/* Slow culprits: only their nodes fail; the others warn (class peer), so
 * only a guilty Node gets status=fail and the taint. ring says how the
 * ring did against its own floor. */
static void straggler_check(struct pf_run *run, const char *ring)
{
    const struct pf_straggler *s = &run->coll.strag;
    int mine = own_culprit(run, PF_LINK_SLOW);
    int nslow = count_culprits(run, PF_LINK_SLOW);
    char who[3 * PF_NAME_MAX], all[1024], gpus[256] = "";

    /* A node of several GPUs: the slow ones, when they stand out. */
    if (mine == s->self && run->coll.nranks > s->nprocs)
        pf_inside_words(run, PF_LINK_SLOW, gpus, sizeof(gpus));
    if (mine == s->self)
        pf_verdict_add(&run->verdict, "busbw", COND, PF_FAIL,
                       PF_R_StragglerNode, "", "this node (rank %d, %s) is "
                       "the straggler%s%s: %s; %s", mine,
                       rank_desc(run, mine, who, sizeof(who)),
                       gpus[0] ? " at " : "", gpus, ring, s->note);
    else if (mine >= 0)
        pf_verdict_add(&run->verdict, "busbw", COND, PF_FAIL,
                       PF_R_StragglerNode, "", "this node (%s) runs the "
                       "straggler, rank %d (this is rank %d): %s; %s",
                       rank_desc(run, mine, who, sizeof(who)), mine, s->self,
                       ring, s->note);
    else {
        culprit_list(run, PF_LINK_SLOW, all, sizeof(all));
        pf_verdict_add(&run->verdict, "busbw", COND, PF_WARN, PF_R_SlowPeer,
                       pf_reason_name(PF_R_StragglerNode), "%s %s the "
                       "straggler%s, not this node (rank %d): "
                       "%s; %s", all, nslow > 1 ? "are" : "is",
                       nslow > 1 ? "s" : "", s->self, ring, s->note);
    }
}

/* Wrong elements, in the ring or in the pairwise test, which checked the
 * data of every link: only a node it singled out fails, the others name
 * it (class peer), and with nobody singled out the run fails as a group,
 * nobody blamed. */
static void data_check(struct pf_run *run, long pair_wrong)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_straggler *s = &c->strag;
    char seen[200], who[3 * PF_NAME_MAX], all[1024];
    int mine, ndata = count_culprits(run, PF_LINK_DATA);

    if (c->wrong_total > 0)
        snprintf(seen, sizeof(seen), "%ld wrong elements summed over %d "
                 "ranks and %d sizes (out-of-place and in-place)",
                 c->wrong_total, c->nranks, c->nrows);
    else
        snprintf(seen, sizeof(seen), "the ring's data was right, but %ld "
                 "elements arrived wrong in the pairwise test", pair_wrong);
    if (c->nnodes == 1) {
        /* Every rank is on this node: nothing else to blame, but the rank
         * at fault is named when one was singled out. */
        if (pf_verdict_inside(run, true, seen))
            return;
        /* Why nobody inside it was named (2 ranks: one link). */
        pf_verdict_add(&run->verdict, "data", COND, PF_FAIL,
                       PF_R_DataCorruption, "", "this node (every rank of the "
                       "run) corrupts data: %s%s%s", seen,
                       s->note[0] ? "; " : "", s->note);
        return;
    }
    if (ndata == 0) {
        pf_verdict_add(&run->verdict, "data", COND, PF_FAIL,
                       PF_R_DataCorruptionNotLocalised, "", "%s; no node "
                       "singled out, none blamed%s%s", seen,
                       s->note[0] ? ": " : "", s->note);
        return;
    }
    mine = own_culprit(run, PF_LINK_DATA);
    if (mine >= 0) {
        char gpus[256] = "";
        /* A node of several GPUs: those whose results were wrong. */
        if (c->nranks > s->nprocs)
            pf_inside_words(run, PF_LINK_DATA, gpus, sizeof(gpus));
        pf_verdict_add(&run->verdict, "data", COND, PF_FAIL,
                       PF_R_DataCorruption, "", "this node (rank %d, %s%s) "
                       "corrupts data%s%s: %s; %s", mine,
                       rank_desc(run, mine, who, sizeof(who)),
                       mine == s->self ? "" : ", a rank on this node",
                       gpus[0] ? " at " : "", gpus, seen, s->note);
        return;
    }
    culprit_list(run, PF_LINK_DATA, all, sizeof(all));
    pf_verdict_add(&run->verdict, "data", COND, PF_WARN,
                   PF_R_PeerDataCorruption, "", "%s corrupt%s data, not this "
                   "node (rank %d): %s; %s", all, ndata > 1 ? "" : "s",
                   s->self, seen, s->note);
}

static void bandwidth_check(struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_straggler *s = &c->strag;
    const struct pf_row *last =
        &c->rows[(c->nrows < PF_MAX_ROWS ? c->nrows : PF_MAX_ROWS) - 1];
    /* The floor and the busbw held against it, as the collective left
     * them (run->coll.judgement). */
    const struct pf_floor_rule *rule = &c->judgement.floor;
    char size[32], from[32], floor_txt[240], ring[288], all[1024];
    double floor = rule->gbps;
    uint64_t at_bytes = c->judgement.busbw_bytes;
    double judged = c->judgement.busbw_gbps;
    bool pairwise = !strcmp(s->method, "pairwise");

    if (c->nranks < 2) {
        /* One rank's all_reduce is a local copy: no bus was crossed. */
        pf_verdict_add(&run->verdict, "busbw", COND, PF_SKIP,
                       PF_R_NotApplicable, "", "one rank: the all_reduce moved "
                       "nothing between ranks, so there is no bus bandwidth "
                       "to judge (%s engine; run with 2 or more ranks)",
                       c->engine);
        return;
    }
    human_bytes(from, sizeof(from), rule->from_bytes);
    human_bytes(size, sizeof(size), floor > 0 && judged >= 0 ? at_bytes
                                                             : last->bytes);
    if (floor > 0 && judged >= 0 && judged < floor)
        snprintf(ring, sizeof(ring), "busbw %.2f GB/s at %s is below the "
                 "floor %.2f GB/s from %s (%s)", judged, size, floor,
                 rule->from_bytes ? from : "the largest size", rule->src);
    else if (floor > 0 && judged >= 0)
        snprintf(ring, sizeof(ring), "the ring's busbw %.2f GB/s at %s meets "
                 "its floor %.2f GB/s (%s)", judged, size, floor, rule->src);
    else
        snprintf(ring, sizeof(ring), "the ring's busbw %.2f GB/s at %s",
                 c->peak_busbw, size);
    /* A node is judged by its own links first, whatever the ring did. */
    if (pairwise && count_culprits(run, PF_LINK_SLOW) > 0) {
        straggler_check(run, ring);
        return;
    }
    if (floor > 0 && judged < 0) {
        /* Small messages are latency-bound: a large-message floor says
         * nothing about them, so no pass and no fail. A floor by size
         * holds from its smallest size. */
        human_bytes(size, sizeof(size), last->bytes);
        if (rule->nsizes > 0)
            human_bytes(from, sizeof(from), rule->sizes[0].bytes);
        pf_verdict_add(&run->verdict, "busbw", COND, PF_WARN,
                       PF_R_BandwidthNotJudged, "",
                       "bandwidth not judged: largest size %s below the "
                       "floor's size %s (floor %.2f GB/s, %s); peak busbw "
                       "%.2f GB/s at %s", size, from, floor, rule->src,
                       c->peak_busbw, size);
        return;
    }
    if (floor > 0 && judged < floor) {
        if (pairwise && count_culprits(run, PF_LINK_SLOW | PF_LINK_DATA) > 0) {
            /* Someone was singled out (for wrong data): the ring's miss is
             * put down to them, not to the group. */
            culprit_list(run, PF_LINK_SLOW | PF_LINK_DATA, all, sizeof(all));
            pf_verdict_add(&run->verdict, "busbw", COND, PF_WARN,
                           PF_R_SlowPeer, pf_reason_name(PF_R_StragglerNode),
                           "%s: %s singled out by the pairwise test, not "
                           "this node (rank %d); %s", ring,
                           all, s->self, s->note);
            return;
        }
        if (c->nnodes == 1) {
            /* One node: every rank is here, so is the fault. */
            if (pf_verdict_inside(run, false, ring))
                return;
            pf_verdict_add(&run->verdict, "busbw", COND, PF_FAIL,
                           PF_R_NodeBandwidthBelowThreshold, "",
                           "%s: %d ranks on this node alone, %s engine over "
                           "%s", ring, c->nranks, c->engine,
                           c->fabric.provider[0] ? c->fabric.provider : "-");
            return;
        }
        /* No node singled out: the job must not start, but no node is
         * blamed (class group: no status=fail, no taint). */
        pf_verdict_add(&run->verdict, "busbw", COND, PF_FAIL,
                       PF_R_BandwidthBelowThreshold, "",
                       "%s: %d ranks on %d node(s), %s engine over %s; no node "
                       "singled out, none blamed%s%s",
                       ring, c->nranks, c->nnodes, c->engine,
                       c->fabric.provider[0] ? c->fabric.provider : "-",
                       s->note[0] ? ": " : "", s->note);
        return;
    }
    if (floor > 0)
        snprintf(floor_txt, sizeof(floor_txt), "floor %.2f GB/s from %s (%s)",
                 floor, rule->from_bytes ? from : "the largest size",
                 rule->src);
    else
        snprintf(floor_txt, sizeof(floor_txt), "%s", rule->src);
    pf_verdict_add(&run->verdict, "busbw", COND, PF_PASS, PF_R_None, "",
                   "busbw %.2f GB/s at %s, avg %.2f GB/s over %d sizes, "
                   "%ld wrong: %d ranks on %d node(s), %s engine over %s; %s",
                   floor > 0 ? judged : c->peak_busbw, size, c->avg_busbw,
                   c->nrows, c->wrong_total, c->nranks, c->nnodes, c->engine,
                   c->fabric.provider[0] ? c->fabric.provider : "-", floor_txt);
}

/* The fleet baseline the pair links were held to (baseline/): a culprit
 * whose links met the catalog floor but not the baseline is degraded, a
 * warning (a failure with --degraded-fails) naming its links and the
 * baseline; otherwise the check says what the links were held to, or why
 * the catalog floor alone judged them. */
static void baseline_check(struct pf_run *run)
{
    const struct pf_straggler *s = &run->coll.strag;
    const struct pf_base_held *h = &s->held;
    int mine = own_culprit(run, PF_LINK_DEGRADED);
    char links[640], size[32];
    size_t used = 0;

    if (strcmp(s->method, "pairwise") || !h->note[0])
        return;
    if (mine < 0) {
        pf_verdict_add(&run->verdict, "baseline", COND, PF_PASS, PF_R_None,
                       "", "%s", h->note);
        return;
    }
    links[0] = '\0';
    for (int i = 0; i < s->nlinks && s->links && used + 48 < sizeof(links);
         i++) {
        const struct pf_link *l = &s->links[i];
        if (l->a != mine && l->b != mine)
            continue;
        used += (size_t)snprintf(links + used, sizeof(links) - used,
                                 "%s%s %d-%d %.4g GB/s", used ? ", " : "",
                                 l->confirm ? "with a node proven good"
                                            : "link", l->a, l->b, l->gbps);
    }
    human_bytes(size, sizeof(size), h->bytes);
    pf_verdict_add(&run->verdict, "baseline", COND,
                   run->cfg.degraded_fails ? PF_FAIL : PF_WARN,
                   PF_R_BandwidthDegraded, "", "this node (rank %d): %s at "
                   "%s, below %.4g GB/s = %.2f x the fleet's median pair "
                   "link %.4g GB/s (%d runs); the catalog floor %.4g GB/s "
                   "alone would have passed it", mine, links, size,
                   h->floor_gbps, h->fraction, h->median_gbps, h->runs,
                   h->catalog_gbps);
}

/* Wrong elements the pairwise test saw on any link. */
static long pair_wrong(const struct pf_straggler *s)
{
    long w = 0;

    for (int i = 0; i < s->nlinks && s->links; i++)
        w += s->links[i].wrong;
    return w;
}

void pf_verdict_fabric(struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;
    struct pf_verdict *v = &run->verdict;

    /* Peers that could not be found, else a collective that failed. */
    const struct pf_fault *f = run->peers.fault.err != PF_OK ? &run->peers.fault
                                                             : &c->fault;

    if (f->err != PF_OK) {
        enum pf_reason reason = f->reason != PF_R_None ? f->reason
                                                       : PF_R_CollectiveFailed;
        pf_verdict_add(v, "collective", COND, PF_FAIL, reason, "", "%s",
                       f->msg[0] ? f->msg : pf_err_name(f->err));
    } else if (c->ran && c->nrows > 0) {
        long pw = pair_wrong(&c->strag);
        if (c->wrong_total > 0 || pw > 0)
            data_check(run, pw);
        if (c->fabric.provider_is_fallback)
            pf_verdict_add(v, "fabric_provider", COND, PF_WARN,
                           PF_R_ProviderFallback, "",
                           "provider %s in use because it was asked for: "
                           "EFA itself was not tested",
                           c->fabric.provider);
        /* A named NIC is a cause, a ring below its floor the symptom.
         * Speed is judged whatever the data did: faults found together. */
        pf_verdict_nics(run);
        bandwidth_check(run);
        baseline_check(run);
    }
    pf_verdict_transport(run);
}
