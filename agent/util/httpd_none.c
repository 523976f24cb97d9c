/* The HTTP(S) server left out (make PF_HTTPD=0, the glibc-only static
 * build): libmicrohttpd and GnuTLS have no static archives that link
 * without the rest of GnuTLS's stack, and the copy-in gate never serves
 * HTTP. Starting a server says so instead of failing to link. */
#include "httpd.h"

pf_err pf_httpd_start(const struct pf_httpd_opts *o, struct pf_httpd **out, char *msg)
{
    (void)o;
    *out = NULL;
    return pf_fail(msg, PF_ERR_UNSUPPORTED,
                   "http server: not built into this binary (built with PF_HTTPD=0); "
                   "use the dynamically linked build");
}

int pf_httpd_port(const struct pf_httpd *h)
{
    (void)h;
    return 0;
}

unsigned pf_httpd_cert_generation(struct pf_httpd *h)
{
    (void)h;
    return 0;
}

void pf_httpd_stop(struct pf_httpd *h)
{
    (void)h;
}

void pf_httpd_stats(struct pf_httpd *h, struct pf_httpd_stats *out)
{
    (void)h;
    *out = (struct pf_httpd_stats){ 0 };
}

const char pf_httpd_tls_priorities[] = "";
