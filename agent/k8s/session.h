/* A session with the Kubernetes API server, as the stages see it: who this
 * agent is (identity), how to reach the server (opts) and a client opened
 * for one task. Nothing here makes a request: the narrow headers beside it
 * (pods.h, nodes.h, configmap.h, lease.h, pool.h) take the client and do
 * one job each; the raw client (client.h) stays inside agent/k8s/.
 *
 * In-cluster (KUBERNETES_SERVICE_HOST/PORT + the serviceaccount token, CA
 * and namespace) or explicit --api-server / --token-file / --ca-file. TLS
 * is always verified. */
#ifndef PF_K8S_SESSION_H
#define PF_K8S_SESSION_H

#include <stdatomic.h>
#include <stdint.h>

#include "../util/err.h"
#include "../util/sizes.h"

#define PF_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* The client (client.c), opaque outside agent/k8s/. */
struct pf_kube;

struct pf_kube_opts {
    char server[PF_NAME_MAX];         /* https://host:port, no trailing / */
    char token_file[PF_PATH_MAX];     /* "" = no Authorization header */
    char ca_file[PF_PATH_MAX];        /* "" = the system CA bundle */
    long connect_timeout_ms;
    long request_timeout_ms;          /* one attempt of one request */
    int max_attempts;                 /* per request, >= 1 */
    int64_t backoff_base_ms, backoff_cap_ms;
    int64_t deadline;                 /* absolute (clock.h); 0 = none */
    /* Non-zero ends every request at once, in flight or in a backoff
     * (a SIGTERM being handled: launch/sigwatch.h); NULL = never. */
    const atomic_int *cancel;
};

/* Who this agent is: flag/config value if set, else the downward-API env
 * (POD_NAME, POD_NAMESPACE, NODE_NAME, POD_IP), else (namespace only) the
 * serviceaccount namespace file. Fields stay "" when unknown. */
struct pf_kube_identity {
    char pod[PF_NAME_MAX];
    char ns[PF_NAME_MAX];
    char node[PF_NAME_MAX];
    char pod_ip[64];
};

/* What the command line or config file said (config.c: pf_config_target);
 * "" or 0 where it said nothing. */
struct pf_kube_given {
    const char *api_server, *token_file, *ca_file;
    int timeout_s;                    /* bounds every request when > 0 */
    const char *pod, *ns, *node, *pod_ip;
};

/* Identity and options read once, from what was given with the in-cluster
 * env and files as fallbacks: on the main thread, since another thread
 * must not call getenv while NCCL's set-up calls setenv. */
struct pf_k8s_target {
    struct pf_kube_identity id;
    struct pf_kube_opts opts;
    pf_err rc;                        /* opts could not be made: err */
    char err[PF_ERRLEN];
};
void pf_k8s_target(const struct pf_kube_given *g, struct pf_k8s_target *t);

/* A client for t (t->rc returned, with t->err, when its options could not
 * be made), bounded by deadline (absolute, 0 = none) and, when cancel is
 * set, stopped by it. */
pf_err pf_k8s_open(const struct pf_k8s_target *t, int64_t deadline,
                   const atomic_int *cancel, struct pf_kube **k, char *err);
void pf_k8s_close(struct pf_kube *k);

/* libcurl's global state, once, before a second thread may use it. */
void pf_k8s_global_init(void);

#endif
