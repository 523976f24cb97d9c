/* The one struct pf_run that flows through the stages
 *
 *   config -> probe -> discover -> collective -> verdict -> publish
 *
 * Each stage fills its own part (its types/<stage>.h) and only reads the
 * parts before it. Fixed-size arrays only for what one node has (EFA
 * devices, GPUs, checks); whatever grows with the run (peers, ranks, links)
 * is on the heap, owned by its struct and released by its free function:
 * pf_config_free, pf_catalog_free, pf_peers_free, pf_coll_free. Neither the
 * transport nor the engines see it. */
#ifndef PF_TYPES_RUN_H
#define PF_TYPES_RUN_H

#include <stdatomic.h>
#include <stdint.h>

#include "../util/progress.h"
#include "baseline.h"
#include "catalog.h"
#include "coll.h"
#include "config.h"
#include "node.h"
#include "peers.h"
#include "publish.h"
#include "verdict.h"

/* The NVML session the GPU health probe keeps open from the probe to the
 * verdict (probe/gpu_health.h), so the XID events and counters can be
 * read around the all_reduce. */
struct pf_gpu_session;

struct pf_run {
    struct pf_config cfg;
    struct pf_catalog catalog;
    const struct pf_instance *instance; /* NULL = unknown type */
    struct pf_node node;
    struct pf_peers peers;
    struct pf_baseline baseline;      /* the fleet's, read before the
                                         collective (baseline/source.h) */
    struct pf_coll coll;
    struct pf_verdict verdict;
    char started_at[32];              /* RFC 3339 */
    int64_t deadline_ms;              /* the one run deadline (util/clock.h):
                                         set once in main before the probe,
                                         read through pf_run_deadline
                                         (config/run_clock.h) */
    struct pf_progress progress;      /* progress lines of long phases */
    struct pf_node_mark mark;         /* k8s: pf_publish_begin */
    struct pf_gpu_session *gpu_session; /* NULL = none open */
    const atomic_int *cancel;         /* non-zero: a signal ends the run;
                                         API requests stop (NULL = never) */
    /* k8s (set by main): whether peer rank `rank`, awaited by the
     * rendezvous, was stopped before it joined (publish/node.c reads its
     * Node's Interrupted mark); ctx is this run. NULL: never asked. */
    bool (*peer_gone)(void *ctx, int rank, char *why, size_t len);
};

#endif
