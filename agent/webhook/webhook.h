/* webhook: `efa-preflight webhook`, the mutating admission webhook that puts
 * the gate into every Pod requesting EFA (gate.h says what is added).
 *
 *   POST /mutate   AdmissionReview in, AdmissionReview out (always allowed)
 *   GET  /healthz  "ok" (readiness and liveness)
 *   GET  /metrics  reviews by outcome, Prometheus text
 *
 * A review the webhook cannot read, or a Pod it cannot understand, is
 * answered allowed with no patch and a warning: the Pod is created ungated,
 * never refused, and the outcome is counted. */
#ifndef PF_WEBHOOK_H
#define PF_WEBHOOK_H

#include <stddef.h>

#include "../util/err.h"
#include "gate.h"

struct pf_webhook_opts {
    const char *bind_addr;     /* "" = every address */
    int port;                  /* 0 = the kernel's choice */
    const char *tls_cert;      /* PEM files, re-read when they change; NULL = */
    const char *tls_key;       /* plain HTTP (tests only: the API server needs TLS) */
    size_t max_body;           /* larger reviews get 413 */
    unsigned threads;
    const char *own_namespace; /* Pods here are never touched ("" = none) */
    struct pf_gate_opts gate;
};

/* What became of one review (the /metrics label values). */
enum pf_webhook_outcome {
    PF_WH_INJECTED, PF_WH_NO_EFA, PF_WH_ALREADY, PF_WH_OPTED_OUT,
    PF_WH_OWN_NAMESPACE, PF_WH_NOT_POD, PF_WH_MALFORMED, PF_WH_ERROR,
    PF_WH_NOUTCOMES
};
const char *pf_webhook_outcome_name(enum pf_webhook_outcome oc);

/* The whole answer to one request body, without a server: the response
 * document (malloc'd) and the outcome. Fails only when out of memory. */
pf_err pf_webhook_review(const struct pf_webhook_opts *o, const char *body, size_t len,
                         char **out, size_t *out_len, enum pf_webhook_outcome *oc,
                         char *msg);

struct pf_webhook;
pf_err pf_webhook_start(const struct pf_webhook_opts *o, struct pf_webhook **out,
                        char *msg);
int pf_webhook_port(const struct pf_webhook *w);
void pf_webhook_stop(struct pf_webhook *w);

#endif
