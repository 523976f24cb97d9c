/* The Kubernetes API client's pure parts and its failure paths that need no
 * server: addresses, escaping, label syntax, Retry-After, backoff bounds,
 * identity precedence, option errors, and no token in any error text. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "k8s/backoff.h"
#include "util/clock.h"
#include "k8s/client.h"
#include "util/json.h"

Test(kubeapi, server_url_brackets_ipv6)
{
    char url[128], err[PF_ERRLEN];
    cr_assert_eq(pf_kube_server_url("10.96.0.1", "443", url, sizeof(url), err),
                 PF_OK);
    cr_assert_str_eq(url, "https://10.96.0.1:443");
    cr_assert_eq(pf_kube_server_url("fd00:10:96::1", "6443", url, sizeof(url),
                                    err), PF_OK);
    cr_assert_str_eq(url, "https://[fd00:10:96::1]:6443");
    cr_assert_eq(pf_kube_server_url("kubernetes.default.svc", "", url,
                                    sizeof(url), err), PF_OK);
    cr_assert_str_eq(url, "https://kubernetes.default.svc:443");
    cr_assert_eq(pf_kube_server_url("", "443", url, sizeof(url), err),
                 PF_ERR_USAGE);
}

Test(kubeapi, query_escape)
{
    char out[64], err[PF_ERRLEN];
    cr_assert_eq(pf_kube_query_escape("a.b/c=d,e f", out, sizeof(out), err),
                 PF_OK);
    cr_assert_str_eq(out, "a.b%2Fc%3Dd%2Ce%20f");
    cr_assert_eq(pf_kube_query_escape("////", out, 8, err), PF_ERR_USAGE);
}

Test(kubeapi, names_and_labels)
{
    cr_assert(pf_k8s_name_ok("ip-10-0-1-2.ec2.internal"));
    cr_assert_not(pf_k8s_name_ok("Upper"));
    cr_assert_not(pf_k8s_name_ok("a/b"));
    cr_assert_not(pf_k8s_name_ok("-a"));
    cr_assert_not(pf_k8s_name_ok(""));
    /* The API server's DNS-1123 subdomain: parts start and end alnum. */
    cr_assert_not(pf_k8s_name_ok("a..b"));
    cr_assert_not(pf_k8s_name_ok("a-.b"));
    cr_assert_not(pf_k8s_name_ok("a.-b"));
    cr_assert(pf_k8s_name_ok("a-b.c-d.e"));

    cr_assert(pf_label_value_ok(""));
    cr_assert(pf_label_value_ok("20261122T010203Z"));
    cr_assert(pf_label_value_ok("335.2"));
    cr_assert_not(pf_label_value_ok("2026-11-22T01:02:03Z"));
    cr_assert_not(pf_label_value_ok("-x"));
    cr_assert_not(pf_label_value_ok(
        "a123456789012345678901234567890123456789012345678901234567890123"));
    cr_assert(pf_label_value_ok(
        "a12345678901234567890123456789012345678901234567890123456789012"));

    cr_assert(pf_label_key_ok("efa-preflight.io/status"));
    cr_assert(pf_label_key_ok("status"));
    cr_assert_not(pf_label_key_ok("Efa.io/status"));
    cr_assert_not(pf_label_key_ok("/status"));
    cr_assert_not(pf_label_key_ok("efa-preflight.io/"));
    cr_assert_not(pf_label_key_ok("efa..preflight.io/status"));
}

Test(kubeapi, retry_after)
{
    cr_assert_eq(pf_kube_retry_after_ms(" 2\r\n"), 2000);
    cr_assert_eq(pf_kube_retry_after_ms("0"), 0);
    cr_assert_eq(pf_kube_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
    cr_assert_eq(pf_kube_retry_after_ms("5s"), -1);
    cr_assert_eq(pf_kube_retry_after_ms(NULL), -1);
    /* Over an hour: still a wait (clamped), never "retry at once". */
    cr_assert_eq(pf_kube_retry_after_ms("3600"), 3600000);
    cr_assert_eq(pf_kube_retry_after_ms("100000"), 3600000);
    cr_assert_eq(pf_kube_retry_after_ms("99999999999999999999999"), 3600000);
}

Test(kubeapi, backoff_is_capped_and_jittered)
{
    uint64_t rng = 12345;
    int64_t seen_min = 1 << 30, seen_max = 0;

    for (int i = 0; i < 200; i++) {
        int64_t d = pf_k8s_backoff_ms(1, 200, 5000, &rng);
        cr_assert(d >= 100 && d <= 200, "attempt 1 gave %lld", (long long)d);
        d = pf_k8s_backoff_ms(3, 200, 5000, &rng);
        cr_assert(d >= 400 && d <= 800, "attempt 3 gave %lld", (long long)d);
        d = pf_k8s_backoff_ms(30, 200, 5000, &rng);
        cr_assert(d >= 2500 && d <= 5000, "attempt 30 gave %lld", (long long)d);
        if (d < seen_min) seen_min = d;
        if (d > seen_max) seen_max = d;
    }
    cr_assert(seen_max > seen_min, "no jitter: always %lld", (long long)seen_min);
}

Test(kubeapi, identity_prefers_config_then_env)
{
    struct pf_kube_given given = { .pod = "flag-pod" };
    struct pf_kube_identity id;

    setenv("POD_NAME", "env-pod", 1);
    setenv("POD_NAMESPACE", "env-ns", 1);
    setenv("NODE_NAME", "env-node", 1);
    setenv("POD_IP", "10.254.40.9", 1);
    pf_kube_identity(&given, &id);
    cr_assert_str_eq(id.pod, "flag-pod");
    cr_assert_str_eq(id.ns, "env-ns");
    cr_assert_str_eq(id.node, "env-node");
    cr_assert_str_eq(id.pod_ip, "10.254.40.9");
    unsetenv("POD_NAME");
    unsetenv("POD_NAMESPACE");
    unsetenv("NODE_NAME");
    unsetenv("POD_IP");
}

Test(kubeapi, opts_in_cluster_and_errors)
{
    struct pf_kube_given given = { 0 };
    struct pf_kube_opts o;
    char err[PF_ERRLEN];

    unsetenv("KUBERNETES_SERVICE_HOST");
    cr_assert_eq(pf_kube_opts_init(&o, &given, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "KUBERNETES_SERVICE_HOST"), "%s", err);

    given.api_server = "http://10.0.0.1:6443";
    cr_assert_eq(pf_kube_opts_init(&o, &given, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "https://"), "%s", err);

    given.api_server = "https://127.0.0.1:33999/";
    given.ca_file = "/nonexistent/ca.crt";
    cr_assert_eq(pf_kube_opts_init(&o, &given, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "/nonexistent/ca.crt"), "%s", err);

    given.ca_file = "";
    cr_assert_eq(pf_kube_opts_init(&o, &given, err), PF_OK);
    cr_assert_str_eq(o.server, "https://127.0.0.1:33999");

    given.api_server = NULL;
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    /* In-cluster: the serviceaccount CA must exist; here it does not. */
    if (access(PF_KUBE_SA_DIR "/ca.crt", R_OK) != 0) {
        cr_assert_eq(pf_kube_opts_init(&o, &given, err), PF_ERR_USAGE);
        cr_assert(strstr(err, "ca.crt"), "%s", err);
    }
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

/* A request to a closed port fails after the bounded retries, quickly,
 * and the error names the request but never the token. */
Test(kubeapi, transport_error_is_bounded_and_has_no_token)
{
    const char *secret = "s3cr3t-token-value-0123456789";
    char tok[] = "/tmp/pf-kubeapi-token-XXXXXX";
    struct pf_kube_opts o;
    struct pf_kube *k;
    struct pf_kube_resp r;
    char err[PF_ERRLEN];
    int fd = mkstemp(tok);
    int64_t t0;
    pf_err rc;

    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, secret, strlen(secret)), (ssize_t)strlen(secret));
    close(fd);
    memset(&o, 0, sizeof(o));
    snprintf(o.server, sizeof(o.server), "https://127.0.0.1:33999");
    snprintf(o.token_file, sizeof(o.token_file), "%s", tok);
    o.connect_timeout_ms = 500;
    o.request_timeout_ms = 1000;
    o.max_attempts = 3;
    o.backoff_base_ms = 50;
    o.backoff_cap_ms = 100;
    cr_assert_eq(pf_kube_open(&o, &k, err), PF_OK);
    t0 = pf_now_ms();
    rc = pf_kube_do(k, "GET", "/api/v1/nodes/n1", NULL, NULL, &r, err);
    cr_assert_eq(rc, PF_ERR_API);
    cr_assert(pf_now_ms() - t0 < 3000, "took %lld ms",
              (long long)(pf_now_ms() - t0));
    cr_assert(strstr(err, "GET /api/v1/nodes/n1"), "%s", err);
    cr_assert(strstr(err, "attempt 3 of 3"), "%s", err);
    cr_assert_null(strstr(err, secret), "token leaked: %s", err);
    pf_kube_close(k);
    unlink(tok);
}

Test(kubeapi, token_file_with_control_bytes_is_refused)
{
    char tok[] = "/tmp/pf-kubeapi-token-XXXXXX";
    struct pf_kube_opts o;
    struct pf_kube *k = NULL;
    char err[PF_ERRLEN];
    int fd = mkstemp(tok);

    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "abc\r\nX-Evil: 1", 14), 14);
    close(fd);
    memset(&o, 0, sizeof(o));
    snprintf(o.server, sizeof(o.server), "https://127.0.0.1:33999");
    snprintf(o.token_file, sizeof(o.token_file), "%s", tok);
    cr_assert_eq(pf_kube_open(&o, &k, err), PF_ERR_USAGE);
    cr_assert_null(k);
    cr_assert_null(strstr(err, "abc"), "%s", err);
    unlink(tok);
}

Test(kubeapi, status_errors_map_to_codes)
{
    /* 400 and 422: the request is wrong (a selector, a label), not the
     * API server down: usage (exit 2), never APIUnavailable (exit 3). */
    struct { long status; pf_err want; } cases[] = {
        { 400, PF_ERR_USAGE }, { 422, PF_ERR_USAGE }, { 401, PF_ERR_UNAUTHORIZED },
        { 403, PF_ERR_FORBIDDEN }, { 404, PF_ERR_NOTFOUND }, { 409, PF_ERR_API },
        { 429, PF_ERR_API }, { 500, PF_ERR_API },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_kube_resp r = { .status = cases[i].status };
        char err[PF_ERRLEN];
        snprintf(r.message, sizeof(r.message), "m%ld", cases[i].status);
        cr_assert_eq(pf_kube_status_err(&r, "GET", "/x", err), cases[i].want,
                     "HTTP %ld", cases[i].status);
        char want[64];
        snprintf(want, sizeof(want), "GET /x: HTTP %ld (m%ld)", cases[i].status,
                 cases[i].status);
        cr_assert_str_eq(err, want);
    }
}

Test(kubeapi, json_paths)
{
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"p\",\"labels\":"
                           "{\"a.b/c\":\"v\"}},\"spec\":{\"n\":3}}");
    cr_assert_str_eq(pf_json_str(o, "metadata.name"), "p");
    cr_assert_null(pf_json_str(o, "spec.n"));
    cr_assert_null(pf_json_str(o, "status.podIP"));
    cr_assert_not_null(pf_json_at(o, "spec.n"));
    cJSON_Delete(o);
}

struct cancel_later {
    atomic_int *flag;
    int64_t after_ms;
};

static void *cancel_after(void *arg)
{
    struct cancel_later *c = arg;
    pf_sleep_ms(c->after_ms);
    atomic_store(c->flag, 1);
    return NULL;
}

/* A SIGTERM being handled sets the cancel flag: a request stuck on a
 * server that never answers ends within about a second, and a cancelled
 * client sends nothing more. */
Test(kubeapi, cancel_ends_a_request_in_flight, .timeout = 10)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t alen = sizeof(a);
    struct cancel_later c;
    struct pf_kube_opts o;
    struct pf_kube *k;
    struct pf_kube_resp r;
    atomic_int flag;
    char err[PF_ERRLEN];
    pthread_t th;
    int64_t t0;
    int s = socket(AF_INET, SOCK_STREAM, 0);

    /* Listens, never accepts: the handshake completes, no byte comes back. */
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(s, 4), 0);
    cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &alen), 0);
    atomic_init(&flag, 0);
    memset(&o, 0, sizeof(o));
    snprintf(o.server, sizeof(o.server), "https://127.0.0.1:%d",
             ntohs(a.sin_port));
    o.connect_timeout_ms = 5000;
    o.request_timeout_ms = 8000;
    o.max_attempts = 3;
    o.backoff_base_ms = 50;
    o.backoff_cap_ms = 100;
    o.cancel = &flag;
    cr_assert_eq(pf_kube_open(&o, &k, err), PF_OK, "%s", err);
    c = (struct cancel_later){ &flag, 300 };
    cr_assert_eq(pthread_create(&th, NULL, cancel_after, &c), 0);
    t0 = pf_now_ms();
    cr_assert_eq(pf_kube_do(k, "GET", "/api/v1/nodes/n1", NULL, NULL, &r, err),
                 PF_ERR_API);
    cr_assert(pf_now_ms() - t0 < 2500, "cancel took %lld ms",
              (long long)(pf_now_ms() - t0));
    cr_assert(strstr(err, "interrupted"), "%s", err);
    pthread_join(th, NULL);

    t0 = pf_now_ms();
    cr_assert_eq(pf_kube_do(k, "PATCH", "/api/v1/nodes/n1", NULL, "{}", &r, err),
                 PF_ERR_API);
    cr_assert(pf_now_ms() - t0 < 100);
    cr_assert_str_eq(err, "PATCH /api/v1/nodes/n1: interrupted");
    pf_kube_close(k);
    close(s);
}
