/* A small Kubernetes API client over libcurl.
 *
 * In-cluster (KUBERNETES_SERVICE_HOST/PORT + the serviceaccount token, CA
 * and namespace) or explicit --api-server / --token-file / --ca-file. TLS is
 * always verified. The token is re-read every 60 s and after a 401, sent
 * only in the Authorization header, and never appears in a log line, an
 * error message or a report (CURLOPT_VERBOSE stays off). Requests retry
 * transport errors, 429 and 5xx with capped exponential backoff and jitter,
 * honouring Retry-After, a bounded number of times; 409 is left to the
 * caller, which re-reads and retries. */
#ifndef PF_KUBEAPI_H
#define PF_KUBEAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "sizes.h"

#define PF_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

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

struct pf_kube_resp {
    long status;                      /* HTTP status */
    cJSON *json;                      /* parsed body, NULL if not JSON */
    char message[256];                /* Status.message, for errors */
};

/* What the command line or config file said (config.c: pf_config_kube);
 * "" or 0 where it said nothing. */
struct pf_kube_given {
    const char *api_server, *token_file, *ca_file;
    int timeout_s;                    /* bounds every request when > 0 */
    const char *pod, *ns, *node, *pod_ip;
};

/* Options from what was given, with the in-cluster env and files as
 * fallbacks. */
pf_err pf_kube_opts_init(struct pf_kube_opts *o, const struct pf_kube_given *g,
                         char *err);
void pf_kube_identity(const struct pf_kube_given *g,
                      struct pf_kube_identity *id);

/* libcurl's global state, once, before a second thread may use it. */
void pf_kube_global_init(void);
pf_err pf_kube_open(const struct pf_kube_opts *o, struct pf_kube **out,
                    char *err);
void pf_kube_close(struct pf_kube *k);

/* One request (path starts with "/"), retried as described above. PF_OK
 * means a response arrived, whatever its status; errors are transport or
 * TLS failures after the retries. body may be NULL. */
pf_err pf_kube_do(struct pf_kube *k, const char *method, const char *path,
                  const char *content_type, const char *body,
                  struct pf_kube_resp *resp, char *err);
void pf_kube_resp_free(struct pf_kube_resp *r);

/* A new API object with its head: apiVersion, kind, and metadata with
 * name, namespace and (unless rv is NULL) resourceVersion. */
cJSON *pf_kube_object(const char *api_version, const char *kind,
                      const char *name, const char *ns, const char *rv);
/* Turn a non-2xx response into an error naming the request, the status and
 * the server's message: 401 PF_ERR_UNAUTHORIZED, 403 PF_ERR_FORBIDDEN, 404 PF_ERR_NOTFOUND,
 * 400/422 PF_ERR_USAGE, else PF_ERR_API. */
pf_err pf_kube_status_err(const struct pf_kube_resp *r, const char *method,
                          const char *path, char *err);
/* A ConfigMap used as a small shared record (the taint budget, the fleet
 * baseline), written with optimistic concurrency.
 * Read: *out the object, or NULL when there is none (404). */
pf_err pf_kube_configmap_read(struct pf_kube *k, const char *ns,
                              const char *name, cJSON **out, char *err);
/* Write data (taken) back: PUT with the resourceVersion read (rv), or POST
 * when there was none (rv NULL). *won false when another writer came
 * first (409, or 404 to a PUT: deleted meanwhile): read again and retry.
 * managed_by, when set, labels the object app.kubernetes.io/managed-by. */
pf_err pf_kube_configmap_write(struct pf_kube *k, const char *ns,
                               const char *name, const char *rv, cJSON *data,
                               const char *managed_by, bool *won, char *err);

/* GET a JSON object; any non-2xx is an error (pf_kube_status_err). */
pf_err pf_kube_get(struct pf_kube *k, const char *path, cJSON **out,
                   char *err);

/* Watch: GET path (which must carry watch=1&timeoutSeconds=N) and hand
 * each event line to fn; fn returns false to stop early. *status is the
 * HTTP status. Ends when the server closes the stream, fn stops it, or
 * timeout_s + 10 s (bounded by the client deadline) pass. fn is also
 * called with event NULL about once a second while the stream is open,
 * quiet or not, so a waiting caller can report progress. */
typedef bool (*pf_kube_event_fn)(void *ctx, const cJSON *event);
pf_err pf_kube_watch(struct pf_kube *k, const char *path, int timeout_s,
                     pf_kube_event_fn fn, void *ctx, long *status,
                     char *err);

/* ----------------------------------------------------------- helpers */

/* Longest object name (a DNS-1123 subdomain), and a label key's prefix. */
#define PF_K8S_NAME_MAX 253

/* "https://host:port" with an IPv6 host in brackets. */
pf_err pf_kube_server_url(const char *host, const char *port, char *out,
                          size_t len, char *err);
/* Percent-encode a query value. */
pf_err pf_kube_query_escape(const char *in, char *out, size_t len,
                            char *err);
/* A DNS-1123 name (pod, node, namespace) safe to put in a path. */
bool pf_kube_name_ok(const char *s);
/* Retry-After header value -> ms (seconds form only, clamped to an
 * hour); -1 when absent or not a number. */
int64_t pf_kube_retry_after_ms(const char *value);
/* Delay before retry number attempt (1-based): base * 2^(attempt-1),
 * capped, then jittered into [d/2, d]. rng is xorshift state. */
int64_t pf_kube_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms,
                           uint64_t *rng);

/* Label syntax (FACTS.md): value <= 63 chars of [A-Za-z0-9-_.], starting
 * and ending alphanumeric, or empty; key = optional DNS-subdomain prefix +
 * "/" + name. */
bool pf_label_value_ok(const char *v);
bool pf_label_key_ok(const char *k);

/* Small cJSON readers that tolerate missing fields. */
const char *pf_json_str(const cJSON *obj, const char *path);  /* "a.b.c" */
const cJSON *pf_json_at(const cJSON *obj, const char *path);

#endif
