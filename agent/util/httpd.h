/* A small embedded HTTP(S) server over libmicrohttpd, for the webhook
 * (HTTPS, AdmissionReview) and the monitor (/metrics, /healthz).
 *
 * The caller gives one handler; the server buffers the request body up to a
 * bound (413 beyond it, before reading it when Content-Length says so), calls
 * the handler once per complete request, and sends what it returns. With TLS
 * the certificate and key are PEM files that are re-read when either changes
 * (cert-manager and kubelet secret mounts rotate them in place), checked at
 * most once a second during handshakes: no restart. A half-written pair
 * (key not matching the certificate) is ignored and the old pair served. */
#ifndef PF_HTTPD_H
#define PF_HTTPD_H

#include <stddef.h>

#include "err.h"

struct pf_http_req {
    const char *method;       /* "GET", "POST", ... */
    const char *url;          /* path, without the query string */
    const char *content_type; /* the request's, or "" */
    const char *body;         /* NUL-terminated copy; body_len bytes */
    size_t body_len;
};

struct pf_http_resp {
    int status;               /* 200 unless the handler sets it */
    const char *content_type; /* static string; default "text/plain" */
    char *body;               /* malloc'd by the handler; the server frees it */
    size_t body_len;
};

/* Called from the server's threads, concurrently: ctx must be safe to share. */
typedef void (*pf_http_handler)(void *ctx, const struct pf_http_req *req,
                                struct pf_http_resp *resp);

struct pf_httpd_opts {
    const char *bind_addr;     /* NULL or "" = every address */
    int port;                  /* 0 = one the kernel picks (pf_httpd_port) */
    const char *tls_cert;      /* PEM chain file; NULL (with tls_key) = plain HTTP */
    const char *tls_key;       /* PEM private key file */
    size_t max_body;           /* bytes; 0 = 64 KiB */
    unsigned threads;          /* worker threads; 0 = 2 */
    unsigned conn_timeout_s;   /* idle connection timeout; 0 = 10 */
    unsigned conn_limit;       /* open connections; 0 = 256 */
    pf_http_handler handler;
    void *ctx;
};

struct pf_httpd;

/* Listen and serve in background threads. On failure *out is NULL and msg
 * names what failed (address, port, certificate file). */
pf_err pf_httpd_start(const struct pf_httpd_opts *o, struct pf_httpd **out,
                      char *msg);

/* The port actually bound (the kernel's choice when opts.port was 0). */
int pf_httpd_port(const struct pf_httpd *h);

/* Number of certificate pairs loaded so far (1 after start with TLS, +1 for
 * each rotation picked up; 0 without TLS). For tests and logs. */
unsigned pf_httpd_cert_generation(struct pf_httpd *h);

/* Stop accepting, finish or close open connections, free everything. */
void pf_httpd_stop(struct pf_httpd *h);

#endif
