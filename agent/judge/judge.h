/* The judgement: what the ring and its links are held to, computed once
 * per run into run->coll.judgement (types/judge.h) and read by the sweep,
 * the pairwise phase (collective/straggler.c), the checks (verdict/) and
 * publishing.
 *
 * The floor rule, the one place it is written:
 *  - cfg.min_busbw_gbps, when set, is the floor (held from
 *    cfg.min_busbw_from_bytes on; one size, no curve);
 *  - else the catalog's floor for the instance type (none for a type the
 *    catalog lacks), but only where it measures the same thing. The
 *    provider rule: the provider is efa (tcp/shm numbers say nothing
 *    about EFA, so no catalog floor applies to them, unless
 *    --debug-floor-any-provider asks for it). The engine rule: the engine
 *    is the one the floors were set for (nccl on GPU types, host
 *    elsewhere);
 *  - the host engine across 2+ nodes takes the type's host_floors by the
 *    NICs its ring striped over, where it has them; otherwise, and for
 *    nccl, the node-count curve (judge/floor.h: linear in log2 N between
 *    the catalog's points, flat beyond; each point by message size, linear
 *    in log2 size);
 *  - the ring is held at its node count, by the busbw of the largest size
 *    swept that has a floor (a curve by size), or the best row from the
 *    floor's size on; a ring that reaches no such size is not judged;
 *  - a link between two nodes is held to the floor at 2 nodes, whatever
 *    the run's size, at the smallest size swept from that floor's size on,
 *    raised to cfg.baseline_fraction x the fleet's median pair link where
 *    the fleet baseline has enough runs (a link between the two is
 *    degraded, not failed); without either, relative to the median link
 *    when the ring missed its floor, else by their data only;
 *  - the sweep runs up to the floor's size when -e does not say otherwise
 *    (collective/sweep.h pf_sweep_max_bytes), so a catalogued type is
 *    judged where its floor holds. */
#ifndef PF_JUDGE_H
#define PF_JUDGE_H

#include <stdint.h>

#include "../types/coll.h"
#include "../types/config.h"
#include "../types/judge.h"

struct pf_run;

/* The rule above for one set of inputs: the engine, the provider when it
 * is not EFA (NULL: efa, or a test asked for the floors anyway), the node
 * count and the NICs the host engine stripes over (0: not known). The
 * steps below are its callers. */
void pf_floor_for(const struct pf_config *cfg, const struct pf_instance *it,
                  enum pf_engine_kind engine, const char *fallback_provider,
                  int nnodes, int nics, struct pf_floor_rule *out);

/* The steps (types/judge.h says what each rests on); pf_collective calls
 * them in order, and pf_judge again only when no sweep ran: */
/* 1. Before the engine opens (c->engine_kind and c->nnodes set). */
void pf_judge_plan(struct pf_run *run);
/* 2. Once the engine is open (c->fabric, the rendezvous' c->nnodes). */
void pf_judge_stop(struct pf_run *run);
/* 3. Once the sweep is over, or the pipeline's when discovery failed (the
 *    report still states the floor that would have applied). */
void pf_judge(struct pf_run *run);

/* The busbw the floor is judged against (types/judge.h busbw_gbps) from
 * c's rows under rule; *at_bytes is that row's size. */
double pf_judged_busbw(const struct pf_coll *c,
                       const struct pf_floor_rule *rule, uint64_t *at_bytes);

#endif
