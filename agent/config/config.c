/* config: defaults < YAML file < EFA_PREFLIGHT_* env < flags.
 *
 * One table lists every option once; the flag, env and YAML names are
 * derived from its key, so the three can never drift apart. */
#include "config.h"
#include "../types/run.h"

#include "../util/kubeapi.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "../util/fsutil.h"
#include "../util/yamldoc.h"

/* OPT_TEXT: a heap string (char *) as long as its source allows, for
 * values that grow with the run (--peers); pf_config_free releases it. */
enum opt_type { OPT_STR, OPT_INT, OPT_DOUBLE, OPT_BOOL, OPT_SIZE, OPT_ENUM,
                OPT_TEXT };

/* Which commands show an option in --help and accept it as a flag. YAML and
 * env accept every option, so one file can serve every command. */
#define C_NODE (1u << PF_CMD_NODE)
#define C_RUN (1u << PF_CMD_RUN)
#define C_LOCAL (1u << PF_CMD_LOCAL)
#define C_CATALOG (1u << PF_CMD_CATALOG)
#define C_VERSION (1u << PF_CMD_VERSION)
#define C_HISTORY (1u << PF_CMD_HISTORY)
#define C_WEBHOOK (1u << PF_CMD_WEBHOOK)
#define C_MON (1u << PF_CMD_MONITOR)
#define C_BASE (1u << PF_CMD_BASELINE)
#define C_CHECKS (C_NODE | C_RUN | C_LOCAL)
#define C_COLL (C_RUN | C_LOCAL)
/* What the monitor reads like `node` does (the probe, the catalog). */
#define C_PROBE (C_CHECKS | C_MON)
#define C_ALL (C_CHECKS | C_CATALOG | C_VERSION | C_HISTORY | C_WEBHOOK | C_MON | \
               C_BASE)

struct opt_spec {
    const char *key;      /* YAML key; flag = key with '-', env = upper */
    char shortopt;
    enum opt_type type;
    size_t off, size;
    double min, max;      /* INT, DOUBLE, SIZE */
    const char *choices;  /* ENUM: "a|b|c"; the field, an enum, holds the
                             word's place (0 for a) */
    unsigned cmds;
    const char *help;
};

#define F(field) offsetof(struct pf_config, field), sizeof(((struct pf_config *)0)->field)

static const struct opt_spec options[] = {
    /* files */
    { "config", 0, OPT_STR, F(config_file), 0, 0, NULL, C_ALL,
      "YAML file with any of these options (keys as in this list, '_' for '-')" },
    { "catalog", 0, OPT_STR, F(catalog_file), 0, 0, NULL, C_PROBE | C_CATALOG,
      "instance catalog YAML that overrides and extends the embedded one" },
    /* probe */
    { "instance_type", 0, OPT_STR, F(instance_type), 0, 0, NULL, C_PROBE,
      "instance type (default: DMI product_name, then the Node's "
      "node.kubernetes.io/instance-type label in k8s mode, then IMDSv2); "
      "'ml.' stripped" },
    { "sysfs_root", 0, OPT_STR, F(sysfs_root), 0, 0, NULL, C_PROBE,
      "read /sys and /proc under this root (tests, fixtures)" },
    { "dev_root", 0, OPT_STR, F(dev_root), 0, 0, NULL, C_PROBE,
      "read /dev under this root" },
    { "no_imds", 0, OPT_BOOL, F(no_imds), 0, 0, NULL, C_PROBE,
      "never ask the EC2 instance metadata service" },
    { "imds_endpoint", 0, OPT_STR, F(imds_endpoint), 0, 0, NULL, C_PROBE,
      "IMDSv2 base URL" },
    { "expect_efa", 0, OPT_INT, F(expect_efa), -1, 256, NULL, C_PROBE,
      "EFA devices this node must have (-1: from the catalog)" },
    { "expect_gpus", 0, OPT_INT, F(expect_gpus), -1, 64, NULL, C_CHECKS,
      "GPUs this node must have (-1: from the catalog)" },
    { "min_memlock_mib", 0, OPT_INT, F(min_memlock_mib), -1, 1 << 30, NULL, C_CHECKS,
      "locked-memory limit required, MiB (-1: unlimited)" },
    { "efa_recount_ms", 0, OPT_INT, F(efa_recount_ms), 0, 600000, NULL, C_CHECKS,
      "how long to re-count EFA devices on types that bring them up late" },
    { "libfabric_path", 0, OPT_STR, F(libfabric_path), 0, 0, NULL, C_CHECKS,
      "libfabric to dlopen (default: /opt/amazon/efa/lib{64,}, then the system's)" },
    /* output */
    { "json", 0, OPT_BOOL, F(json), 0, 0, NULL, C_CHECKS | C_HISTORY | C_CATALOG | C_BASE,
      "print the JSON report on stdout instead of the table (history: one "
      "summary per run; catalog: the catalog with its effective floors)" },
    { "report", 0, OPT_STR, F(report_file), 0, 0, NULL, C_CHECKS,
      "also write the JSON report to this file" },
    { "log_level", 0, OPT_ENUM, F(log_level), 0, 0, "error|warn|info|debug", C_ALL,
      "stderr log level (-v: info, -vv: debug)" },
    { "on_failure", 0, OPT_ENUM, F(on_failure), 0, 0, "fail|continue", C_CHECKS,
      "'continue' exits 0 when validation fails (observe-only)" },
    { "metrics_textfile", 0, OPT_STR, F(metrics_textfile), 0, 0, NULL, C_PROBE,
      "write efa_preflight_* metrics to this *.prom file, atomically, for "
      "node-exporter's textfile collector" },
    { "pushgateway", 0, OPT_STR, F(pushgateway), 0, 0, NULL, C_CHECKS,
      "also push them to this Prometheus Pushgateway URL (job efa_preflight, "
      "instance: the node)" },
    { "history_dir", 0, OPT_STR, F(history_dir), 0, 0, NULL, C_CHECKS | C_HISTORY | C_BASE,
      "keep each run's JSON report in this directory (read by 'history')" },
    { "history_keep", 0, OPT_INT, F(history_keep), 1, 100000, NULL, C_CHECKS,
      "reports kept in history_dir; the oldest are removed" },
    { "progress_interval", 0, OPT_INT, F(progress_interval), 0, 3600, NULL, C_COLL,
      "seconds between progress lines on stderr in long phases (0: none)" },
    /* collective */
    { "bootstrap", 0, OPT_ENUM, F(bootstrap), 0, 0, "auto|local|static|mpi|k8s", C_RUN,
      "how peers are found (auto: k8s in a pod, mpi under mpirun, else static)" },
    /* Rank counts are ints; the wire carries them as u32. What bounds a
     * run is the host (local: launch/local.c) or the engine's data check
     * (collective/engine.h), each saying so. */
    { "ranks", 0, OPT_INT, F(ranks), 0, INT_MAX, NULL, C_LOCAL,
      "local: rank processes to start on this machine (0: one per GPU "
      "when GPUs are present, else 2; at most what the host holds)" },
    { "peers", 0, OPT_TEXT, F(peers), 0, 0, NULL, C_RUN,
      "static: host:port of every rank, comma-separated, rank order" },
    { "rank", 0, OPT_INT, F(rank), -1, INT_MAX - 1, NULL, C_RUN,
      "static: this process's rank" },
    { "world_size", 0, OPT_INT, F(world_size), 0, INT_MAX, NULL, C_RUN,
      "number of ranks (0: from the bootstrap)" },
    { "port", 0, OPT_INT, F(port), 0, 65535, NULL, C_COLL | C_WEBHOOK,
      "rendezvous TCP port on rank 0 (0 picks a free one, local's default; "
      "daemonset: the coordinator listens on port + 1; webhook: the "
      "injected gate's)" },
    { "bind_addr", 0, OPT_STR, F(bind_addr), 0, 0, NULL, C_COLL,
      "address to listen on and advertise (default: any / the pod IP)" },
    { "timeout", 0, OPT_INT, F(timeout_s), 1, 86400, NULL, C_CHECKS | C_WEBHOOK,
      "seconds that bound the whole run, peers included (node: its checks; "
      "then publishing has its grace; webhook: the injected gate's)" },
    { "secret_file", 0, OPT_STR, F(secret_file), 0, 0, NULL, C_COLL,
      "shared secret: ranks sign their HELLO with HMAC-SHA256" },
    { "run_id", 0, OPT_STR, F(run_id), 0, 0, NULL, C_COLL,
      "run identifier every rank must agree on (default: derived)" },
    { "engine", 0, OPT_ENUM, F(engine), 0, 0, "auto|nccl|host", C_COLL,
      "all_reduce engine (auto: nccl when GPUs are present)" },
    { "fabric_provider", 0, OPT_STR, F(fabric_provider), 0, 0, NULL, C_CHECKS,
      "libfabric provider for the host engine (tcp/shm only for testing)" },
    { "min_bytes", 'b', OPT_SIZE, F(min_bytes), 4, 64.0 * (1ull << 30), NULL, C_COLL,
      "smallest message size (K, M, G suffixes)" },
    { "max_bytes", 'e', OPT_SIZE, F(max_bytes), 4, 64.0 * (1ull << 30), NULL, C_COLL,
      "largest message size (default: 64M, or the catalog floor's message "
      "size when larger)" },
    { "step_factor", 'f', OPT_INT, F(step_factor), 2, 1024, NULL, C_COLL,
      "multiply the size by this between rows" },
    { "iters", 'n', OPT_INT, F(iters), 1, 100000, NULL, C_COLL,
      "timed iterations per size" },
    { "warmup", 'w', OPT_INT, F(warmup), 0, 100000, NULL, C_COLL,
      "warm-up iterations per size" },
    { "check", 0, OPT_BOOL, F(check), 0, 0, NULL, C_COLL,
      "verify every element of the result" },
    { "min_busbw_gbps", 0, OPT_DOUBLE, F(min_busbw_gbps), 0, 1e6, NULL, C_COLL,
      "bus bandwidth floor, GB/s (0: the catalog's floor)" },
    { "min_busbw_from_bytes", 0, OPT_SIZE, F(min_busbw_from_bytes), 4, 64.0 * (1ull << 30),
      NULL, C_COLL, "message size from which --min-busbw-gbps holds (default: "
      "the largest size swept)" },
    { "fabric_addrs", 0, OPT_TEXT, F(fabric_addrs), 0, 0, NULL, C_COLL,
      "host engine over tcp: one endpoint per address, each a NIC (comma-separated; default: the bind address)" },
    { "fabric_lanes", 0, OPT_INT, F(fabric_lanes), 0, PF_MAX_EFA, NULL, C_COLL,
      "host engine over tcp: connections per address, each with its own thread (0: the cores per rank on this host, at most 4)" },
    { "nic_idle_ratio", 0, OPT_DOUBLE, F(nic_idle_ratio), 0, 1, NULL, C_COLL,
      "a NIC that moved less than this x the median NIC's bytes is idle (EFANICIdle)" },
    { "nic_idle_min_bytes", 0, OPT_SIZE, F(nic_idle_min_bytes), 4, 64.0 * (1ull << 30), NULL, C_COLL,
      "judge idleness only when the NICs moved at least this much each on average" },
    { "nic_max_errors", 0, OPT_INT, F(nic_max_errors), 0, 1000000000, NULL, C_COLL,
      "error counts a NIC may gain during the run before EFANICErrors" },
    { "nic_boot_max_errors", 0, OPT_INT, F(nic_boot_max_errors), 0, 1000000000, NULL, C_CHECKS,
      "error counts a NIC may hold since boot before EFANICErrorsSinceBoot (warn)" },
    { "nic_slow_ratio", 0, OPT_DOUBLE, F(nic_slow_ratio), 0, 1, NULL, C_COLL,
      "host engine: a NIC below this x the median NIC's rate is slow (EFANICSlow)" },
    { "debug_corrupt_rank", 0, OPT_INT, F(debug_corrupt_rank), -1, INT_MAX, NULL, C_COLL,
      "testing: this rank flips data" },
    { "debug_slow_rank", 0, OPT_INT, F(debug_slow_rank), -1, INT_MAX, NULL, C_COLL,
      "testing: this rank is slowed down" },
    { "debug_slow_ms", 0, OPT_INT, F(debug_slow_ms), 0, 60000, NULL, C_COLL,
      "testing: delay per step of the slow rank, ms" },
    { "debug_floor_any_provider", 0, OPT_BOOL, F(debug_floor_any_provider), 0, 0, NULL, C_COLL,
      "testing: apply the catalog floors over any provider (tcp between network namespaces)" },
    { "debug_counters_after", 0, OPT_STR, F(debug_counters_after), 0, 0, NULL, C_COLL,
      "testing: read the NIC counters after each stage under this root (a fixture tree)" },
    /* kubernetes */
    { "api_server", 0, OPT_STR, F(api_server), 0, 0, NULL, C_RUN | C_MON | C_BASE,
      "API server URL (default: in-cluster)" },
    { "token_file", 0, OPT_STR, F(token_file), 0, 0, NULL, C_RUN | C_MON | C_BASE,
      "bearer token file (default: the service account's)" },
    { "ca_file", 0, OPT_STR, F(ca_file), 0, 0, NULL, C_RUN | C_MON | C_BASE,
      "CA bundle for the API server (default: the service account's)" },
    { "pod_name", 0, OPT_STR, F(pod_name), 0, 0, NULL, C_RUN | C_MON,
      "own pod (default: $POD_NAME)" },
    { "namespace", 0, OPT_STR, F(namespace_), 0, 0, NULL, C_RUN | C_WEBHOOK | C_MON,
      "own namespace (default: $POD_NAMESPACE; webhook: its Pods are never gated)" },
    { "node_name", 0, OPT_STR, F(node_name), 0, 0, NULL, C_RUN | C_MON,
      "own node (default: $NODE_NAME)" },
    { "pod_ip", 0, OPT_STR, F(pod_ip), 0, 0, NULL, C_RUN,
      "own pod IP (default: $POD_IP)" },
    { "peer_selector", 0, OPT_STR, F(peer_selector), 0, 0, NULL, C_RUN,
      "label selector of the peer pods (default: from own labels)" },
    { "mode", 0, OPT_ENUM, F(mode), 0, 0, "initcontainer|daemonset", C_RUN,
      "k8s: gate a job (initcontainer) or validate pending nodes (daemonset)" },
    { "group_size", 0, OPT_INT, F(group_size), 1, INT_MAX, NULL, C_RUN,
      "daemonset: nodes validated together" },
    { "label_prefix", 0, OPT_STR, F(label_prefix), 0, 0, NULL, C_RUN | C_WEBHOOK | C_MON,
      "prefix of the labels written on the Node" },
    { "taint_on_failure", 0, OPT_BOOL, F(taint_on_failure), 0, 0, NULL, C_RUN | C_WEBHOOK,
      "add efa-preflight.io/unhealthy:NoSchedule on failure (removed on pass)" },
    { "max_tainted", 0, OPT_STR, F(max_tainted), 0, 0, NULL, C_RUN | C_MON,
      "at most this many nodes (N, or N% of the cluster) carry our taint or "
      "recovery label at once; beyond it a failing node is labelled only" },
    { "on_fail_action", 0, OPT_ENUM, F(on_fail_action), 0, 0,
      "none|hyperpod-reboot|hyperpod-replace", C_RUN,
      "on a node proven faulty, ask SageMaker HyperPod to reboot or replace "
      "it (node-health-status label), under max_tainted" },
    { "taint_budget", 0, OPT_STR, F(taint_budget), 0, 0, NULL, C_RUN | C_WEBHOOK | C_MON,
      "namespace/name of the ConfigMap that holds the nodes carrying our "
      "taint or recovery label: max_tainted is taken from it atomically "
      "(webhook: the injected gate's)" },
    { "valid_hours", 0, OPT_INT, F(valid_hours), 1, 24 * 365, NULL, C_RUN | C_WEBHOOK,
      "valid-until = validated-at + this many hours (webhook: the injected gate's)" },
    { "publish", 0, OPT_BOOL, F(publish), 0, 0, NULL, C_RUN | C_MON,
      "k8s: write labels, conditions, event and taint on the Node" },
    /* the fleet baseline */
    { "baseline_configmap", 0, OPT_STR, F(baseline_configmap), 0, 0, NULL,
      C_RUN | C_WEBHOOK | C_BASE,
      "k8s: namespace/name of the ConfigMap holding the fleet's baseline "
      "(the last 16 passed runs per type, size and node count; \"\": off; "
      "webhook: the injected gate's)" },
    { "baseline", 0, OPT_STR, F(baseline_file), 0, 0, NULL, C_COLL | C_BASE,
      "a fleet baseline as JSON (what 'baseline --json' prints), used with "
      "or instead of the ConfigMap and --history-dir" },
    { "baseline_fraction", 0, OPT_DOUBLE, F(baseline_fraction), 0, 1, NULL, C_COLL,
      "pair links below this x the baseline's median are BandwidthDegraded "
      "(0: the baseline judges nothing)" },
    { "degraded_fails", 0, OPT_BOOL, F(degraded_fails), 0, 0, NULL, C_COLL,
      "BandwidthDegraded fails the node (default: a warning)" },
    { "fold", 0, OPT_STR, F(baseline_fold), 0, 0, NULL, C_BASE,
      "baseline: fold a passed run's JSON report (--report) into the "
      "baseline ConfigMap, e.g. to seed it from past runs" },
    { "reset", 0, OPT_BOOL, F(baseline_reset), 0, 0, NULL, C_BASE,
      "baseline: delete the fleet's baseline ConfigMap (k8s) so it starts "
      "again" },
    /* webhook */
    { "webhook_addr", 0, OPT_STR, F(webhook_addr), 0, 0, NULL, C_WEBHOOK,
      "webhook: address to listen on (default: every address)" },
    { "webhook_port", 0, OPT_INT, F(webhook_port), 0, 65535, NULL, C_WEBHOOK,
      "webhook: HTTPS port (0: one the kernel picks, printed at start)" },
    { "tls_cert_file", 0, OPT_STR, F(tls_cert_file), 0, 0, NULL, C_WEBHOOK,
      "webhook: serving certificate chain, PEM (re-read when it changes)" },
    { "tls_key_file", 0, OPT_STR, F(tls_key_file), 0, 0, NULL, C_WEBHOOK,
      "webhook: its private key, PEM (re-read when it changes)" },
    { "agent_image", 0, OPT_STR, F(agent_image), 0, 0, NULL, C_WEBHOOK,
      "webhook: the image the injected copy-in initContainer takes the "
      "binary from (/usr/local/bin/efa-preflight)" },
    { "dra_claims", 0, OPT_STR, F(dra_claims), 0, 0, NULL, C_WEBHOOK,
      "webhook: also gate Pods whose spec.resourceClaims name a ResourceClaimTemplate "
      "or ResourceClaim matching one of these comma-separated shell patterns, taken "
      "by a container (EFA or GPUs through DRA; default: none)" },
    { "webhook_max_body", 0, OPT_SIZE, F(webhook_max_body), 4096, 64.0 * (1 << 20), NULL,
      C_WEBHOOK, "webhook: largest AdmissionReview accepted (413 beyond)" },
    { "webhook_threads", 0, OPT_INT, F(webhook_threads), 1, 256, NULL, C_WEBHOOK,
      "webhook: server threads" },
    /* monitor */
    { "interval", 0, OPT_DOUBLE, F(interval_s), 0.05, 86400, NULL, C_MON,
      "seconds between two reads of the NICs' counters" },
    { "monitor_intervals", 0, OPT_INT, F(monitor_intervals), 0, INT_MAX, NULL, C_MON,
      "stop after this many intervals (0: run until SIGTERM)" },
    { "monitor_raise", 0, OPT_INT, F(monitor_raise), 1, 1000, NULL, C_MON,
      "bad reads in a row (a port down, a device gone, an error counter rising) before a NIC fault sets EFANICHealthy False or taints; fewer are only logged" },
    { "monitor_clear", 0, OPT_INT, F(monitor_clear), 1, 1000, NULL, C_MON,
      "good intervals in a row before a NIC fault clears" },
    { "monitor_thresholds", 0, OPT_TEXT, F(monitor_thresholds), 0, 0, NULL, C_MON,
      "counter=rate,... per second a judged counter may rise before an interval is bad "
      "(adds to or overrides the defaults; a rate below 0 stops judging that counter)" },
    { "listen", 0, OPT_STR, F(listen), 0, 0, NULL, C_MON,
      "serve /metrics and /healthz on this host:port (\"\": no endpoint)" },
    { "revalidate", 0, OPT_BOOL, F(revalidate), 0, 0, NULL, C_MON,
      "k8s: mark an idle node pending when valid-until passed or a NIC fault cleared" },
    { "monitor_taint", 0, OPT_BOOL, F(monitor_taint), 0, 0, NULL, C_MON,
      "k8s: taint a node whose NIC fault is proven, under max_tainted (off: condition and Event only)" },
};

#define NOPTS (sizeof(options) / sizeof(options[0]))

/* set_option and print_default reach an enum option's field as an int. */
_Static_assert(sizeof(enum pf_engine_kind) == sizeof(int) &&
               sizeof(enum pf_bootstrap) == sizeof(int) &&
               sizeof(enum pf_mode) == sizeof(int) &&
               sizeof(enum pf_on_failure) == sizeof(int) &&
               sizeof(enum pf_fail_action) == sizeof(int) &&
               sizeof(enum pf_log_level) == sizeof(int),
               "an enum option's field is not int-sized");

pf_err pf_parse_cap(const char *s, int *count, double *pct)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return PF_ERR_USAGE;
    if (!strcmp(end, "%") && v <= 100) {
        *pct = v;
        *count = -1;
        return PF_OK;
    }
    /* The range first: converting a larger value to int is undefined. */
    if (*end || v > 1e6 || v != floor(v))
        return PF_ERR_USAGE;
    *count = (int)v;
    *pct = -1;
    return PF_OK;
}

void pf_config_defaults(struct pf_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->imds_endpoint, sizeof(cfg->imds_endpoint), "http://169.254.169.254");
    cfg->expect_efa = -1;
    cfg->expect_gpus = -1;
    cfg->min_memlock_mib = -1;
    cfg->efa_recount_ms = 3000;
    cfg->log_level = PF_LOG_WARN;
    cfg->on_failure = PF_ON_FAILURE_FAIL;
    cfg->history_keep = 100;
    cfg->progress_interval = 5;
    cfg->bootstrap = PF_BOOT_AUTO;
    cfg->ranks = 0;                   /* fit the host (launch/local.c) */
    cfg->rank = -1;
    cfg->port = 29600;
    cfg->timeout_s = 300;
    cfg->engine = PF_ENGINE_AUTO;
    snprintf(cfg->fabric_provider, sizeof(cfg->fabric_provider), "efa");
    cfg->min_bytes = 8;
    cfg->max_bytes = 0;               /* auto: see pf_sweep_max_bytes */
    cfg->step_factor = 2;
    cfg->iters = 20;
    cfg->warmup = 5;
    cfg->check = true;
    cfg->debug_corrupt_rank = -1;
    cfg->debug_slow_rank = -1;
    cfg->nic_idle_ratio = 0.10;
    cfg->nic_idle_min_bytes = 4ull << 20;
    cfg->nic_max_errors = 0;
    cfg->nic_boot_max_errors = 0;
    cfg->nic_slow_ratio = 0.5;
    cfg->mode = PF_MODE_INITCONTAINER;
    cfg->group_size = 2;
    snprintf(cfg->label_prefix, sizeof(cfg->label_prefix), "efa-preflight.io/");
    snprintf(cfg->max_tainted, sizeof(cfg->max_tainted), "20%%");
    snprintf(cfg->taint_budget, sizeof(cfg->taint_budget),
             "efa-preflight/efa-preflight-taint-budget");
    cfg->on_fail_action = PF_FAIL_ACTION_NONE;
    cfg->valid_hours = 24;
    snprintf(cfg->baseline_configmap, sizeof(cfg->baseline_configmap),
             "efa-preflight/efa-preflight-baseline");
    cfg->baseline_fraction = 0.8;
    cfg->publish = true;
    cfg->webhook_port = 8443;
    cfg->webhook_max_body = 512 * 1024;
    cfg->webhook_threads = 2;
    cfg->interval_s = 30;
    cfg->monitor_raise = 3;
    cfg->monitor_clear = 5;
    cfg->revalidate = true;
}

static const struct opt_spec *find_key(const char *key)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (!strcmp(options[i].key, key))
            return &options[i];
    return NULL;
}

static void flag_name(const struct opt_spec *o, char *out, size_t len)
{
    size_t i;
    for (i = 0; o->key[i] && i + 1 < len; i++)
        out[i] = o->key[i] == '_' ? '-' : o->key[i];
    out[i] = '\0';
}

static void env_name(const struct opt_spec *o, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "EFA_PREFLIGHT_");
    for (size_t i = 0; o->key[i] && n + 1 < len; i++)
        out[n++] = (char)toupper((unsigned char)o->key[i]);
    out[n] = '\0';
}

pf_err pf_parse_size(const char *s, uint64_t *out, char *err)
{
    char *end;
    double v;
    uint64_t mult = 1;

    errno = 0;
    if (!s || !*s || *s == '-')
        return pf_fail(err, PF_ERR_USAGE, "'%s' is not a size", s ? s : "");
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return pf_fail(err, PF_ERR_USAGE, "'%s' is not a size", s);
    if (*end) {
        char u = (char)toupper((unsigned char)*end++);
        if (u == 'K') mult = 1ull << 10;
        else if (u == 'M') mult = 1ull << 20;
        else if (u == 'G') mult = 1ull << 30;
        else if (u == 'B' && !*end) mult = 1;
        else
            return pf_fail(err, PF_ERR_USAGE, "'%s': unknown size unit", s);
        if (u != 'B') {
            if (!strcasecmp(end, "ib") || !strcasecmp(end, "b"))
                end += strlen(end);
        }
        if (*end)
            return pf_fail(err, PF_ERR_USAGE, "'%s': unknown size unit", s);
    }
    v *= (double)mult;
    if (v > 1e15 || v != floor(v))
        return pf_fail(err, PF_ERR_USAGE, "'%s' is not a whole number of bytes", s);
    *out = (uint64_t)v;
    return PF_OK;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *yes[] = { "true", "yes", "on", "1", NULL };
    static const char *no[] = { "false", "no", "off", "0", NULL };
    for (int i = 0; yes[i]; i++)
        if (!strcasecmp(s, yes[i]))
            return (*out = true);
    for (int i = 0; no[i]; i++)
        if (!strcasecmp(s, no[i])) {
            *out = false;
            return true;
        }
    return false;
}

/* The place of v among choices ("a|b|c": a is 0), -1 when it is none. */
static int choice_index(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *p = choices;
    for (int i = 0; *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n))
            return i;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

/* The word at place i of choices, and its length in *len; NULL past the
 * last. */
static const char *choice_at(const char *choices, int i, int *len)
{
    const char *p = choices;
    for (; i > 0 && p; i--)
        p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
    if (!p || i < 0)
        return NULL;
    *len = (int)strcspn(p, "|");
    return p;
}

/* Text options with a syntax of their own, checked where they are set so
 * the message names the flag, env variable or file:line. */
static pf_err check_text(const struct opt_spec *o, const char *val,
                         const char *where, char *err)
{
    size_t n = strlen(val);

    if (!strcmp(o->key, "fabric_provider")) {
        if (!n)
            return pf_fail(err, PF_ERR_USAGE, "%s: provider name is empty", where);
        for (const char *p = val; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_' && *p != ';' && *p != '-')
                return pf_fail(err, PF_ERR_USAGE, "%s: '%s' is not a provider "
                               "name", where, val);
        return PF_OK;
    }
    if (!strcmp(o->key, "metrics_textfile")) {
        const char *base = strrchr(val, '/') ? strrchr(val, '/') + 1 : val;
        /* node-exporter reads only *.prom files of its directory. */
        if (n && (strlen(base) <= 5 || strcmp(val + n - 5, ".prom")))
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' must be a file named "
                           "*.prom (node-exporter's textfile collector reads "
                           "no other)", where, val);
        return PF_OK;
    }
    if (!strcmp(o->key, "pushgateway")) {
        const char *host = !strncmp(val, "http://", 7) ? val + 7
                           : !strncmp(val, "https://", 8) ? val + 8 : NULL;
        if (n && (!host || !*host || *host == '/' || strpbrk(val, "?# ")))
            /* The value is not echoed: it may carry a password. */
            return pf_fail(err, PF_ERR_USAGE, "%s: not a Pushgateway URL "
                           "(http[s]://host:port[/path], no query)", where);
        return PF_OK;
    }
    if (!strcmp(o->key, "taint_budget") ||
        (!strcmp(o->key, "baseline_configmap") && n)) {
        char ns[PF_NAME_MAX], name[PF_NAME_MAX];
        const char *slash = strchr(val, '/');
        if (!slash || (size_t)(slash - val) >= sizeof(ns) ||
            strlen(slash + 1) >= sizeof(name))
            return pf_fail(err, PF_ERR_USAGE, "%s: must be namespace/name "
                           "(e.g. efa-preflight/efa-preflight-taint-budget)",
                           where);
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - val), val);
        snprintf(name, sizeof(name), "%s", slash + 1);
        if (!pf_kube_name_ok(ns) || strlen(ns) > 63 || strchr(ns, '.') ||
            !pf_kube_name_ok(name))
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s/%s' is not a "
                           "namespace/name pair of Kubernetes names", where,
                           ns, name);
        return PF_OK;
    }
    if (!strcmp(o->key, "max_tainted")) {
        double pct;
        int count;
        if (pf_parse_cap(val, &count, &pct) != PF_OK)
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' is not a node count "
                           "or a percentage (e.g. 5 or 20%%)", where, val);
        return PF_OK;
    }
    if (!strcmp(o->key, "fabric_addrs")) {
        /* addr,addr,...: each names one NIC, at most PF_MAX_EFA */
        int count = 0;
        for (const char *p = val; *p; ) {
            size_t len = strcspn(p, ",");
            if (len == 0)
                return pf_fail(err, PF_ERR_USAGE, "%s: entry %d is empty "
                               "(stray comma?)", where, count + 1);
            for (size_t i = 0; i < len; i++)
                if (!isalnum((unsigned char)p[i]) && !strchr(".:-_%", p[i]))
                    return pf_fail(err, PF_ERR_USAGE, "%s: entry %d '%.*s' "
                                   "is not an address", where, count + 1,
                                   (int)len, p);
            if (++count > PF_MAX_EFA)
                return pf_fail(err, PF_ERR_USAGE, "%s: more than %d "
                               "addresses (one per NIC)", where, PF_MAX_EFA);
            p += len;
            if (*p == ',' && !*++p)
                return pf_fail(err, PF_ERR_USAGE, "%s: trailing comma", where);
        }
        return PF_OK;
    }
    if (!strcmp(o->key, "api_server") || !strcmp(o->key, "imds_endpoint")) {
        /* A URL goes into a request line: a CR, LF, space or control byte
         * would split it or smuggle a header. */
        for (const char *p = val; *p; p++)
            if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
                return pf_fail(err, PF_ERR_USAGE, "%s: URL holds a space, "
                               "control or non-ASCII byte (0x%02X at %zu)",
                               where, (unsigned)(unsigned char)*p,
                               (size_t)(p - val));
        if (n && !strcmp(o->key, "api_server") && strncmp(val, "https://", 8))
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' must start with "
                           "https:// (TLS is always verified)", where, val);
        return PF_OK;
    }
    if (strcmp(o->key, "label_prefix"))
        return PF_OK;
    /* The label prefix must make valid label keys: DNS subdomain + '/'.
     * The one DNS-1123 rule is the API client's (util/kubeapi.c): a prefix
     * it refuses would be refused by the API server (422) after the
     * conditions and the Event were already written. */
    if (n < 2 || val[n - 1] != '/' || n - 1 > 253) {
        return pf_fail(err, PF_ERR_USAGE, "%s: label prefix '%s' must be a DNS "
                       "subdomain followed by '/'", where, val);
    } else {
        char sub[256];
        snprintf(sub, sizeof(sub), "%.*s", (int)(n - 1), val);
        if (!pf_kube_name_ok(sub))
            return pf_fail(err, PF_ERR_USAGE, "%s: label prefix '%s' must be "
                           "a lowercase DNS subdomain followed by '/'", where,
                           val);
    }
    if (!strcmp(val, "kubernetes.io/") || !strcmp(val, "k8s.io/") ||
        (n > 15 && !strcmp(val + n - 15, ".kubernetes.io/")) ||
        (n > 8 && !strcmp(val + n - 8, ".k8s.io/")))
        return pf_fail(err, PF_ERR_USAGE, "%s: label prefix '%s' is reserved "
                       "for Kubernetes", where, val);
    return PF_OK;
}

/* Set one option from text. where names the source ("flag --port",
 * "EFA_PREFLIGHT_PORT", "cfg.yaml:3: key 'port'") for the message. */
static pf_err set_option(struct pf_config *cfg, const struct opt_spec *o,
                         const char *val, const char *where, char *err)
{
    char *field = (char *)cfg + o->off;
    char *end;

    switch (o->type) {
    case OPT_TEXT: {
        char *copy;
        if (check_text(o, val, where, err) != PF_OK)
            return PF_ERR_USAGE;
        copy = strdup(val);
        if (!copy)
            return pf_fail(err, PF_ERR_NOMEM, "%s: no memory for %zu "
                           "characters", where, strlen(val));
        free(*(char **)field);
        *(char **)field = copy;
        return PF_OK;
    }
    case OPT_STR:
        if (strlen(val) >= o->size)
            return pf_fail(err, PF_ERR_USAGE, "%s: value longer than %zu characters",
                           where, o->size - 1);
        if (check_text(o, val, where, err) != PF_OK)
            return PF_ERR_USAGE;
        memcpy(field, val, strlen(val) + 1);
        return PF_OK;
    case OPT_ENUM: {
        int i = choice_index(o->choices, val);
        if (i < 0)
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' is not one of %s", where,
                           val, o->choices);
        /* Every enum option's field is int-sized (asserted below). */
        *(int *)field = i;
        return PF_OK;
    }
    case OPT_BOOL: {
        bool b;
        if (!parse_bool(val, &b))
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' is not a boolean (true/false)",
                           where, val);
        *(bool *)field = b;
        return PF_OK;
    }
    case OPT_INT: {
        long v;
        errno = 0;
        v = strtol(val, &end, 10);
        if (errno || end == val || *end)
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' is not an integer", where, val);
        if (v < (long)o->min || v > (long)o->max)
            return pf_fail(err, PF_ERR_USAGE, "%s: %ld is out of range %ld..%ld",
                           where, v, (long)o->min, (long)o->max);
        *(int *)field = (int)v;
        return PF_OK;
    }
    case OPT_DOUBLE: {
        double v;
        errno = 0;
        v = strtod(val, &end);
        if (errno || end == val || *end || !isfinite(v))
            return pf_fail(err, PF_ERR_USAGE, "%s: '%s' is not a number", where, val);
        if (v < o->min || v > o->max)
            return pf_fail(err, PF_ERR_USAGE, "%s: %g is out of range %g..%g", where,
                           v, o->min, o->max);
        *(double *)field = v;
        return PF_OK;
    }
    case OPT_SIZE: {
        uint64_t v;
        char sub[PF_ERRLEN];
        if (pf_parse_size(val, &v, sub) != PF_OK)
            return pf_fail(err, PF_ERR_USAGE, "%s: %s", where, sub);
        if ((double)v < o->min || (double)v > o->max)
            return pf_fail(err, PF_ERR_USAGE, "%s: %s is out of range 4..64G", where, val);
        *(uint64_t *)field = v;
        return PF_OK;
    }
    }
    return pf_fail(err, PF_ERR_USAGE, "%s: bad option type", where);
}

/* ------------------------------------------------------------------ YAML */

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a scalar";
    }
}

/* A YAML list of scalars (peers) is joined with commas into *out (heap,
 * the caller frees it). */
static pf_err join_sequence(yaml_document_t *doc, yaml_node_t *seq, char **out,
                            const char *where, char *err)
{
    size_t used = 0, len = 1;
    char *buf;

    *out = NULL;
    for (yaml_node_item_t *it = seq->data.sequence.items.start;
         it < seq->data.sequence.items.top; it++) {
        yaml_node_t *item = yaml_document_get_node(doc, *it);
        if (!item || item->type != YAML_SCALAR_NODE)
            return pf_fail(err, PF_ERR_CONFIG, "%s: list items must be scalars", where);
        len += strlen((const char *)item->data.scalar.value) + 1;
    }
    buf = malloc(len);
    if (!buf)
        return pf_fail(err, PF_ERR_NOMEM, "%s: no memory for a list of %zu "
                       "characters", where, len);
    buf[0] = '\0';
    for (yaml_node_item_t *it = seq->data.sequence.items.start;
         it < seq->data.sequence.items.top; it++) {
        const char *s = (const char *)
            yaml_document_get_node(doc, *it)->data.scalar.value;
        size_t n = strlen(s);
        if (used)
            buf[used++] = ',';
        memcpy(buf + used, s, n + 1);
        used += n;
    }
    *out = buf;
    return PF_OK;
}

pf_err pf_config_load_yaml_buf(struct pf_config *cfg, const char *name,
                               const char *buf, size_t len, char *err)
{
    yaml_document_t doc;
    yaml_node_t *root;
    pf_err rc = PF_OK;
    unsigned char seen[NOPTS];

    memset(seen, 0, sizeof(seen));
    rc = pf_yaml_load(&doc, name, buf, len, err);
    if (rc != PF_OK)
        return rc;
    root = yaml_document_get_root_node(&doc);
    if (!root) /* empty file: nothing to set */
        goto out;
    if (root->type != YAML_MAPPING_NODE) {
        rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu: top level must be a mapping of "
                     "option: value, not %s", name, root->start_mark.line + 1,
                     node_kind(root));
        goto out;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&doc, p->value);
        const struct opt_spec *o;
        char where[PF_NAME_MAX + 96];
        const char *key;
        size_t line;

        if (!k || !v || k->type != YAML_SCALAR_NODE) {
            rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu: keys must be scalars", name,
                         k ? k->start_mark.line + 1 : 0);
            goto out;
        }
        key = (const char *)k->data.scalar.value;
        line = k->start_mark.line + 1;
        o = find_key(key);
        if (!o || !strcmp(key, "config")) {
            rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu: unknown key '%s'", name, line, key);
            goto out;
        }
        if (seen[o - options]++) {
            rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu: key '%s' given twice", name,
                         line, key);
            goto out;
        }
        snprintf(where, sizeof(where), "%s:%zu: key '%s'", name,
                 v->start_mark.line + 1, key);
        if (v->type == YAML_SEQUENCE_NODE &&
            (!strcmp(key, "peers") || !strcmp(key, "fabric_addrs"))) {
            char *joined = NULL;
            rc = join_sequence(&doc, v, &joined, where, err);
            if (rc == PF_OK)
                rc = set_option(cfg, o, joined, where, err);
            free(joined);
        } else if (v->type != YAML_SCALAR_NODE) {
            rc = pf_fail(err, PF_ERR_CONFIG, "%s: expected a value, got %s", where,
                         node_kind(v));
        } else {
            const char *val = (const char *)v->data.scalar.value;
            if (!*val && o->type != OPT_STR)
                rc = pf_fail(err, PF_ERR_CONFIG, "%s: empty value", where);
            else
                rc = set_option(cfg, o, val, where, err);
        }
        if (rc != PF_OK) {
            rc = PF_ERR_CONFIG;
            goto out;
        }
    }
out:
    yaml_document_delete(&doc);
    return rc;
}

pf_err pf_config_load_yaml(struct pf_config *cfg, const char *path, char *err)
{
    char *buf;
    size_t len;
    /* A bound on a file read whole, not on the run: 64 MiB holds millions
     * of --peers entries. */
    pf_err rc = pf_read_file(path, (size_t)64 << 20, &buf, &len, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "config file");
        return PF_ERR_CONFIG;
    }
    rc = pf_config_load_yaml_buf(cfg, path, buf, len, err);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ env, flags */

static pf_err load_env(struct pf_config *cfg, char **envp, char *err)
{
    char name[128], where[160];
    for (size_t i = 0; i < NOPTS; i++) {
        const char *val;
        env_name(&options[i], name, sizeof(name));
        val = NULL;
        for (char **e = envp; e && *e; e++) {
            size_t n = strlen(name);
            if (!strncmp(*e, name, n) && (*e)[n] == '=')
                val = *e + n + 1;
        }
        if (!val || !strcmp(options[i].key, "config"))
            continue;
        snprintf(where, sizeof(where), "%s", name);
        if (set_option(cfg, &options[i], val, where, err) != PF_OK)
            return PF_ERR_USAGE;
    }
    return PF_OK;
}

static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

/* Checks that need several options at once. */
static pf_err validate(struct pf_config *cfg, char *err)
{
    if (cfg->max_bytes && cfg->min_bytes > cfg->max_bytes)
        return pf_fail(err, PF_ERR_USAGE, "min_bytes (%llu) is larger than "
                       "max_bytes (%llu)", (unsigned long long)cfg->min_bytes,
                       (unsigned long long)cfg->max_bytes);
    if (cfg->debug_slow_rank >= 0 && cfg->debug_slow_ms == 0)
        cfg->debug_slow_ms = 50;
    /* The API server speaks to webhooks over HTTPS only. */
    if (cfg->command == PF_CMD_WEBHOOK) {
        if (!cfg->tls_cert_file[0] || !cfg->tls_key_file[0])
            return pf_fail(err, PF_ERR_USAGE, "webhook: tls_cert_file and tls_key_file "
                           "are required (the API server calls webhooks over HTTPS)");
        if (!cfg->agent_image[0])
            return pf_fail(err, PF_ERR_USAGE, "webhook: agent_image is required (the "
                           "injected copy-in initContainer runs it)");
    }
    return PF_OK;
}

enum pf_bootstrap pf_config_bootstrap(const struct pf_config *cfg,
                                      char **envp)
{
    if (cfg->command == PF_CMD_LOCAL)
        return PF_BOOT_LOCAL;
    if (cfg->bootstrap != PF_BOOT_AUTO)
        return cfg->bootstrap;
    if (cfg->peers && cfg->peers[0])
        return PF_BOOT_STATIC;
    /* mpirun inside a pod is still mpi: it is checked first */
    if (env_get(envp, "OMPI_COMM_WORLD_SIZE") || env_get(envp, "PMIX_RANK") ||
        env_get(envp, "PMI_SIZE"))
        return PF_BOOT_MPI;
    if (env_get(envp, "KUBERNETES_SERVICE_HOST") || cfg->api_server[0])
        return PF_BOOT_K8S;
    return PF_BOOT_STATIC;
}

/* Defaults, and those that differ by command: `local` picks a free
 * rendezvous port unless one is given, so two runs on one host never meet
 * (a rank of one reaching the other's rank 0). */
static void command_defaults(struct pf_config *cfg, enum pf_command cmd)
{
    pf_config_defaults(cfg);
    if (cmd == PF_CMD_LOCAL)
        cfg->port = 0;
}

struct flag_val {
    const struct opt_spec *o;
    const char *val;
    char name[64];
};

pf_err pf_config_load(struct pf_config *cfg, enum pf_command cmd, int argc,
                      char **argv, char **envp, bool *want_help, char *err)
{
    /* getopt_long needs names that outlive the loop: one per option, plus
     * "no-<flag>" for booleans. */
    static const int extra = 3; /* help, verbose, terminator */
    struct option *longopts = NULL;
    char (*names)[64] = NULL;
    struct flag_val *vals = NULL;
    /* ':' first (after '+'): a missing value comes back as ':', not as
     * an unknown option. */
    char shortopts[64] = "+:hv";
    size_t nlong = 0, nvals = 0;
    int verbose = 0;
    const char *config_path;
    pf_err rc = PF_OK;

    command_defaults(cfg, cmd);
    cfg->command = cmd;
    *want_help = false;

    longopts = calloc(2 * NOPTS + extra, sizeof(*longopts));
    names = calloc(2 * NOPTS, sizeof(*names));
    vals = calloc((size_t)argc + 1, sizeof(*vals));
    if (!longopts || !names || !vals) {
        rc = pf_fail(err, PF_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_spec *o = &options[i];
        if (!(o->cmds & (1u << cmd)))
            continue;
        flag_name(o, names[nlong], sizeof(names[0]));
        longopts[nlong] = (struct option){ names[nlong],
            o->type == OPT_BOOL ? optional_argument : required_argument, NULL,
            (int)(256 + i) };
        nlong++;
        /* A boolean gets a "no-" twin, unless its name already says no. */
        if (o->type == OPT_BOOL && strncmp(o->key, "no_", 3)) {
            char plain[64];
            flag_name(o, plain, sizeof(plain));
            snprintf(names[nlong], sizeof(names[0]), "no-%s", plain);
            longopts[nlong] = (struct option){ names[nlong], no_argument, NULL,
                                               (int)(1024 + i) };
            nlong++;
        }
        if (o->shortopt) {
            size_t l = strlen(shortopts);
            shortopts[l] = o->shortopt;
            shortopts[l + 1] = ':';
            shortopts[l + 2] = '\0';
        }
    }
    longopts[nlong++] = (struct option){ "help", no_argument, NULL, 'h' };
    longopts[nlong++] = (struct option){ "verbose", no_argument, NULL, 'v' };

    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, shortopts, longopts, NULL);
        const struct opt_spec *o = NULL;
        const char *val = optarg;

        if (c == -1)
            break;
        if (c == 'h') {
            *want_help = true;
            continue;
        }
        if (c == 'v') {
            verbose++;
            continue;
        }
        if (c == '?' || c == ':') {
            const char *bad = argv[optind - 1];
            bool is_long = !strncmp(bad, "--", 2);
            if (c == '?' && optopt && is_long)
                /* getopt sets optopt on '?' for a long option only when
                 * it was given a value it does not take (--no-json=1). */
                rc = pf_fail(err, PF_ERR_USAGE, "option '%.*s' takes no value",
                             (int)strcspn(bad, "="), bad);
            else if (c == ':' && is_long)
                rc = pf_fail(err, PF_ERR_USAGE, "option '%s' needs a value", bad);
            else if (optopt && optopt < 256)
                rc = pf_fail(err, PF_ERR_USAGE, "option -%c %s", optopt,
                             c == ':' ? "needs a value" : "is unknown");
            else
                rc = pf_fail(err, PF_ERR_USAGE, "unknown option '%s' for '%s'",
                             bad, argv[0]);
            goto out;
        }
        if (c >= 1024) {
            o = &options[c - 1024];
            val = "false";
        } else if (c >= 256) {
            o = &options[c - 256];
            if (o->type == OPT_BOOL && !val)
                val = "true";
        } else {
            for (size_t i = 0; i < NOPTS; i++)
                if (options[i].shortopt == c)
                    o = &options[i];
        }
        if (!o) {
            rc = pf_fail(err, PF_ERR_USAGE, "unknown option '%s'", argv[optind - 1]);
            goto out;
        }
        vals[nvals].o = o;
        vals[nvals].val = val;
        flag_name(o, vals[nvals].name, sizeof(vals[nvals].name));
        nvals++;
    }
    if (optind < argc) {
        rc = pf_fail(err, PF_ERR_USAGE, "unexpected argument '%s'", argv[optind]);
        goto out;
    }
    if (*want_help)
        goto out;

    /* The file first, then env, then flags: later sources win. */
    config_path = env_get(envp, "EFA_PREFLIGHT_CONFIG");
    for (size_t i = 0; i < nvals; i++)
        if (!strcmp(vals[i].o->key, "config"))
            config_path = vals[i].val;
    if (config_path && *config_path) {
        snprintf(cfg->config_file, sizeof(cfg->config_file), "%s", config_path);
        rc = pf_config_load_yaml(cfg, config_path, err);
        if (rc != PF_OK)
            goto out;
    }
    rc = load_env(cfg, envp, err);
    if (rc != PF_OK)
        goto out;
    for (size_t i = 0; i < nvals; i++) {
        char where[96];
        snprintf(where, sizeof(where), "--%s", vals[i].name);
        rc = set_option(cfg, vals[i].o, vals[i].val, where, err);
        if (rc != PF_OK)
            goto out;
    }
    if (verbose)
        cfg->log_level = verbose > 1 ? PF_LOG_DEBUG : PF_LOG_INFO;
    cfg->bootstrap = pf_config_bootstrap(cfg, envp);
    rc = validate(cfg, err);
out:
    free(longopts);
    free(names);
    free(vals);
    return rc;
}

static void print_default(const struct opt_spec *o, enum pf_command cmd,
                          FILE *out)
{
    struct pf_config d;
    const char *field;

    command_defaults(&d, cmd);
    field = (const char *)&d + o->off;
    switch (o->type) {
    case OPT_TEXT:
        if (*(char *const *)field)
            fprintf(out, " [%s]", *(char *const *)field);
        break;
    case OPT_STR:
        if (*field)
            fprintf(out, " [%s]", field);
        break;
    case OPT_ENUM: {
        int len;
        const char *w = choice_at(o->choices, *(const int *)field, &len);
        if (w)
            fprintf(out, " [%.*s]", len, w);
        break;
    }
    case OPT_INT:
        fprintf(out, " [%d]", *(const int *)field);
        break;
    case OPT_DOUBLE:
        fprintf(out, " [%g]", *(const double *)field);
        break;
    case OPT_BOOL:
        fprintf(out, " [%s]", *(const bool *)field ? "true" : "false");
        break;
    case OPT_SIZE:
        fprintf(out, " [%llu]", (unsigned long long)*(const uint64_t *)field);
        break;
    }
}

const char *pf_command_name(enum pf_command cmd)
{
    switch (cmd) {
    case PF_CMD_NODE: return "node";
    case PF_CMD_RUN: return "run";
    case PF_CMD_LOCAL: return "local";
    case PF_CMD_CATALOG: return "catalog";
    case PF_CMD_VERSION: return "version";
    case PF_CMD_HISTORY: return "history";
    case PF_CMD_WEBHOOK: return "webhook";
    case PF_CMD_MONITOR: return "monitor";
    case PF_CMD_BASELINE: return "baseline";
    }
    return "?";
}

/* The words of the enum options, as their choices in the table spell them
 * (tests/unit/config/test_config.c holds the two to each other). */
const char *pf_engine_name(enum pf_engine_kind e)
{
    switch (e) {
    case PF_ENGINE_AUTO: return "auto";
    case PF_ENGINE_NCCL: return "nccl";
    case PF_ENGINE_HOST: return "host";
    }
    return "?";
}

const char *pf_bootstrap_name(enum pf_bootstrap b)
{
    switch (b) {
    case PF_BOOT_AUTO: return "auto";
    case PF_BOOT_LOCAL: return "local";
    case PF_BOOT_STATIC: return "static";
    case PF_BOOT_MPI: return "mpi";
    case PF_BOOT_K8S: return "k8s";
    }
    return "?";
}

const char *pf_mode_name(enum pf_mode m)
{
    switch (m) {
    case PF_MODE_INITCONTAINER: return "initcontainer";
    case PF_MODE_DAEMONSET: return "daemonset";
    }
    return "?";
}

const char *pf_on_failure_name(enum pf_on_failure f)
{
    switch (f) {
    case PF_ON_FAILURE_FAIL: return "fail";
    case PF_ON_FAILURE_CONTINUE: return "continue";
    }
    return "?";
}

const char *pf_fail_action_name(enum pf_fail_action a)
{
    switch (a) {
    case PF_FAIL_ACTION_NONE: return "none";
    case PF_FAIL_ACTION_HYPERPOD_REBOOT: return "hyperpod-reboot";
    case PF_FAIL_ACTION_HYPERPOD_REPLACE: return "hyperpod-replace";
    }
    return "?";
}

const char *pf_log_level_name(enum pf_log_level l)
{
    switch (l) {
    case PF_LOG_ERROR: return "error";
    case PF_LOG_WARN: return "warn";
    case PF_LOG_INFO: return "info";
    case PF_LOG_DEBUG: return "debug";
    }
    return "?";
}

void pf_config_usage(enum pf_command cmd, FILE *out)
{
    static const char *types[] = { "TEXT", "N", "X", "", "SIZE", "", "TEXT" };

    fprintf(out, "usage: efa-preflight %s [options]\n\noptions "
            "(flag / env EFA_PREFLIGHT_<KEY> / YAML key; [default]):\n",
            pf_command_name(cmd));
    for (size_t i = 0; i < NOPTS; i++) {
        const struct opt_spec *o = &options[i];
        char flag[64], env[96], lhs[96];
        if (!(o->cmds & (1u << cmd)))
            continue;
        flag_name(o, flag, sizeof(flag));
        env_name(o, env, sizeof(env));
        if (o->shortopt)
            snprintf(lhs, sizeof(lhs), "-%c, --%s %s", o->shortopt, flag, types[o->type]);
        else if (o->type == OPT_ENUM)
            snprintf(lhs, sizeof(lhs), "    --%s %s", flag, o->choices);
        else if (o->type == OPT_BOOL && !strncmp(o->key, "no_", 3))
            snprintf(lhs, sizeof(lhs), "    --%s", flag);
        else if (o->type == OPT_BOOL)
            snprintf(lhs, sizeof(lhs), "    --[no-]%s", flag);
        else
            snprintf(lhs, sizeof(lhs), "    --%s %s", flag, types[o->type]);
        fprintf(out, "  %-36s %s", lhs, o->help);
        print_default(o, cmd, out);
        fprintf(out, "\n  %-36s env %s, key %s\n", "", env, o->key);
    }
    fprintf(out, "  %-36s %s\n", "-v, --verbose", "more log output (twice: debug)");
    fprintf(out, "  %-36s %s\n", "-h, --help", "this help");
    if (cmd == PF_CMD_NODE || cmd == PF_CMD_RUN || cmd == PF_CMD_LOCAL)
        fprintf(out, "\n" PF_EXIT_CODES_HELP);
}

void pf_config_free(struct pf_config *cfg)
{
    free(cfg->peers);
    cfg->peers = NULL;
    free(cfg->fabric_addrs);
    cfg->fabric_addrs = NULL;
    free(cfg->monitor_thresholds);
    cfg->monitor_thresholds = NULL;
}

void pf_config_kube(const struct pf_config *cfg, struct pf_kube_given *g)
{
    *g = (struct pf_kube_given){
        .api_server = cfg->api_server,
        .token_file = cfg->token_file,
        .ca_file = cfg->ca_file,
        .timeout_s = cfg->timeout_s,
        .pod = cfg->pod_name,
        .ns = cfg->namespace_,
        .node = cfg->node_name,
        .pod_ip = cfg->pod_ip,
    };
}
