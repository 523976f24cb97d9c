/* The judgement (judge.h): the floor rule, and the steps that apply it
 * once each into run->coll.judgement. */
#include "judge.h"
#include "floor.h"
#include "links.h"

#include <stdio.h>
#include <string.h>

#include "../types/run.h"

/* Bytes each way per pair exchange where no floor judges the links (data
 * and relative speed only): large enough to be bandwidth-bound, small
 * enough that a slow link still finishes well inside the deadline. */
#define PAIR_MAX_BYTES (4u << 20)

/* The rule's size curve from a floor point (none for one size). */
static void rule_sizes(struct pf_floor_rule *r, const struct pf_floor *f)
{
    r->nsizes = pf_floor_sizes(f, r->sizes);
    if (r->nsizes <= 1)
        r->nsizes = 0;
}

/* The one floor rule (judge.h). */
void pf_floor_for(const struct pf_config *cfg, const struct pf_instance *it,
                  enum pf_engine_kind engine, const char *fallback_provider,
                  int nnodes, int nics, struct pf_floor_rule *out)
{
    const struct pf_floor *f, *lo, *hi;
    struct pf_floor pt;
    char where[64] = "";
    bool gpu_type, nccl;

    memset(out, 0, sizeof(*out));
    if (cfg->min_busbw_gbps > 0) {
        /* One size, the user's: no curve. */
        out->gbps = cfg->min_busbw_gbps;
        out->from_bytes = cfg->min_busbw_from_bytes;
        snprintf(out->src, sizeof(out->src), "--min-busbw-gbps");
        return;
    }
    if (fallback_provider) {
        snprintf(out->src, sizeof(out->src), "no floor: provider %s is not "
                 "EFA, so no catalog floor applies", fallback_provider);
        return;
    }
    if (!it) {
        snprintf(out->src, sizeof(out->src), "no floor: instance type not in "
                 "the catalog");
        return;
    }
    gpu_type = !strcmp(it->accel_kind, "gpu");
    nccl = engine == PF_ENGINE_NCCL;
    if (gpu_type != nccl) {
        snprintf(out->src, sizeof(out->src), "no floor: the catalog's floors "
                 "for %s measure the %s engine", it->name,
                 gpu_type ? "nccl" : "host");
        return;
    }
    /* Across nodes the host engine's ring goes through every NIC it
     * striped over: its floor grows with them. */
    f = !nccl && nnodes >= 2 ? pf_instance_host_floor(it, nics) : NULL;
    if (f && f->busbw_gbps > 0) {
        out->gbps = f->busbw_gbps;
        out->from_bytes = f->from_bytes;
        out->verified = f->verified;
        rule_sizes(out, f);
        snprintf(out->src, sizeof(out->src), "catalog host floor for %s over "
                 "%d NIC(s)%s", it->name, nics,
                 f->verified ? "" : ", estimated");
        return;
    }
    if (!pf_floor_points(it, nnodes, &lo, &hi) ||
        !pf_instance_floor(it, nnodes, &pt) || pt.busbw_gbps <= 0) {
        snprintf(out->src, sizeof(out->src), "no floor: none in the catalog "
                 "for %s at %d node(s)", it->name, nnodes);
        return;
    }
    out->gbps = pt.busbw_gbps;
    out->from_bytes = pt.from_bytes;
    out->verified = pt.verified;
    rule_sizes(out, &pt);
    if (lo != hi)
        snprintf(where, sizeof(where), ", between its %d- and %d-node points",
                 lo->nodes, hi->nodes);
    else if (lo->nodes < nnodes)
        snprintf(where, sizeof(where), ", its %d-node point (flat beyond)",
                 lo->nodes);
    else if (lo->nodes > nnodes)
        snprintf(where, sizeof(where), ", its %d-node point (flat below)",
                 lo->nodes);
    snprintf(out->src, sizeof(out->src), "catalog floor for %s at %d "
             "node(s)%s%s", it->name, nnodes, where,
             pt.verified ? "" : ", estimated");
}

/* The provider rule for the engine's provider: NULL when the catalog
 * floors apply to it. */
static const char *engine_fallback(const struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;
    return c->fabric.provider_is_fallback &&
                   !run->cfg.debug_floor_any_provider
               ? c->fabric.provider : NULL;
}

/* The same for a provider asked for on the command line, before the
 * engine has confirmed one. */
static const char *requested_fallback(const struct pf_config *cfg)
{
    const char *p = cfg->fabric_provider;
    return p[0] && strncmp(p, "efa", 3) && !cfg->debug_floor_any_provider
               ? p : NULL;
}

void pf_judge_plan(struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;

    pf_floor_for(&run->cfg, run->instance, c->engine_kind,
                 requested_fallback(&run->cfg), c->nnodes,
                 run->node.efa_count, &run->coll.judgement.planned);
}

void pf_judge_stop(struct pf_run *run)
{
    const struct pf_coll *c = &run->coll;

    pf_floor_for(&run->cfg, run->instance, c->engine_kind,
                 engine_fallback(run), c->nnodes, 0,
                 &run->coll.judgement.stop);
}

double pf_judged_busbw(const struct pf_coll *c,
                       const struct pf_floor_rule *rule, uint64_t *at_bytes)
{
    int nrows = c->nrows < PF_MAX_ROWS ? c->nrows : PF_MAX_ROWS;
    uint64_t from = pf_floor_rule_min_bytes(rule);
    double best = -1;

    *at_bytes = 0;
    if (nrows > 0 && !from) {
        /* No size named: the best of the largest size, as always. */
        *at_bytes = c->rows[nrows - 1].bytes;
        return c->peak_busbw;
    }
    /* A floor by size: the largest size swept that has one, held to the
     * floor at that size. One size: the best row from it on. */
    for (int i = nrows - 1; rule->nsizes > 0 && i >= 0; i--) {
        const struct pf_row *r = &c->rows[i];
        if (r->bytes >= from) {
            *at_bytes = r->bytes;
            return r->oop_busbw > r->ip_busbw ? r->oop_busbw : r->ip_busbw;
        }
    }
    for (int i = 0; rule->nsizes == 0 && i < nrows; i++) {
        const struct pf_row *r = &c->rows[i];
        double bw = r->oop_busbw > r->ip_busbw ? r->oop_busbw : r->ip_busbw;
        if (r->bytes >= from && bw > best) {
            best = bw;
            *at_bytes = r->bytes;
        }
    }
    return best;
}

/* The size the pairs are judged at: the smallest swept size from the
 * 2-node floor's own size on (the largest size when it names none), else
 * the largest swept size at which its size curve holds; 0 when no size
 * swept reaches it. */
static uint64_t pair_judged_bytes(const struct pf_coll *c,
                                  const struct pf_floor_rule *rule)
{
    int nrows = c->nrows < PF_MAX_ROWS ? c->nrows : PF_MAX_ROWS;
    uint64_t min = pf_floor_rule_min_bytes(rule);

    if (nrows < 1)
        return 0;
    if (!rule->from_bytes)
        return c->rows[nrows - 1].bytes;
    for (int i = 0; i < nrows; i++)
        if (c->rows[i].bytes >= rule->from_bytes)
            return c->rows[i].bytes;
    for (int i = nrows - 1; i >= 0; i--)
        if (min && c->rows[i].bytes >= min)
            return c->rows[i].bytes;
    return 0;
}

/* What a link between two nodes must reach: the 2-node floor at the size
 * it holds from, raised by the fleet's baseline there. */
static void judge_pairs(const struct pf_run *run, struct pf_judgement *j)
{
    const struct pf_coll *c = &run->coll;
    const char *type = run->instance ? run->instance->name
                                     : run->node.instance_type;
    uint64_t largest = c->nrows > 0 ? c->rows[c->nrows - 1].bytes : 0;
    uint64_t judged_bytes = 0;
    double f;

    if (c->nnodes >= 2) {
        pf_floor_for(&run->cfg, run->instance, c->engine_kind,
                     engine_fallback(run), 2, c->nics.nrails, &j->pair_rule);
        if (j->pair_rule.gbps > 0)
            judged_bytes = pair_judged_bytes(c, &j->pair_rule);
    }
    j->pair_by_floor = judged_bytes > 0;
    if (j->pair_by_floor)
        j->pair_catalog_gbps = pf_floor_rule_at(&j->pair_rule, judged_bytes);
    j->pair_bytes = judged_bytes ? judged_bytes
                    : largest < PAIR_MAX_BYTES ? largest : PAIR_MAX_BYTES;
    j->pair_bytes = j->pair_bytes / sizeof(float) * sizeof(float);
    if (j->pair_bytes == 0)
        j->pair_bytes = sizeof(float);
    j->pair_gbps = j->pair_catalog_gbps;
    if (j->other_provider)
        return;
    f = pf_base_pair_floor(&run->baseline, type, c->engine, j->pair_bytes,
                           j->pair_catalog_gbps, run->cfg.baseline_fraction,
                           &j->pair_held);
    if (j->pair_held.applied)
        j->pair_gbps = f;
}

void pf_judge(struct pf_run *run)
{
    struct pf_judgement *j = &run->coll.judgement;
    struct pf_floor_rule planned = j->planned, stop = j->stop;

    memset(j, 0, sizeof(*j));
    j->planned = planned;
    j->stop = stop;
    j->done = true;
    j->other_provider = engine_fallback(run) != NULL;
    pf_floor_for(&run->cfg, run->instance, run->coll.engine_kind,
                 engine_fallback(run), run->coll.nnodes,
                 run->coll.nics.nrails, &j->floor);
    j->busbw_gbps = pf_judged_busbw(&run->coll, &j->floor, &j->busbw_bytes);
    /* A floor by size is held at the size judged. */
    if (j->floor.nsizes > 0 && j->busbw_bytes > 0)
        j->floor.gbps = pf_floor_rule_at(&j->floor, j->busbw_bytes);
    j->judged = j->floor.gbps > 0 && j->busbw_gbps >= 0;
    judge_pairs(run, j);
}
