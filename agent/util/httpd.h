/* A small embedded HTTP(S) server over libmicrohttpd, for the webhook
 * (HTTPS, AdmissionReview) and the monitor (/metrics, /healthz).
 *
 * The caller gives one handler; the server buffers the request body up to a
 * bound (413 beyond it: a body up to 8 times the bound is read and dropped
 * first, so the client sees the status; a larger one is refused unread),
 * calls the handler once per complete request, and sends what it returns.
 *
 * Hostile clients (slowloris, unfinished bodies, floods) are held by:
 *   - a per-client (IP address) connection limit, and a total one: past
 *     either, the connection waiting longest for its request is shut down
 *     (libmicrohttpd refuses only at 1.5 and 1.25 times them), so a new
 *     connection (a legitimate client's) is served, not refused;
 *   - a deadline per request: from the accept, or the end of the previous
 *     answer on the connection, to the last byte of this answer; bytes that
 *     trickle in do not extend it. A connection past it is shut down;
 *   - a bound on the body bytes held across all connections: past it, the
 *     connection holding the most is shut down;
 *   - framing that is not plain: a body must come with one Content-Length
 *     (chunked: 411, two different lengths: 400), so its size is known
 *     before a byte of it is read.
 * With TLS: TLS 1.2 and 1.3 with AEAD suites only, no renegotiation. The
 * certificate and key are PEM files that are re-read when either changes
 * (cert-manager and kubelet secret mounts rotate them in place), checked at
 * most once a second during handshakes: no restart. A half-written pair
 * (key not matching the certificate) or a path that is not a regular file
 * (a FIFO, a device) is ignored and the old pair served. */
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
    size_t max_buffered;       /* body bytes held across all connections;
                                  0 = the larger of 16 MiB and 2 x max_body */
    unsigned threads;          /* worker threads; 0 = 2 */
    unsigned request_timeout_s; /* a request's whole time (see above); 0 = 10 */
    unsigned conn_limit;       /* open connections; 0 = 1024 (fewer when
                                  RLIMIT_NOFILE cannot be raised for them) */
    unsigned per_ip_limit;     /* open connections of one client; 0 = 128 */
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

/* What the server holds now and what it cut, for tests and benchmarks. */
struct pf_httpd_stats {
    unsigned conns;            /* open connections */
    size_t buffered;           /* body bytes held */
    unsigned long timed_out;   /* connections shut down past their deadline */
    unsigned long evicted;     /* shut down to make room (connections, bytes) */
};
void pf_httpd_stats(struct pf_httpd *h, struct pf_httpd_stats *out);

/* The TLS priority string the server uses (GnuTLS syntax). */
extern const char pf_httpd_tls_priorities[];

/* Stop accepting, close open connections at once, free everything. */
void pf_httpd_stop(struct pf_httpd *h);

#endif
