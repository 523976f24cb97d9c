/* What an all_reduce engine reports back (collective/engine.h): the
 * fabric it ran over and who each of its ranks is. The engines see these
 * and not the collective's results (types/coll.h), which keep them. */
#ifndef PF_TYPES_ENGINE_H
#define PF_TYPES_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

/* Who one global rank is (engine op `describe`); the collective keeps
 * them in pf_inside (types/coll.h). */
struct pf_rank_id {
    int32_t rank;                     /* global rank */
    int32_t proc;                     /* bootstrap rank of its process */
    int32_t gpu;                      /* CUDA device index, -1 = none */
    char bus[20];                     /* the GPU's PCI bus id, "" */
    char nic[64];                     /* the NIC(s) it used (host engine:
                                         EFA devices or addresses), "" */
    int64_t pair_wrong;               /* elements of its results that were
                                         wrong in the pairwise test between
                                         processes (NCCL pairs GPU i with
                                         GPU i: its GPU's own share) */
    double pair_seconds;              /* its own timed exchanges in that
                                         test, summed over the rounds */
};

/* What the engine found out about the fabric it ran over: an engine fills
 * its own (collective/engine.h), the collective keeps it in pf_coll. */
struct pf_fabric_facts {
    char provider[32];                /* host: libfabric provider used */
    bool provider_is_fallback;        /* tcp/shm where efa was expected */
    char transport[128];              /* NCCL: "NET/Libfabric/GDRDMA" etc. */
    char nccl_network[32];            /* "Using network X" */
    bool net_plugin_loaded;
    bool net_gdr;                     /* channels over NET used GDRDMA */
    bool inter_node_socket;           /* channels over NET/Socket */
};

#endif
