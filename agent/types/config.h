/* What the config stage produces (config/config.h fills it): the options,
 * flags > env > YAML file > defaults. Released by pf_config_free. */
#ifndef PF_TYPES_CONFIG_H
#define PF_TYPES_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/log.h"
#include "../util/sizes.h"
#include "peers.h"               /* enum pf_bootstrap, which the transport
                                    sees there */

enum pf_command { PF_CMD_NODE, PF_CMD_RUN, PF_CMD_LOCAL, PF_CMD_CATALOG,
                  PF_CMD_VERSION, PF_CMD_HISTORY, PF_CMD_WEBHOOK,
                  PF_CMD_MONITOR, PF_CMD_BASELINE };

/* Options of a small closed set, parsed once (config/config.c): each
 * value is its word's place in the option's choices ("auto|nccl|host"),
 * and config/config.h names it back (pf_engine_name, ...). The log level
 * is util/log.h's enum pf_log_level ("error|warn|info|debug"), the
 * bootstrap types/peers.h's enum pf_bootstrap. */
enum pf_engine_kind { PF_ENGINE_AUTO, PF_ENGINE_NCCL, PF_ENGINE_HOST };
enum pf_mode { PF_MODE_INITCONTAINER, PF_MODE_DAEMONSET };
enum pf_on_failure { PF_ON_FAILURE_FAIL, PF_ON_FAILURE_CONTINUE };
enum pf_fail_action { PF_FAIL_ACTION_NONE, PF_FAIL_ACTION_HYPERPOD_REBOOT,
                      PF_FAIL_ACTION_HYPERPOD_REPLACE };

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
    enum pf_log_level log_level;      /* error|warn|info|debug */
    enum pf_on_failure on_failure;    /* fail|continue */
    char metrics_textfile[PF_PATH_MAX];/* node-exporter textfile, "" = off */
    char pushgateway[PF_PATH_MAX];    /* Pushgateway base URL, "" = off */
    char history_dir[PF_PATH_MAX];    /* one report per run, "" = off */
    int history_keep;                 /* reports kept in history_dir */
    int progress_interval;            /* s between progress lines, 0 = none */

    /* collective */
    enum pf_bootstrap bootstrap;      /* auto (until resolved)|local|static|
                                         mpi|k8s */
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
    enum pf_engine_kind engine;       /* auto|nccl|host */
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
    enum pf_mode mode;                /* initcontainer|daemonset */
    int group_size;
    char label_prefix[PF_NAME_MAX];
    bool taint_on_failure;
    char max_tainted[16];             /* "20%" or a node count: our mark on at
                                         most this many nodes at once */
    enum pf_fail_action on_fail_action; /* none|hyperpod-reboot|
                                           hyperpod-replace */
    char taint_budget[2 * PF_NAME_MAX]; /* "namespace/name" of the ConfigMap
                                         holding the marked nodes */
    int valid_hours;                  /* valid-until = validated-at + this */
    bool publish;                     /* write to the Node (k8s mode) */
    /* the fleet baseline (agent/baseline/, docs/operate/baseline.md) */
    char baseline_configmap[2 * PF_NAME_MAX]; /* "namespace/name"; "" = off */
    char baseline_file[PF_PATH_MAX];  /* --baseline: a JSON summary */
    double baseline_fraction;         /* links held to this x the median */
    bool degraded_fails;              /* BandwidthDegraded fails the node */
    bool baseline_reset;              /* `baseline --reset` */
    char baseline_fold[PF_PATH_MAX];  /* `baseline --fold REPORT` */

    /* webhook (agent/webhook/): the gate's timeout, port, label prefix and
     * taint_on_failure are the options above, passed on to the gate */
    char webhook_addr[PF_NAME_MAX];   /* "" = every address */
    int webhook_port;                 /* HTTPS port, 0 = the kernel's choice */
    char tls_cert_file[PF_PATH_MAX];  /* PEM; re-read when it changes */
    char tls_key_file[PF_PATH_MAX];
    char agent_image[PF_PATH_MAX];    /* the copy-in image */
    char dra_claims[PF_PATH_MAX];     /* claim/template name patterns gated too (DRA) */
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

#endif
