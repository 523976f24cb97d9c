/* Where the API server is and who we are: flags, then the in-cluster env
 * and serviceaccount files. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/sanitize.h"

pf_err pf_kube_server_url(const char *host, const char *port, char *out,
                          size_t len, char *err)
{
    int n;

    if (!host || !*host)
        return pf_fail(err, PF_ERR_USAGE, "API server host is empty");
    if (strchr(host, ':') && host[0] != '[')
        n = snprintf(out, len, "https://[%s]:%s", host,
                     port && *port ? port : "443");
    else
        n = snprintf(out, len, "https://%s:%s", host,
                     port && *port ? port : "443");
    if (n < 0 || (size_t)n >= len)
        return pf_fail(err, PF_ERR_USAGE, "API server address too long");
    return PF_OK;
}

static const char *pick(const char *cfg_value, const char *env_name)
{
    const char *e;

    if (cfg_value && *cfg_value)
        return cfg_value;
    e = getenv(env_name);
    return e ? e : "";
}

void pf_kube_identity(const struct pf_kube_given *g,
                      struct pf_kube_identity *id)
{
    memset(id, 0, sizeof(*id));
    snprintf(id->pod, sizeof(id->pod), "%s", pick(g->pod, "POD_NAME"));
    snprintf(id->ns, sizeof(id->ns), "%s", pick(g->ns, "POD_NAMESPACE"));
    snprintf(id->node, sizeof(id->node), "%s", pick(g->node, "NODE_NAME"));
    snprintf(id->pod_ip, sizeof(id->pod_ip), "%s", pick(g->pod_ip, "POD_IP"));
    if (!id->ns[0]) {
        char line[PF_NAME_MAX];
        if (pf_read_line(PF_KUBE_SA_DIR "/namespace", line, sizeof(line),
                         NULL) == PF_OK)
            snprintf(id->ns, sizeof(id->ns), "%s", line);
    }
    /* From the environment: names, but nothing has checked them yet. */
    pf_sanitize_inplace(id->pod, sizeof(id->pod));
    pf_sanitize_inplace(id->ns, sizeof(id->ns));
    pf_sanitize_inplace(id->node, sizeof(id->node));
    pf_sanitize_inplace(id->pod_ip, sizeof(id->pod_ip));
}

pf_err pf_kube_opts_init(struct pf_kube_opts *o, const struct pf_kube_given *g,
                         char *err)
{
    const char *api = g->api_server ? g->api_server : "";
    const char *token = g->token_file ? g->token_file : "";
    const char *ca = g->ca_file ? g->ca_file : "";

    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = 5000;
    o->request_timeout_ms = 20000;
    o->max_attempts = 6;
    o->backoff_base_ms = 250;
    o->backoff_cap_ms = 8000;

    if (api[0]) {
        size_t n = strlen(api);
        if (strncmp(api, "https://", 8) != 0)
            return pf_fail(err, PF_ERR_USAGE,
                           "--api-server '%s' must start with https:// "
                           "(TLS is always verified)", api);
        while (n > 8 && api[n - 1] == '/')
            n--;
        if (n >= sizeof(o->server))
            return pf_fail(err, PF_ERR_USAGE, "--api-server is too long");
        memcpy(o->server, api, n);
        o->server[n] = '\0';
    } else {
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        if (!host || !*host)
            return pf_fail(err, PF_ERR_USAGE,
                           "no API server: KUBERNETES_SERVICE_HOST is unset "
                           "(not in a pod?) and --api-server was not given");
        if (pf_kube_server_url(host, port, o->server, sizeof(o->server),
                               err) != PF_OK)
            return PF_ERR_USAGE;
    }

    if (token[0])
        snprintf(o->token_file, sizeof(o->token_file), "%s", token);
    else if (!api[0] || access(PF_KUBE_SA_DIR "/token", R_OK) == 0)
        snprintf(o->token_file, sizeof(o->token_file), "%s",
                 PF_KUBE_SA_DIR "/token");

    if (ca[0])
        snprintf(o->ca_file, sizeof(o->ca_file), "%s", ca);
    else if (!api[0] || access(PF_KUBE_SA_DIR "/ca.crt", R_OK) == 0)
        snprintf(o->ca_file, sizeof(o->ca_file), "%s",
                 PF_KUBE_SA_DIR "/ca.crt");

    if (o->ca_file[0] && access(o->ca_file, R_OK) != 0)
        return pf_fail(err, PF_ERR_USAGE, "CA file %s is not readable",
                       o->ca_file);
    if (g->timeout_s > 0)
        o->deadline = pf_deadline_in((int64_t)g->timeout_s * 1000);
    return PF_OK;
}
