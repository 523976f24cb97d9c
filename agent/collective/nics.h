/* Per-NIC accounting around the collective's stages (run->coll.nics).
 *
 * The harness (collective.c around the sweep, straggler.c around each
 * pairwise phase) brackets a stage with pf_nics_begin / pf_nics_end: every
 * EFA device's hardware counters are read before and after and the deltas
 * become a window. The engines never know. Counters are node-wide: every
 * process on the node, this one's other ranks included, adds to them. */
#ifndef PF_NICS_H
#define PF_NICS_H

#include "../types/run.h"
#include "engine.h"

struct pf_nic_watch {
    bool on;                          /* begin read something */
    double t0;
    struct pf_hwc_snap before[PF_MAX_EFA];
};

/* Read the counters before a stage. */
void pf_nics_begin(struct pf_run *run, struct pf_nic_watch *w);
/* Read them after (once the kernel's cache period has passed) and append
 * a window: stage "sweep" or "pairwise", peer the partner rank or -1. The
 * after read comes from cfg.debug_counters_after when set (tests). */
void pf_nics_end(struct pf_run *run, struct pf_nic_watch *w,
                 const char *stage, int peer);

/* The engine's rails (its own per-NIC accounting, engine op `rails`) at
 * this moment; returns how many, 0 when it keeps none. */
int pf_rails_read(struct pf_engine *e, struct pf_rail_use *out);
/* Rails over the sweep into s->rails: bytes, seconds, GB/s, and `slow`
 * below slow_ratio (cfg.nic_slow_ratio) x the median rail's rate. */
void pf_rails_sweep(struct pf_nics *s, double slow_ratio,
                    const struct pf_rail_use *before,
                    const struct pf_rail_use *after, int n);
/* Whether any rail of this rank came out slow. */
bool pf_rails_any_slow(const struct pf_nics *s);

/* After the engine closed: does it drive every NIC, so that a NIC with
 * far less traffic than its siblings means something (nics.spread and
 * why in nics.spread_note)? NCCL: 2+ nodes over aws-ofi-nccl
 * (NET/Libfabric, no socket channel). Host engine: 2+ nodes over efa with
 * one rail per EFA device. Within one node neither touches the NICs. */
void pf_nics_spread(struct pf_run *run);

#endif
