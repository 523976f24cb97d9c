/* server: the webhook's HTTP(S) endpoints over util/httpd, and the one
 * function that turns a review body into its answer. */
#include "webhook.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/httpd.h"
#include "../util/log.h"
#include "../util/sanitize.h"
#include "response.h"
#include "review.h"

struct pf_webhook {
    struct pf_webhook_opts o;
    char *own_ns, *agent_image, *prefix, *budget, *baseline, *dra, *bind,
        *cert, *key;                                              /* copies of o's strings */
    struct pf_httpd *httpd;
    atomic_ulong count[PF_WH_NOUTCOMES];
};

const char *pf_webhook_outcome_name(enum pf_webhook_outcome oc)
{
    static const char *const names[] = {
        "injected", "no_efa", "already_gated", "opted_out",
        "own_namespace", "not_a_pod_create", "malformed", "error",
    };
    return oc < PF_WH_NOUTCOMES ? names[oc] : "?";
}

pf_err pf_webhook_review(const struct pf_webhook_opts *o, const char *body, size_t len,
                         char **out, size_t *out_len, enum pf_webhook_outcome *oc,
                         char *msg)
{
    struct pf_review r;
    char why[PF_ERRLEN] = "", warning[PF_ERRLEN + 64] = "";
    cJSON *patch = NULL;
    enum pf_gate_decision d = PF_GATE_NO_EFA;

    pf_err e = pf_review_parse(body, len, &r, why);
    if (e != PF_OK) {
        *oc = PF_WH_MALFORMED;
        snprintf(warning, sizeof warning, "efa-preflight: review not understood, "
                 "pod not gated: %s", why);
    } else if (!r.pod_create) {
        *oc = PF_WH_NOT_POD;
    } else if (o->own_namespace && o->own_namespace[0] &&
               !strcmp(r.ns, o->own_namespace)) {
        *oc = PF_WH_OWN_NAMESPACE; /* our own pods (and the webhook's) stay as they are */
    } else if ((e = pf_gate_patch(r.pod, &o->gate, &d, &patch, why)) != PF_OK) {
        *oc = e == PF_ERR_NOMEM ? PF_WH_ERROR : PF_WH_MALFORMED;
        snprintf(warning, sizeof warning, "efa-preflight: pod not gated: %s", why);
    } else {
        *oc = d == PF_GATE_INJECT ? PF_WH_INJECTED
              : d == PF_GATE_ALREADY ? PF_WH_ALREADY
              : d == PF_GATE_OPTED_OUT ? PF_WH_OPTED_OUT : PF_WH_NO_EFA;
    }
    if (warning[0]) {
        pf_sanitize_inplace(warning, sizeof warning);
        pf_warn("webhook: review %s in namespace %s: %s", r.uid[0] ? r.uid : "(no uid)",
                r.ns[0] ? r.ns : "-", warning + strlen("efa-preflight: "));
    } else {
        pf_debug("webhook: review %s in namespace %s: %s", r.uid, r.ns,
                 pf_webhook_outcome_name(*oc));
    }
    e = pf_admission_response(r.uid, patch, warning[0] ? warning : NULL, out, out_len, msg);
    if (e != PF_OK)
        *oc = PF_WH_ERROR;
    cJSON_Delete(patch);
    pf_review_free(&r);
    return e;
}

static char *dup_text(const char *s, size_t *len)
{
    char *b = strdup(s);
    *len = b ? strlen(b) : 0;
    return b;
}

static void metrics(struct pf_webhook *w, struct pf_http_resp *resp)
{
    size_t cap = 256 + 96 * PF_WH_NOUTCOMES, n = 0;
    char *b = malloc(cap);
    if (!b) {
        resp->status = 500;
        return;
    }
    n += (size_t)snprintf(b + n, cap - n,
                          "# HELP efa_preflight_webhook_reviews_total Admission reviews "
                          "answered, by outcome.\n"
                          "# TYPE efa_preflight_webhook_reviews_total counter\n");
    for (int i = 0; i < PF_WH_NOUTCOMES && n < cap; i++)
        n += (size_t)snprintf(b + n, cap - n,
                              "efa_preflight_webhook_reviews_total{outcome=\"%s\"} %lu\n",
                              pf_webhook_outcome_name((enum pf_webhook_outcome)i),
                              atomic_load(&w->count[i]));
    resp->body = b;
    resp->body_len = n < cap ? n : cap - 1;
    resp->content_type = "text/plain; version=0.0.4";
}

static void handle(void *ctx, const struct pf_http_req *req, struct pf_http_resp *resp)
{
    struct pf_webhook *w = ctx;
    if (!strcmp(req->url, "/healthz")) {
        resp->body = dup_text("ok\n", &resp->body_len);
        return;
    }
    if (!strcmp(req->url, "/metrics")) {
        metrics(w, resp);
        return;
    }
    if (strcmp(req->url, "/mutate") != 0) {
        resp->status = 404;
        resp->body = dup_text("not found: the webhook serves /mutate, /healthz, /metrics\n",
                              &resp->body_len);
        return;
    }
    if (strcmp(req->method, "POST") != 0) {
        resp->status = 405;
        resp->body = dup_text("POST an AdmissionReview to /mutate\n", &resp->body_len);
        return;
    }
    char msg[PF_ERRLEN];
    enum pf_webhook_outcome oc = PF_WH_ERROR;
    if (pf_webhook_review(&w->o, req->body, req->body_len, &resp->body, &resp->body_len,
                          &oc, msg) != PF_OK) {
        pf_warn("webhook: %s", msg);
        resp->status = 500;
    } else {
        resp->content_type = "application/json";
    }
    atomic_fetch_add(&w->count[oc], 1);
}

static void webhook_free(struct pf_webhook *w)
{
    free(w->own_ns);
    free(w->agent_image);
    free(w->dra);
    free(w->prefix);
    free(w->budget);
    free(w->baseline);
    free(w->bind);
    free(w->cert);
    free(w->key);
    free(w);
}

/* strdup that keeps NULL as NULL and reports failure through *bad. */
static char *copy(const char *s, int *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *bad = 1;
    return d;
}

pf_err pf_webhook_start(const struct pf_webhook_opts *o, struct pf_webhook **out,
                        char *msg)
{
    *out = NULL;
    if (!o->gate.agent_image || !o->gate.agent_image[0])
        return pf_fail(msg, PF_ERR_USAGE, "webhook: no agent image (--agent-image): the "
                       "gate copies the binary from it");
    if (!o->gate.prefix)
        return pf_fail(msg, PF_ERR_USAGE, "webhook: no label prefix");
    struct pf_webhook *w = calloc(1, sizeof *w);
    if (!w)
        return pf_fail(msg, PF_ERR_NOMEM, "out of memory");
    int bad = 0;
    w->o = *o;
    w->o.own_namespace = w->own_ns = copy(o->own_namespace, &bad);
    w->o.gate.agent_image = w->agent_image = copy(o->gate.agent_image, &bad);
    w->o.gate.prefix = w->prefix = copy(o->gate.prefix, &bad);
    w->o.gate.taint_budget = w->budget = copy(o->gate.taint_budget, &bad);
    w->o.gate.baseline_configmap = w->baseline =
        copy(o->gate.baseline_configmap, &bad);
    w->o.gate.dra_claims = w->dra = copy(o->gate.dra_claims, &bad);
    w->o.bind_addr = w->bind = copy(o->bind_addr, &bad);
    w->o.tls_cert = w->cert = copy(o->tls_cert, &bad);
    w->o.tls_key = w->key = copy(o->tls_key, &bad);
    if (bad) {
        webhook_free(w);
        return pf_fail(msg, PF_ERR_NOMEM, "out of memory");
    }
    struct pf_httpd_opts ho = {
        .bind_addr = w->o.bind_addr,
        .port = o->port,
        .tls_cert = w->o.tls_cert,
        .tls_key = w->o.tls_key,
        .max_body = o->max_body,
        .threads = o->threads,
        /* One API server sends up to its mutating in-flight limit (200 by
         * default) reviews at once, each on its own connection. */
        .per_ip_limit = 256,
        .handler = handle,
        .ctx = w,
    };
    pf_err e = pf_httpd_start(&ho, &w->httpd, msg);
    if (e != PF_OK) {
        pf_err_prefix(msg, "webhook");
        webhook_free(w);
        return e;
    }
    *out = w;
    return PF_OK;
}

int pf_webhook_port(const struct pf_webhook *w)
{
    return w ? pf_httpd_port(w->httpd) : 0;
}

void pf_webhook_stop(struct pf_webhook *w)
{
    if (!w)
        return;
    pf_httpd_stop(w->httpd);
    webhook_free(w);
}
