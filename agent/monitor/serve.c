/* The scrape endpoint (monitor.h): /metrics serves the last interval's
 * text as the loop left it, /healthz says whether the loop is alive. The
 * server's threads only copy what the loop published under ctl->lock, so a
 * scrape never reads sysfs or waits on the API. */
#include "monitor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/clock.h"
#include "../util/httpd.h"
#include "../util/log.h"

/* The loop is alive while it read within this many intervals (and at
 * least this many seconds: a short interval must not flap /healthz). */
#define ALIVE_INTERVALS 3
#define ALIVE_MIN_S 10.0

static char *dup_text(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static void handle(void *ctx, const struct pf_http_req *req,
                   struct pf_http_resp *resp)
{
    struct pf_mon_ctl *ctl = ctx;
    static const char none[] = "# no interval read yet\n";

    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
        resp->status = 405;
        resp->body = dup_text("GET only\n", 9);
        resp->body_len = resp->body ? 9 : 0;
        return;
    }
    if (!strcmp(req->url, "/metrics")) {
        pthread_mutex_lock(&ctl->lock);
        if (ctl->text) {
            resp->body = dup_text(ctl->text, ctl->text_len);
            resp->body_len = resp->body ? ctl->text_len : 0;
        } else {
            resp->body = dup_text(none, sizeof(none) - 1);
            resp->body_len = resp->body ? sizeof(none) - 1 : 0;
        }
        pthread_mutex_unlock(&ctl->lock);
        resp->status = resp->body ? 200 : 500;
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        return;
    }
    if (!strcmp(req->url, "/healthz")) {
        double age, bound;
        char msg[128];
        int n;

        pthread_mutex_lock(&ctl->lock);
        age = ctl->last_read > 0 ? pf_now_s() - ctl->last_read : -1;
        bound = ALIVE_INTERVALS * ctl->interval_s;
        pthread_mutex_unlock(&ctl->lock);
        if (bound < ALIVE_MIN_S)
            bound = ALIVE_MIN_S;
        /* Not read yet counts as alive: the first read is under way. */
        resp->status = age < 0 || age <= bound ? 200 : 503;
        n = snprintf(msg, sizeof(msg), resp->status == 200 ? "ok\n"
                     : "the monitor last read the NICs %.0f s ago\n", age);
        resp->body = dup_text(msg, (size_t)n);
        resp->body_len = resp->body ? (size_t)n : 0;
        return;
    }
    resp->status = 404;
    resp->body = dup_text("not found: /metrics or /healthz\n", 32);
    resp->body_len = resp->body ? 32 : 0;
}

pf_err pf_mon_listen_parse(const char *spec, char *host, size_t len,
                           int *port, char *err)
{
    const char *colon = strrchr(spec, ':');
    char *end;
    long p;

    if (!colon)
        return pf_fail(err, PF_ERR_USAGE, "listen '%s': expected host:port "
                       "(e.g. 0.0.0.0:9464 or :9464)", spec);
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
        return pf_fail(err, PF_ERR_USAGE, "listen '%s': '%s' is not a port "
                       "(0-65535)", spec, colon + 1);
    if ((size_t)(colon - spec) >= len)
        return pf_fail(err, PF_ERR_USAGE, "listen '%s': host too long", spec);
    /* [::1]:9464 */
    if (colon - spec >= 2 && spec[0] == '[' && colon[-1] == ']')
        snprintf(host, len, "%.*s", (int)(colon - spec - 2), spec + 1);
    else
        snprintf(host, len, "%.*s", (int)(colon - spec), spec);
    *port = (int)p;
    return PF_OK;
}

pf_err pf_mon_serve(const char *listen, struct pf_mon_ctl *ctl,
                    struct pf_httpd **out, char *err)
{
    struct pf_httpd_opts o = { 0 };
    char host[PF_NAME_MAX];
    int port;
    pf_err rc;

    *out = NULL;
    rc = pf_mon_listen_parse(listen, host, sizeof(host), &port, err);
    if (rc != PF_OK)
        return rc;
    o.bind_addr = host;
    o.port = port;
    o.max_body = 1024;               /* GETs only */
    o.max_buffered = 64 * 1024;
    o.threads = 1;
    /* Prometheus and the kubelet's probes: a few connections each; a
     * client holding more is cut before it keeps a scrape out. */
    o.conn_limit = 512;
    o.per_ip_limit = 16;
    o.handler = handle;
    o.ctx = ctl;
    rc = pf_httpd_start(&o, out, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "listen %s", listen);
        return rc == PF_ERR_USAGE ? rc : PF_ERR_USAGE;
    }
    pf_info("monitor: serving /metrics and /healthz on %s:%d",
            host[0] ? host : "*", pf_httpd_port(*out));
    return PF_OK;
}
