/* The instance-type catalog the config stage loads (config/catalog.h):
 * expected devices and the bandwidth floors per type. Released by
 * pf_catalog_free. */
#ifndef PF_TYPES_CATALOG_H
#define PF_TYPES_CATALOG_H

#include <stdbool.h>
#include <stdint.h>

/* Points of a floor curve (and host floors): a handful are given; room
 * for a user's finer curve. */
#define PF_MAX_FLOORS 16
/* Message sizes one floor point may name (busbw grows with the size). */
#define PF_MAX_SIZE_FLOORS 8

/* busbw floor at one message size. */
struct pf_size_floor {
    uint64_t bytes;
    double gbps;
};

struct pf_floor {
    int nodes;                        /* the node count of this point (host
                                         floors: the NIC count) */
    double busbw_gbps;                /* all_reduce busbw floor, GB/s */
    uint64_t from_bytes;              /* judged at message sizes >= this;
                                         0 = at the largest size swept */
    bool verified;                    /* false where estimated */
    char source[200];                 /* the public figure it rests on */
    /* The point by message size, ascending, from_bytes/busbw_gbps among
     * them: linear in log2 size between two, flat beyond the last, none
     * below the first. nsizes 0 = busbw_gbps at any size (from_bytes 0). */
    int nsizes;
    struct pf_size_floor sizes[PF_MAX_SIZE_FLOORS];
};

/* What a type's GPUs must show (catalog `gpu:`; verdict/gpu_checks.c). */
struct pf_gpu_expect {
    int nvlinks;                      /* NVLink links per GPU; -1 = not
                                         stated, 0 = the GPU has none */
    int pcie_gen, pcie_width;         /* the slot's; 0 = not stated */
    char min_driver[32];              /* "550.54.14"; "" = not stated */
    char min_cuda[16];                /* CUDA driver API, "12.4"; "" = not
                                         stated (same verified flag) */
    bool mig_allowed;                 /* false: MIG must be off */
    bool verified;                    /* links and PCIe: false = an
                                         estimate, held as a warning only */
    bool driver_verified;             /* min_driver: the same */
    char source[200];
};

struct pf_instance {
    char name[64];                    /* "p5.48xlarge" or "hpc7a.*" */
    int efa_count;
    int accel_count;
    char accel_model[32];
    char accel_kind[16];              /* gpu|trainium|none */
    int network_gbps;                 /* 0 = unknown */
    bool verified;                    /* false where FACTS.md says unverified */
    bool gdr_required;
    bool recount_efa;                 /* p5en: EFA may come up late */
    bool ignore_non_efa;              /* p6-b200: extra ibp* devices */
    bool no_nccl;                     /* trn: host engine only */
    int nfloors;                      /* points by node count, ascending */
    struct pf_floor floors[PF_MAX_FLOORS];
    /* host engine floors by the NICs its ring striped over (2+ nodes,
     * efa): `nodes` holds that NIC count here */
    int nhost_floors;
    struct pf_floor host_floors[PF_MAX_FLOORS];
    struct pf_gpu_expect gpu;
    char notes[256];
};

/* A floor as it applies to one run (judge/judge.h pf_floor_for). */
struct pf_floor_rule {
    double gbps;                      /* 0 = no floor */
    uint64_t from_bytes;              /* judged at sizes >= this; 0 = at the
                                         largest size swept */
    bool verified;                    /* false: an estimate */
    char src[192];                    /* where it comes from, or why none */
    /* The floor by message size (pf_floor.sizes; nsizes 0: gbps at every
     * size from from_bytes): judge/floor.h pf_floor_rule_at reads it. */
    int nsizes;
    struct pf_size_floor sizes[PF_MAX_SIZE_FLOORS];
};

struct pf_catalog {
    int n;
    struct pf_instance *items;
    int cap;                          /* items allocated (n <= cap) */
};

#endif
