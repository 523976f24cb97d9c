/* monitor: the long-running mode between jobs (`efa-preflight monitor`).
 *
 * Every interval it reads what `node` reads without traffic (EFA devices
 * against the instance type, port state, /dev/infiniband, the module) and
 * every counter file of every device (ports/N/hw_counters/ and the
 * device-level hw_counters/), then
 *   judges   a few error counters per NIC with hysteresis (health.c): K bad
 *            intervals in a row raise a fault, M good ones clear it;
 *   exports  every counter in the Prometheus text format (expo.c), served
 *            on /metrics and written to the textfile when asked;
 *   writes   the EFANICHealthy condition (PF_COND_NICS) and an Event per change, and marks
 *            an idle node pending for the pre-flight DaemonSet (k8s.c).
 * It never runs a collective and requests no device, so it never competes
 * with a job. Everything it holds is sized by what it read and released
 * every interval: memory does not grow with time. */
#ifndef PF_MONITOR_H
#define PF_MONITOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../types/run.h"

/* ------------------------------------------------------------ counters */

/* One counter file: port N's hw_counters (port >= 1) or the device-level
 * hw_counters (port 0). */
struct pf_mon_counter {
    char name[64];                    /* file name; longer names skipped */
    int port;
    uint64_t v;
};

struct pf_mon_nic {
    char name[64];                    /* rdmap16s27 */
    bool port_active;                 /* every port ACTIVE */
    char port_state[32];              /* first port not ACTIVE, else "4: ACTIVE" */
    int nports;
    int n;                            /* counters read */
    struct pf_mon_counter *c;         /* heap, n entries */
};

/* One read of the node. */
struct pf_mon_snap {
    double t;                         /* monotonic seconds */
    int expected;                     /* EFA devices the type has, -1 unknown */
    int efa_count;                    /* EFA devices found */
    bool module_loaded;
    int uverbs_present;
    int n;                            /* nics entries (= efa_count) */
    struct pf_mon_nic *nics;          /* heap */
};

/* Read every EFA device of node (already probed: names, ports) and its
 * counter files under root ("" = /). A device without counters has n = 0.
 * Fails only when memory runs out. */
pf_err pf_mon_read(const char *root, const struct pf_node *node,
                   int expected, struct pf_mon_snap *out, char *err);
void pf_mon_snap_free(struct pf_mon_snap *s);
/* The counter of nic named name on port, NULL when absent. */
const struct pf_mon_counter *pf_mon_counter_find(const struct pf_mon_nic *nic,
                                                 const char *name, int port);
/* The NIC named name in s, NULL when absent. */
const struct pf_mon_nic *pf_mon_nic_find(const struct pf_mon_snap *s,
                                         const char *name);

/* -------------------------------------------------------------- health */

/* A judged counter: an interval is bad for a NIC when the counter rose by
 * more than per_s x the interval's seconds (summed over its ports). */
struct pf_mon_rule {
    char counter[64];
    double per_s;                     /* < 0: not judged */
};

struct pf_mon_rules {
    int n;
    struct pf_mon_rule *r;            /* heap */
    int raise_after;                  /* K */
    int clear_after;                  /* M */
};

/* The defaults (monitor.c's table, docs/counters.md says why each), then
 * spec's "counter=rate,..." on top. A name that is not a counter's file
 * name or a rate that is not a number is a usage error naming it. */
pf_err pf_mon_rules_parse(const char *spec, int raise_after, int clear_after,
                          struct pf_mon_rules *out, char *err);
void pf_mon_rules_free(struct pf_mon_rules *r);

/* What one NIC's state is. */
struct pf_mon_nic_state {
    char name[64];
    bool faulted;
    enum pf_reason reason;            /* why it is faulted */
    char why[256];                    /* "retrans_timeout_events 2.0/s" */
    int good;                         /* good intervals in a row */
    int *streak;                      /* per rule: bad intervals in a row */
    double *rate;                     /* per rule: last interval's rate, /s;
                                         -1 = not judged (counter absent) */
    bool seen;                        /* in the last read */
};

/* A fault raised or cleared in one interval: an Event each. */
struct pf_mon_change {
    char nic[64];                     /* "" = the node (device count) */
    bool raised;
    enum pf_reason reason;
    char msg[320];
};

struct pf_mon_health {
    int n;
    struct pf_mon_nic_state *nics;    /* every NIC ever seen, heap */
    bool count_fault;                 /* fewer devices than the type has */
    int count_bad;                    /* short intervals in a row */
    int count_good;
    char count_why[160];
    bool counters_missing;            /* no device has counters (old driver) */
    int nchanges;
    struct pf_mon_change *changes;    /* this interval's, heap */
    int intervals;                    /* judged so far */
};

/* Judge one interval: prev -> cur (prev NULL on the first read, which
 * judges only states: ports, count). Fills h->changes. */
pf_err pf_mon_judge(struct pf_mon_health *h, const struct pf_mon_rules *rules,
                    const struct pf_mon_snap *prev,
                    const struct pf_mon_snap *cur, char *err);
void pf_mon_health_free(struct pf_mon_health *h);
/* The node's condition from h: reason (its class gives the status) and a
 * message naming every faulted NIC. */
enum pf_reason pf_mon_condition(const struct pf_mon_health *h, char *msg,
                                size_t len);

/* ---------------------------------------------------------- exposition */

/* The last gate verdict, as the Node's labels say (k8s), else unknown. */
struct pf_mon_gate {
    char status[16];                  /* pass|warn|fail|error|pending|"" */
    int64_t validated_at;             /* epoch s, 0 unknown */
    int64_t valid_until;              /* epoch s, 0 unknown */
    char instance_type[64];           /* node.kubernetes.io/instance-type */
};

/* A growing text buffer. */
struct pf_mon_buf {
    char *p;
    size_t len, cap;
    bool oom;
};
void pf_mon_buf_printf(struct pf_mon_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pf_mon_buf_free(struct pf_mon_buf *b);

/* The Prometheus text format of one interval: every counter as
 * efa_preflight_nic_<counter>_total{node,device,port}, link state, device
 * counts, judged rates and health, the gate's verdict and age. now is the
 * wall clock (epoch s). */
pf_err pf_mon_expose(const char *node, const struct pf_mon_snap *s,
                     const struct pf_mon_health *h,
                     const struct pf_mon_rules *rules,
                     const struct pf_mon_gate *gate, int64_t now,
                     struct pf_mon_buf *out, char *err);
/* Whether name is usable in a metric name ([a-z0-9_], not empty). */
bool pf_mon_metric_name_ok(const char *name);

/* ------------------------------------------------------------ kubernetes */

struct pf_mon_k8s;

/* Open the API client for the Node this pod runs on. */
pf_err pf_mon_k8s_open(const struct pf_config *cfg, const atomic_int *cancel,
                       struct pf_mon_k8s **out, char *err);
void pf_mon_k8s_close(struct pf_mon_k8s *k);
/* Read the Node: the gate's labels into gate. */
pf_err pf_mon_k8s_read(struct pf_mon_k8s *k, struct pf_mon_gate *gate,
                       char *err);
/* Write EFANICHealthy (lastTransitionTime kept while the status is the
 * same) and one Event per change. */
pf_err pf_mon_k8s_publish(struct pf_mon_k8s *k, enum pf_reason reason,
                          const char *msg, const struct pf_mon_change *ch,
                          int nch, char *err);
/* The same for any condition type (GPUHealthy: monitor/gpu.h). */
pf_err pf_mon_k8s_condition(struct pf_mon_k8s *k, const char *type,
                            enum pf_reason reason, const char *msg,
                            const struct pf_mon_change *ch, int nch,
                            char *err);
/* Taint (add) or untaint the node for a NIC fault, under the cluster-wide
 * budget; only a taint this monitor added is ever removed. */
pf_err pf_mon_k8s_taint(struct pf_mon_k8s *k, bool add, char *err);

/* Whether pod (a core/v1 Pod) holds EFA devices: not terminated (phase
 * neither Succeeded nor Failed) and a container or init container requests
 * or limits vpc.amazonaws.com/efa above 0. */
bool pf_mon_pod_holds_efa(const cJSON *pod);
/* Re-validation: when the node's valid-until passed (expired) or a fault
 * seen here cleared (cleared), and no pod other than self holds EFA
 * devices, set the status label to pending. *marked says whether it did;
 * *why what decided. Never touches a node already pending or validating. */
pf_err pf_mon_k8s_revalidate(struct pf_mon_k8s *k, bool cleared,
                             bool *marked, char *why, size_t len, char *err);

/* ---------------------------------------------------------------- loop */

/* What the loop shares with the signal thread and the scrape endpoint. */
struct pf_mon_ctl {
    pthread_mutex_t lock;
    pthread_cond_t wake;              /* CLOCK_MONOTONIC */
    atomic_int stop;                  /* also cancels API requests */
    char *text;                       /* the last interval's exposition */
    size_t text_len;
    bool healthy;                     /* no NIC fault proven */
    double last_read;                 /* monotonic s, 0 = none yet */
    double interval_s;                /* for /healthz's liveness bound */
};

pf_err pf_mon_ctl_init(struct pf_mon_ctl *ctl, char *err);
/* Ask the loop to end (a signal): safe from any thread. */
void pf_mon_ctl_stop(struct pf_mon_ctl *ctl);
void pf_mon_ctl_destroy(struct pf_mon_ctl *ctl);

/* "host:port" ("[v6]:port", ":port" = every address) of --listen. */
pf_err pf_mon_listen_parse(const char *spec, char *host, size_t len,
                           int *port, char *err);
/* Serve /metrics and /healthz from ctl (serve.c, util/httpd.h); the
 * caller stops it with pf_httpd_stop. A usage error when the address
 * cannot be bound. */
struct pf_httpd;
pf_err pf_mon_serve(const char *listen, struct pf_mon_ctl *ctl,
                    struct pf_httpd **out, char *err);

/* `efa-preflight monitor`: the loop until pf_mon_ctl_stop,
 * cfg.monitor_intervals, or a fatal error. Returns the exit code. */
int pf_monitor_run(struct pf_run *run, struct pf_mon_ctl *ctl);
/* `efa-preflight monitor` from main (command.c): the output path checked,
 * SIGTERM/SIGINT taken by one thread (a clean exit 0 on the first, at once
 * on a second), then pf_monitor_run. Returns the exit code. */
int pf_monitor_command(struct pf_run *run);

#endif
