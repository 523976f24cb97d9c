/* Inside one node (collective/inside.h): the node still fails as a whole,
 * but its message names the rank at fault with its GPU (index, PCI bus id)
 * or its NIC, found by the pairwise re-test between its processes or by
 * the pairwise test of one process's GPUs. */
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "GPU 5, bus 0000:1d:00.0" or "NIC efa_2" for one global rank, "" when
 * nothing is known. */
static const char *id_words(const struct pf_rank_id *id, char *buf,
                            size_t len)
{
    if (id->gpu >= 0 && id->bus[0])
        snprintf(buf, len, "GPU %d, bus %s", id->gpu, id->bus);
    else if (id->gpu >= 0)
        snprintf(buf, len, "GPU %d", id->gpu);
    else if (id->nic[0])
        snprintf(buf, len, "NIC %s", id->nic);
    else
        buf[0] = '\0';
    return buf;
}

const char *pf_inside_proc(const struct pf_run *run, int proc, char *buf,
                           size_t len)
{
    const struct pf_inside *in = &run->coll.inside;
    size_t used = 0;

    buf[0] = '\0';
    for (int r = 0; r < in->nids && used + 1 < len; r++) {
        char w[128];
        int n;
        if (in->ids[r].proc != proc || !id_words(&in->ids[r], w, sizeof(w))[0])
            continue;
        n = snprintf(buf + used, len - used, "%s%s", used ? "; " : "", w);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

/* "rank 2 (GPU 2, bus 0000:1a:00.0)" for each culprit; the culprits are
 * global ranks (GPU pairs) or processes (the re-test). */
static void culprits_words(const struct pf_run *run, const int *who, int n,
                           bool procs, char *out, size_t len)
{
    const struct pf_inside *in = &run->coll.inside;
    size_t used = 0;

    out[0] = '\0';
    for (int k = 0; k < n && used + 1 < len; k++) {
        char w[256] = "";
        int m;
        if (procs)
            pf_inside_proc(run, who[k], w, sizeof(w));
        else if (who[k] >= 0 && who[k] < in->nids)
            id_words(&in->ids[who[k]], w, sizeof(w));
        m = snprintf(out + used, len - used, "%srank %d%s%s%s", k ? ", " : "",
                     who[k], w[0] ? " (" : "", w, w[0] ? ")" : "");
        if (m < 0)
            break;
        used += (size_t)m;
    }
}

/* The PF_LINK_* kinds global rank r of in->culprits is at fault for:
 * its process's, as the re-test between processes found them, or the
 * GPU pairs' one kind. */
static unsigned rank_kinds(const struct pf_run *run, int r)
{
    const struct pf_straggler *s = &run->coll.strag;
    const struct pf_inside *in = &run->coll.inside;
    unsigned kinds = (strstr(in->kind, "data") ? PF_LINK_DATA : 0) |
                     (strstr(in->kind, "slow") ? PF_LINK_SLOW : 0);

    if (strcmp(in->method, "pairwise") || r < 0 || r >= in->nids)
        return kinds;
    for (int k = 0; k < s->nculprits && s->culprits; k++)
        if (s->culprits[k] == in->ids[r].proc)
            return s->culprit_bad ? s->culprit_bad[k] : kinds;
    return 0;
}

int pf_inside_culprits(const struct pf_run *run, unsigned kind, int *out,
                       int max)
{
    const struct pf_inside *in = &run->coll.inside;
    int n = 0;

    for (int k = 0; k < in->nculprits && in->culprits && n < max; k++)
        if (rank_kinds(run, in->culprits[k]) & kind)
            out[n++] = in->culprits[k];
    return n;
}

int pf_inside_words(const struct pf_run *run, unsigned kind, char *out,
                    size_t len)
{
    const struct pf_inside *in = &run->coll.inside;
    int *who = calloc((size_t)(in->nculprits > 0 ? in->nculprits : 1),
                      sizeof(*who));
    int n = who ? pf_inside_culprits(run, kind, who, in->nculprits) : 0;

    culprits_words(run, who, n, false, out, len);
    free(who);
    return n;
}

bool pf_verdict_inside(struct pf_run *run, bool data, const char *seen)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_straggler *s = &c->strag;
    const struct pf_inside *in = &c->inside;
    const char *kind = data ? "data" : "slow", *note;
    char who[256];

    if (c->nnodes != 1)
        return false;
    if (pf_inside_words(run, data ? PF_LINK_DATA : PF_LINK_SLOW, who,
                        sizeof(who)) > 0) {
        note = in->note;
    } else if (s->nculprits > 0 && strstr(s->kind, kind) &&
               !strcmp(s->method, "pairwise")) {
        /* Processes the re-test named but whose GPUs it cannot split. */
        culprits_words(run, s->culprits, s->nculprits, true, who, sizeof(who));
        note = s->note;
    } else {
        return false;
    }
    if (data)
        pf_verdict_add(&run->verdict, "data", PF_COND_FABRIC, PF_FAIL,
                       PF_R_DataCorruption, "", "this node corrupts data at "
                       "%s: %s; %s", who, note, seen);
    else
        pf_verdict_add(&run->verdict, "busbw", PF_COND_FABRIC, PF_FAIL,
                       PF_R_NodeBandwidthBelowThreshold, "", "this node is "
                       "slow at %s: %s; %s", who, note, seen);
    return true;
}
