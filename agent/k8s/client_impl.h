/* Inside the raw client only (client.c, request.c, watch.c): the client's
 * state and the pieces its request and its watch share. */
#ifndef PF_K8S_CLIENT_IMPL_H
#define PF_K8S_CLIENT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "client.h"

#define TOKEN_MAX (64 * 1024)
#define TOKEN_REREAD_MS 60000
#define BODY_MAX ((size_t)256 << 20)

struct pf_kube {
    struct pf_kube_opts o;
    CURL *curl;
    char *token;                      /* NUL-terminated, wiped on close */
    int64_t token_read_ms;
    uint64_t rng;
};

struct buf {
    char *p;
    size_t len, cap;
    bool overflow;
};

/* Zero n bytes of a secret (the token, its header) so no copy outlives
 * its use (client.c). */
void pf_kc_wipe(char *p, size_t n);
/* (Re-)read the token file into k (client.c); err may be NULL. */
pf_err pf_kc_load_token(struct pf_kube *k, char *err);
/* curl's write callback: append to a struct buf, bounded by BODY_MAX. */
size_t pf_kc_on_body(char *data, size_t size, size_t n, void *user);
/* Set k's handle up for one request to path (request.c); *hdrs to be
 * freed with pf_kc_free_headers. */
pf_err pf_kc_setup(struct pf_kube *k, const char *method, const char *path,
                   const char *content_type, const char *body,
                   long timeout_ms, struct curl_slist **hdrs, char *url,
                   size_t url_len, char *curl_err, char *err);
void pf_kc_free_headers(struct curl_slist *h);
/* A CA that does not verify the server (no retry can help). */
bool pf_kc_tls_trust_failure(CURLcode cc);

#endif
