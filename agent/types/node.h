/* What the probe stage produces (probe/probe.h): the node's facts, EFA
 * devices and their counters, GPUs, libraries, limits. No network, no
 * heap: fixed arrays for what one node has. */
#ifndef PF_TYPES_NODE_H
#define PF_TYPES_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/sizes.h"
#include "gpu_health.h"

#define PF_MAX_EFA 64
#define PF_MAX_GPUS 16

/* The EFA driver's per-port counters (probe/hw_counters.h), one file each
 * under /sys/class/infiniband/<dev>/ports/<port>/hw_counters/. Older
 * drivers lack some (the last five before Nitro v4): a missing file is a
 * fact, its bit in `present` clear, never an error. */
enum pf_hwc {
    PF_HWC_TX_BYTES, PF_HWC_RX_BYTES, PF_HWC_TX_PKTS, PF_HWC_RX_PKTS,
    PF_HWC_RX_DROPS, PF_HWC_SEND_BYTES, PF_HWC_RECV_BYTES,
    PF_HWC_RDMA_READ_BYTES, PF_HWC_RDMA_READ_WR_ERR, PF_HWC_RDMA_WRITE_BYTES,
    PF_HWC_RDMA_WRITE_WR_ERR, PF_HWC_RETRANS_BYTES, PF_HWC_RETRANS_PKTS,
    PF_HWC_RETRANS_TIMEOUT_EVENTS, PF_HWC_UNRESPONSIVE_REMOTE_EVENTS,
    PF_HWC_IMPAIRED_REMOTE_CONN_EVENTS,
    PF_HWC_LIFESPAN,                  /* the kernel's cache period, ms */
    PF_HWC_COUNT
};

/* One device's counters at one moment, summed over its ports. */
struct pf_hwc_snap {
    uint64_t v[PF_HWC_COUNT];
    uint32_t present;                 /* bit c: file c read on every port */
    int nports;                       /* ports with hw_counters; 0 = none */
};

struct pf_efa_dev {
    char name[64];                    /* rdmap16s27 */
    unsigned vendor, device;          /* PCI ids */
    char pci_addr[32];                /* 0000:10:1b.0 */
    char port_state[32];              /* "4: ACTIVE" */
    bool port_active;
    char uverbs[16];                  /* uverbs3, "" = not mapped in sysfs */
    struct pf_hwc_snap hwc;           /* counters at probe time: what the
                                         device counted since it came up */
};

struct pf_gpu {
    char model[96];
    char pci_bus_id[32];
    uint64_t mem_bytes;
};

struct pf_node {
    char hostname[PF_NAME_MAX];
    char instance_type[64];           /* ml. prefix stripped */
    char instance_source[16];         /* flag|dmi|label|imds|none */
    char instance_note[256];          /* why detection failed, if it did */

    int efa_count;                    /* EFA devices by PCI id */
    int non_efa_ib_count;             /* other /sys/class/infiniband entries */
    int efa_ports_active;
    int efa_pci_count;                /* EFA PCI functions, driver or not */
    int efa_recounts;                 /* re-counts done (recount_efa) */
    struct pf_efa_dev efa[PF_MAX_EFA];
    int uverbs_present, uverbs_openable;
    char uverbs_error[256];

    double uptime_s;                  /* /proc/uptime, -1 unreadable: the
                                         age of the since-boot counters */

    bool efa_module_loaded;
    char efa_module_version[64];

    bool libfabric_loaded;
    char libfabric_path[PF_PATH_MAX];
    char libfabric_version[32];       /* "1.22.0" */
    int fi_efa_domains;               /* fi_getinfo(efa, FI_EP_RDM) count */
    char libfabric_error[256];

    uint64_t memlock_soft, memlock_hard; /* bytes; UINT64_MAX = unlimited */
    long hugepages_total, hugepages_free, hugepage_kb;
    bool gdr_supported;               /* EFA device can do RDMA read */

    bool cuda_loaded;
    char cuda_error[256];
    int cuda_runtime_version, cuda_driver_version;
    int gpu_count;
    struct pf_gpu gpus[PF_MAX_GPUS];

    bool nccl_loaded;
    int nccl_version;                 /* X*10000+Y*100+Z */
    char nccl_error[256];

    /* NCCL's net plugin (aws-ofi-nccl), looked up as NCCL would; only
     * when NCCL loads (probe/net_plugin.c). */
    char net_plugin_name[96];         /* the name that loaded, else the
                                         first one tried */
    char net_plugin_path[PF_PATH_MAX];/* "" = not found */
    int net_plugin_api;               /* highest ncclNetPlugin_vN, 0 none */
    char net_plugin_error[512];       /* dlopen errors, or not a plugin */

    /* NVML and the kernel log (probe/gpu_health.h) */
    struct pf_gpu_health gpuh;
};

#endif
