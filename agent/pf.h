/* The data model: one struct pf_run that flows through the five stages.
 *
 *   config -> probe -> discover -> collective -> verdict -> publish
 *
 * Each stage fills its own part and only reads the parts before it.
 * Fixed-size arrays only for what one node has (EFA devices, GPUs, checks);
 * whatever grows with the run (peers, ranks, links) is on the heap, owned
 * by its struct and released by its free function: pf_config_free,
 * pf_catalog_free, pf_peers_free, pf_coll_free. */
#ifndef PF_H
#define PF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reasons.h"
#include "util/err.h"
#include "util/progress.h"
#include "util/sizes.h"
#include "util/version.h"

#define PF_REPORT_SCHEMA "efa-preflight.io/report/v1"

/* ---------------------------------------------------------------- config */

enum pf_command { PF_CMD_NODE, PF_CMD_RUN, PF_CMD_LOCAL, PF_CMD_CATALOG,
                  PF_CMD_VERSION, PF_CMD_HISTORY, PF_CMD_WEBHOOK,
                  PF_CMD_MONITOR };

struct pf_config {
    enum pf_command command;

    /* where config and catalog came from */
    char config_file[PF_PATH_MAX];
    char catalog_file[PF_PATH_MAX];

    /* probe */
    char instance_type[PF_NAME_MAX];  /* "" = detect */
    char sysfs_root[PF_PATH_MAX];     /* "" = / */
    char dev_root[PF_PATH_MAX];       /* "" = / */
    bool no_imds;
    char imds_endpoint[PF_NAME_MAX];  /* default http://169.254.169.254 */
    int expect_efa;                   /* -1 = from catalog */
    int expect_gpus;                  /* -1 = from catalog */
    int min_memlock_mib;              /* -1 = unlimited required */
    int efa_recount_ms;               /* recount_efa types: re-count budget */
    char libfabric_path[PF_PATH_MAX]; /* "" = EFA installer paths, then ld */

    /* output */
    bool json;                        /* JSON report on stdout */
    char report_file[PF_PATH_MAX];
    char log_level[16];               /* error|warn|info|debug */
    char on_failure[16];              /* fail|continue */
    char metrics_textfile[PF_PATH_MAX];/* node-exporter textfile, "" = off */
    char pushgateway[PF_PATH_MAX];    /* Pushgateway base URL, "" = off */
    char history_dir[PF_PATH_MAX];    /* one report per run, "" = off */
    int history_keep;                 /* reports kept in history_dir */
    int progress_interval;            /* s between progress lines, 0 = none */

    /* collective */
    char bootstrap[16];               /* local|static|mpi|k8s */
    int ranks;                        /* local: rank processes to start */
    char *peers;                      /* static: host:port,... rank order;
                                         heap, NULL = unset */
    int rank;                         /* static: own rank, -1 = unset */
    int world_size;                   /* 0 = derive */
    int port;                         /* rendezvous TCP port */
    char bind_addr[PF_NAME_MAX];      /* own address for rendezvous/fabric */
    int timeout_s;                    /* bounds the whole run */
    char secret_file[PF_PATH_MAX];
    char run_id[PF_NAME_MAX];         /* "" = derive */
    char engine[16];                  /* auto|nccl|host */
    char fabric_provider[32];         /* efa by default */
    uint64_t min_bytes, max_bytes;    /* -b / -e; max 0 = auto: 64 MiB, or
                                         the floor's size when larger */
    int step_factor;                  /* -f */
    int iters, warmup;                /* -n / -w */
    bool check;                       /* verify data */
    double min_busbw_gbps;            /* 0 = catalog floor */
    uint64_t min_busbw_from_bytes;    /* the user floor holds from this size
                                         (0 = the largest size swept) */
    char *fabric_addrs;               /* host engine, socket providers: one
                                         endpoint (NIC) per address; heap,
                                         NULL = the bind address */
    int fabric_lanes;                 /* host engine, socket providers:
                                         endpoints (each with a thread) per
                                         address, 0 = by the cores */
    /* per-NIC checks (verdict/nic_checks.c) */
    double nic_idle_ratio;            /* idle below this x the median NIC */
    uint64_t nic_idle_min_bytes;      /* judge idleness from this mean */
    int nic_max_errors;               /* error counts a NIC may gain in a run */
    int nic_boot_max_errors;          /* ... since boot, before a warning */
    double nic_slow_ratio;            /* slow below this x the median rail */
    int debug_corrupt_rank;           /* -1 = off */
    int debug_slow_rank;              /* -1 = off */
    int debug_slow_ms;
    char debug_counters_after[PF_PATH_MAX]; /* "" = sysfs_root */
    bool debug_floor_any_provider;    /* catalog floors over tcp too */

    /* kubernetes */
    char api_server[PF_NAME_MAX];     /* "" = in-cluster */
    char token_file[PF_PATH_MAX];
    char ca_file[PF_PATH_MAX];
    char pod_name[PF_NAME_MAX];
    char namespace_[PF_NAME_MAX];
    char node_name[PF_NAME_MAX];
    char pod_ip[64];
    char peer_selector[1024];
    char mode[16];                    /* initcontainer|daemonset */
    int group_size;
    char label_prefix[PF_NAME_MAX];
    bool taint_on_failure;
    char max_tainted[16];             /* "20%" or a node count: our mark on at
                                         most this many nodes at once */
    char on_fail_action[24];          /* none|hyperpod-reboot|hyperpod-replace */
    char taint_budget[2 * PF_NAME_MAX]; /* "namespace/name" of the ConfigMap
                                         holding the marked nodes */
    int valid_hours;                  /* valid-until = validated-at + this */
    bool publish;                     /* write to the Node (k8s mode) */

    /* webhook (agent/webhook/): the gate's timeout, port, label prefix and
     * taint_on_failure are the options above, passed on to the gate */
    char webhook_addr[PF_NAME_MAX];   /* "" = every address */
    int webhook_port;                 /* HTTPS port, 0 = the kernel's choice */
    char tls_cert_file[PF_PATH_MAX];  /* PEM; re-read when it changes */
    char tls_key_file[PF_PATH_MAX];
    char agent_image[PF_PATH_MAX];    /* the copy-in image */
    uint64_t webhook_max_body;        /* larger reviews get 413 */
    int webhook_threads;
    /* monitor (agent/monitor/) */
    double interval_s;                /* seconds between reads */
    int monitor_intervals;            /* stop after this many, 0 = never */
    int monitor_raise;                /* K: bad intervals in a row to raise */
    int monitor_clear;                /* M: good intervals in a row to clear */
    char *monitor_thresholds;         /* "counter=per_s,...": heap, NULL =
                                         the defaults only */
    char listen[PF_NAME_MAX];         /* host:port of /metrics, "" = off */
    bool revalidate;                  /* mark idle expired nodes pending */
    bool monitor_taint;               /* taint a NIC fault (budgeted) */
};

/* --------------------------------------------------------------- catalog */

/* Points of a floor curve (and host floors): a handful are given; room
 * for a user's finer curve. */
#define PF_MAX_FLOORS 16

struct pf_floor {
    int nodes;                        /* the node count of this point (host
                                         floors: the NIC count) */
    double busbw_gbps;                /* all_reduce busbw floor, GB/s */
    uint64_t from_bytes;              /* judged at message sizes >= this;
                                         0 = at the largest size swept */
    bool verified;                    /* false where estimated */
    char source[200];                 /* the public figure it rests on */
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
    char notes[256];
};

struct pf_catalog {
    int n;
    struct pf_instance *items;
    int cap;                          /* items allocated (n <= cap) */
};

/* ----------------------------------------------------------------- probe */

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
};

/* -------------------------------------------------------------- discover */

struct pf_peer {
    int rank;
    char host[PF_NAME_MAX];           /* address the rendezvous reaches */
    int port;
    char pod[PF_NAME_MAX];            /* k8s only */
    char node[PF_NAME_MAX];           /* k8s / hello facts */
};

struct pf_peers {
    char bootstrap[16];
    char run_id[PF_NAME_MAX];
    int world;                        /* number of ranks (processes) */
    int rank;                         /* own rank */
    struct pf_peer *list;             /* world entries, rank order */
    char owner[PF_NAME_MAX];          /* k8s: "Kind/uid" every member shares
                                         (keys the rendezvous HMAC), or "" */
    int64_t deadline_ms;              /* the run deadline (util/clock.h) */
    struct pf_fault fault;            /* why the peers could not be found */
    /* DaemonSet: no group though the pool has partners; the node keeps
     * status=pending and the agent exits to be started again. */
    bool stay_pending;
};

/* ------------------------------------------------------------ collective */

#define PF_MAX_ROWS 48

struct pf_row {
    uint64_t bytes;
    uint64_t count;                   /* float32 elements */
    double oop_us, oop_algbw, oop_busbw;
    long oop_wrong;
    double ip_us, ip_algbw, ip_busbw;
    long ip_wrong;
};

/* Straggler localisation (collective/straggler.h): on every run of 3 or
 * more nodes (and whenever the ring missed its floor or data was wrong)
 * each pair of ring neighbours is tested alone, then each suspect again
 * with a node proven good. Ring link i joins rank i and rank (i+1) % n;
 * confirmation links follow them. */
#define PF_LINK_SLOW 1u               /* below the pair floor */
#define PF_LINK_DATA 2u               /* carried wrong data */

struct pf_link {
    int a, b;                         /* bootstrap ranks */
    double seconds;                   /* slower of the two ends' timings */
    double gbps;                      /* bytes x iters x GPUs paired /
                                         seconds / 1e9 */
    long wrong;                       /* elements that arrived wrong, both
                                         directions */
    unsigned bad;                     /* PF_LINK_SLOW | PF_LINK_DATA */
    bool confirm;                     /* a suspect's re-test with a node
                                         proven good (a is the suspect) */
};

struct pf_straggler {
    char method[16];                  /* ""|pairwise|timings */
    int self;                         /* this process's bootstrap rank */
    int nprocs;                       /* bootstrap ranks = rank_seconds
                                         entries; 0 = no sweep finished */
    char note[320];                   /* what the localisation found */
    double floor_gbps;                /* the ring's floor (at N nodes) */
    double pair_floor_gbps;           /* what a link must reach: the 2-node
                                         floor, or a fraction of the median
                                         link (relative); 0 = not judged */
    bool relative;                    /* pair_floor_gbps is relative */
    uint64_t pair_bytes;              /* bytes each way per exchange */
    int pair_iters;                   /* timed exchanges per pair */
    int pair_rounds;                  /* neighbour + confirmation rounds */
    double pair_seconds;              /* wall time of the pairwise phase */
    int nlinks;
    struct pf_link *links;            /* nlinks entries, heap */
    char kind[12];                    /* what was localised: slow|data|
                                         slow+data */
    int nculprits;                    /* ranks singled out by the re-test */
    int *culprits;                    /* nculprits bootstrap ranks, heap */
    unsigned *culprit_bad;            /* per culprit PF_LINK_* (NULL: each
                                         of kind), heap */
};

/* Inside one node (collective/inside.h): when every rank runs on this
 * node, who each global rank is, and which ones the pairwise test of one
 * process's GPUs singled out (the pairwise re-test of pf_straggler works
 * between processes, so it cannot split one process's GPUs). */
struct pf_rank_id {
    int32_t rank;                     /* global rank */
    int32_t proc;                     /* bootstrap rank of its process */
    int32_t gpu;                      /* CUDA device index, -1 = none */
    char bus[20];                     /* the GPU's PCI bus id, "" */
    char nic[64];                     /* the NIC(s) it used (host engine:
                                         EFA devices or addresses), "" */
};

struct pf_inside {
    int nids;                         /* 0 = more than one node */
    struct pf_rank_id *ids;           /* by global rank, heap */
    char method[16];                  /* ""|gpu-pairs */
    char kind[8];                     /* data|slow, as pf_straggler.kind */
    char note[320];                   /* what the GPU pairs showed */
    int nlinks;
    struct pf_link *links;            /* a, b: global ranks; heap */
    int nculprits;
    int *culprits;                    /* global ranks, heap */
};

/* Per-NIC accounting around the collective (collective/nics.h). The
 * hardware counters are read by the harness before and after each stage
 * (the sweep, each pairwise phase), never by the engines; the rails are
 * the engine's own per-NIC bytes and time (host engine: one endpoint per
 * NIC). Arrays are in node.efa order, n = the node's EFA count. */
#define PF_NIC_MAX_WINDOWS 4          /* the sweep + up to 3 pairwise phases */

struct pf_nic_delta {
    uint64_t d[PF_HWC_COUNT];         /* after - before */
    uint32_t present;                 /* read before and after */
    bool went_back;                   /* a counter decreased (device reset):
                                         that counter's delta is 0 */
};

struct pf_nic_window {
    char stage[16];                   /* sweep|pairwise */
    int peer;                         /* pairwise: the partner rank, -1 */
    double seconds;
    struct pf_nic_delta nic[PF_MAX_EFA];
};

struct pf_rail {                      /* one NIC the host engine stripes over */
    char nic[64];                     /* EFA device, or the address (tcp) */
    uint64_t bytes;                   /* sent + received in the sweep */
    double seconds;                   /* summed time until its last chunk */
    double gbps;                      /* bytes / seconds / 1e9 */
    int suspect;                      /* pairwise per rail: the rank whose
                                         NIC on this rail is slow, -1 */
    bool slow;                        /* below nic_slow_ratio x the median */
};

struct pf_nics {
    int n;                            /* EFA devices counted (<= PF_MAX_EFA) */
    bool read;                        /* counters read around the sweep */
    char note[320];                   /* why not, or which counters are absent */
    bool spread;                      /* the engine drives every NIC */
    char spread_note[192];            /* why (not): engine, plugin, nodes */
    int nwin;
    struct pf_nic_window win[PF_NIC_MAX_WINDOWS];
    int nrails;                       /* host engine: NICs it striped over */
    struct pf_rail rails[PF_MAX_EFA];
    bool rails_localised;             /* the pairwise re-test ran per rail */
    char rail_note[384];              /* what the per-rail timings found */
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

struct pf_coll {
    bool ran;
    char engine[16];                  /* nccl|host */
    struct pf_fabric_facts fabric;    /* from the engine */
    int nranks;                       /* global ranks (processes x GPUs) */
    int nnodes;
    uint64_t min_bytes, max_bytes;    /* the sizes swept (max resolved) */
    int nrows;
    struct pf_row rows[PF_MAX_ROWS];
    double avg_busbw;                 /* mean over rows, nccl-tests footer */
    double peak_busbw;                /* best busbw of the largest size */
    long wrong_total;
    double *rank_seconds;             /* per bootstrap rank, time of the
                                         largest size; heap, NULL = no sweep
                                         finished */
    int nrank_seconds;                /* its entries */
    int slow_rank;                    /* straggler, -1 = none found */
    struct pf_straggler strag;        /* how slow_rank was looked for */
    struct pf_nics nics;              /* per-NIC counters and rails */
    struct pf_inside inside;          /* one node: who each rank is */
    struct pf_fault fault;            /* the first failure: err, reason, msg */
    double wall_s;
};

/* --------------------------------------------------------------- verdict */

enum pf_status { PF_PASS = 0, PF_WARN, PF_FAIL, PF_SKIP };

#define PF_MAX_CHECKS 48

struct pf_check {
    char name[48];                    /* efa_devices, memlock, ... */
    enum pf_status status;
    enum pf_reason reason;            /* reasons.h, e.g. EFADeviceCountMismatch */
    char message[384];                /* what was seen vs expected */
    char remedy[256];                 /* one-line fix */
    char condition[24];               /* EFADevicesReady | EFAFabricReady */
};

struct pf_verdict {
    int n;
    struct pf_check checks[PF_MAX_CHECKS];
    enum pf_status overall;
    enum pf_reason headline;          /* the reason that decided the run */
    enum pf_reason_class cls;         /* its class: exit code, label, taint */
    int exit_code;                    /* pf_class_exit_code(cls) */
};

/* ------------------------------------------------------------------- run */

/* The Node a k8s run writes, and how it was before the run marked it as
 * being validated (publish/node.c): a run that ends in a usage error puts
 * it back; the verdict keeps a condition's lastTransitionTime from it. */
struct pf_node_mark {
    char node[PF_NAME_MAX];           /* "" = not resolved yet */
    bool marked;                      /* status=validating was written */
    char *undo_labels;                /* merge patch: our labels as found */
    char *undo_conditions;            /* strategic merge patch: our
                                         conditions as found */
    char instance_type_label[64];     /* its node.kubernetes.io/instance-type,
                                         for the probe when DMI is absent */
};

struct pf_run {
    struct pf_config cfg;
    struct pf_catalog catalog;
    const struct pf_instance *instance; /* NULL = unknown type */
    struct pf_node node;
    struct pf_peers peers;
    struct pf_coll coll;
    struct pf_verdict verdict;
    char started_at[32];              /* RFC 3339 */
    int64_t deadline_ms;              /* the one run deadline (util/clock.h):
                                         set once in main before the probe,
                                         read through pf_run_deadline */
    struct pf_progress progress;      /* progress lines of long phases */
    struct pf_node_mark mark;         /* k8s: pf_publish_begin */
    const atomic_int *cancel;         /* non-zero: a signal ends the run;
                                         API requests stop (NULL = never) */
    /* k8s (set by main): whether peer rank `rank`, awaited by the
     * rendezvous, was stopped before it joined (publish/node.c reads its
     * Node's Interrupted mark); ctx is this run. NULL: never asked. */
    bool (*peer_gone)(void *ctx, int rank, char *why, size_t len);
};

/* After the run deadline, publishing the verdict may take this much longer
 * (README, section Deadlines); then the agent exits whatever the API does. */
#define PF_PUBLISH_GRACE_MS 20000
/* After SIGTERM/SIGINT, the verdict being written may finish, or the Node
 * is rolled forward to status=error, within this much (README, section
 * Deadlines); it fits a terminationGracePeriodSeconds of 10. */
#define PF_SIGNAL_GRACE_MS 8000
/* Metrics go to a Pushgateway last, once the verdict is on the Node and in
 * the report, within this much (and within the publishing grace): a
 * Pushgateway that never answers holds the exit this long at most and
 * never changes the exit code (README, section Deadlines). */
#define PF_PUSH_BUDGET_MS 5000

/* Exit codes (README, "Exit codes"). */
enum { PF_EXIT_PASS = 0, PF_EXIT_FAIL = 1, PF_EXIT_USAGE = 2, PF_EXIT_INFRA = 3,
       PF_EXIT_PEER = 4 };
/* The same, as --help prints them. */
#define PF_EXIT_CODES_HELP                                                   \
    "exit codes: 0 pass, 1 validation failed (this node or the fabric), "   \
    "2 usage/config error,\n  3 infrastructure error (not judged), "        \
    "4 a peer failed, not this node\n"

const char *pf_status_name(enum pf_status s);

#endif
