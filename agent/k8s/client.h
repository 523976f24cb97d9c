/* The raw Kubernetes API client over libcurl: requests by path, their
 * responses, a watch stream. Used inside agent/k8s/ and by the few files
 * test_layout.sh allows; every other file reaches the API through the
 * narrow headers beside this one (session.h, pods.h, nodes.h, pool.h,
 * lease.h, configmap.h).
 *
 * The token is re-read every 60 s and after a 401, sent only in the
 * Authorization header, and never appears in a log line, an error message
 * or a report (CURLOPT_VERBOSE stays off). Requests retry transport errors,
 * 429 and 5xx with capped exponential backoff and jitter (backoff.h),
 * honouring Retry-After, a bounded number of times; 409 is left to the
 * caller, which re-reads and retries. */
#ifndef PF_K8S_CLIENT_H
#define PF_K8S_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../util/err.h"
#include "../util/sizes.h"
#include "object.h"
#include "session.h"

struct pf_kube_resp {
    long status;                      /* HTTP status */
    cJSON *json;                      /* parsed body, NULL if not JSON */
    char message[256];                /* Status.message, for errors */
};

/* Options from what was given, with the in-cluster env and files as
 * fallbacks (opts.c; session.h's pf_k8s_target calls both). */
pf_err pf_kube_opts_init(struct pf_kube_opts *o, const struct pf_kube_given *g,
                         char *err);
void pf_kube_identity(const struct pf_kube_given *g,
                      struct pf_kube_identity *id);

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

/* Turn a non-2xx response into an error naming the request, the status and
 * the server's message: 401 PF_ERR_UNAUTHORIZED, 403 PF_ERR_FORBIDDEN, 404 PF_ERR_NOTFOUND,
 * 400/422 PF_ERR_USAGE, else PF_ERR_API. */
pf_err pf_kube_status_err(const struct pf_kube_resp *r, const char *method,
                          const char *path, char *err);

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

/* "https://host:port" with an IPv6 host in brackets. */
pf_err pf_kube_server_url(const char *host, const char *port, char *out,
                          size_t len, char *err);
/* Percent-encode a query value. */
pf_err pf_kube_query_escape(const char *in, char *out, size_t len,
                            char *err);
/* Retry-After header value -> ms (seconds form only, clamped to an
 * hour); -1 when absent or not a number. */
int64_t pf_kube_retry_after_ms(const char *value);

#endif
