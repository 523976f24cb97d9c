/* GPU health as NVML and the kernel log tell it (probe/gpu_health.h): per
 * GPU its names, the fields read (each with its own outcome: a driver may
 * not support one), the counters around the all_reduce and the XIDs seen.
 * Part of struct pf_node; fixed arrays for what one node has. */
#ifndef PF_TYPES_GPU_HEALTH_H
#define PF_TYPES_GPU_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

/* Links asked per GPU: nvml.h's NVML_NVLINK_MAX_LINKS is 18 in CUDA 12
 * and 36 in 13; the loop stops earlier at the first link NVML refuses. */
#define PF_MAX_NVLINKS 64
/* Distinct XIDs kept per GPU and source; more are counted in xid_more. */
#define PF_MAX_XIDS 16
#ifndef PF_MAX_GPUS
#define PF_MAX_GPUS 16                /* as types/node.h */
#endif

/* The fields read, one outcome each. */
enum pf_gpu_field {
    PF_GF_PCI, PF_GF_UUID, PF_GF_SERIAL,
    PF_GF_ECC_MODE, PF_GF_ECC_VOLATILE, PF_GF_ECC_AGGREGATE,
    PF_GF_RETIRED_PAGES, PF_GF_RETIRED_PENDING, PF_GF_REMAPPED_ROWS,
    PF_GF_NVLINK_STATE, PF_GF_NVLINK_ERRORS,
    PF_GF_PCIE_LINK, PF_GF_PCIE_MAX, PF_GF_PCIE_REPLAY,
    PF_GF_CLOCK_EVENTS, PF_GF_PERSISTENCE, PF_GF_MIG, PF_GF_XID_EVENTS,
    PF_GF_COUNT
};

enum pf_gpu_field_state {
    PF_GFS_UNREAD = 0,                /* not asked (GPU lost before it) */
    PF_GFS_OK,
    PF_GFS_UNSUPPORTED,               /* NVML_ERROR_NOT_SUPPORTED, or the
                                         driver lacks the entry point */
    PF_GFS_ERROR,                     /* any other NVML error */
};

struct pf_xid_count {
    int xid;
    int count;
};

struct pf_xid_list {
    int n;
    struct pf_xid_count x[PF_MAX_XIDS];
    int more;                         /* XIDs beyond the PF_MAX_XIDS kept */
};

/* The NVLink data-link error counters, summed over a GPU's links. */
struct pf_nvlink_errs {
    uint64_t replay, recovery, crc_flit, crc_data;
};

struct pf_gpu_state {
    int index;                        /* NVML index */
    char bus_id[32];                  /* "00000000:18:00.0" (NVML) */
    char uuid[96];
    char serial[32];
    char name[96];
    bool lost;                        /* NVML_ERROR_GPU_IS_LOST */
    char lost_in[64];                 /* the call that said so */
    enum pf_gpu_field_state f[PF_GF_COUNT];
    char field_err[160];              /* the first NVML error, if any */

    int ecc_current, ecc_pending;     /* 1 enabled, 0 disabled */
    uint64_t ecc_volatile_unc, ecc_aggregate_unc;
    unsigned retired_sbe, retired_dbe;
    bool retired_pending;
    unsigned remap_corr, remap_unc;
    bool remap_pending, remap_failure;

    int nvlinks;                      /* links NVML answered for */
    int nvlinks_active;
    bool nvlink_present[PF_MAX_NVLINKS]; /* NVML answered for link l */
    bool nvlink_active[PF_MAX_NVLINKS];
    struct pf_nvlink_errs nvl_before, nvl_after;

    unsigned pcie_gen, pcie_width;    /* current, at the probe */
    unsigned pcie_gen_run, pcie_width_run; /* read after the all_reduce
                                         (0 = not read): a link idles at a
                                         lower generation, so only this one
                                         is held against the maximum */
    unsigned pcie_max_gen, pcie_max_width;
    unsigned pcie_replay_before, pcie_replay_after;

    uint64_t clocks_before, clocks_after; /* event-reason bit masks */
    bool clocks_after_read;
    int persistence;                  /* 1 enabled */
    unsigned mig_current, mig_pending;

    struct pf_xid_list xid_run;       /* NVML XID events during the run */
    struct pf_xid_list xid_boot;      /* NVRM: Xid lines since boot */
};

/* A kernel log XID whose bus id names no GPU NVML listed. */
struct pf_xid_stray {
    char bus[16];                     /* "0000:18:00" as the kernel wrote */
    int xid;
    int count;
};

struct pf_gpu_health {
    bool nvml_loaded;                 /* NVML loaded and initialised */
    char nvml_error[256];             /* why not */
    char nvml_path[128];
    char nvml_missing[512];           /* optional entry points absent */
    char driver_version[80];          /* "550.54.15"; "" unread */
    int cuda_driver_version;          /* 12040; 0 unread */
    int count;                        /* GPUs NVML lists */
    int stored;                       /* entries in gpus (<= PF_MAX_GPUS) */
    struct pf_gpu_state gpus[PF_MAX_GPUS];

    bool events_armed;                /* XID event set registered */
    char events_note[160];
    bool window;                      /* counters read around the
                                         all_reduce (else over the run) */
    double window_s;
    bool finished;                    /* the last read was taken */

    bool kmsg_read;                   /* the kernel log was read */
    char kmsg_note[200];              /* why not, or what was seen */
    int nstray;
    struct pf_xid_stray stray[PF_MAX_XIDS];
    double probe_ms;                  /* what reading it all took */
};

#endif
