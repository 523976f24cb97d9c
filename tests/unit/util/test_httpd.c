/* The embedded HTTP(S) server: a kernel-chosen port, the handler's answer,
 * the body bound (413), a bad key pair refused at start, and a rotated
 * certificate served without a restart (libcurl as the client). */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/httpd.h"

static void echo(void *ctx, const struct pf_http_req *req, struct pf_http_resp *resp)
{
    (void)ctx;
    if (strcmp(req->url, "/missing") == 0) {
        resp->status = 404;
        return; /* no body: the server sends an empty one */
    }
    char head[256];
    int n = snprintf(head, sizeof head, "%s %s %s %zu:", req->method, req->url,
                     req->content_type, req->body_len);
    resp->body = malloc((size_t)n + req->body_len + 1);
    memcpy(resp->body, head, (size_t)n);
    memcpy(resp->body + n, req->body, req->body_len);
    resp->body_len = (size_t)n + req->body_len;
    resp->content_type = "application/json";
}

struct buf {
    char d[8192];
    size_t n;
};

static size_t collect(char *p, size_t sz, size_t nm, void *ud)
{
    struct buf *b = ud;
    size_t len = sz * nm;
    if (len > sizeof b->d - 1 - b->n)
        len = sizeof b->d - 1 - b->n;
    memcpy(b->d + b->n, p, len);
    b->n += len;
    b->d[b->n] = '\0';
    return sz * nm;
}

/* One request; returns the HTTP status, or -curl code on a transport error. */
static long fetch(const char *url, const char *body, size_t body_len, const char *ca,
                  struct buf *out)
{
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    out->n = 0;
    out->d[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    if (ca) {
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L); /* the name is "test", not 127.0.0.1 */
    }
    CURLcode rc = curl_easy_perform(c);
    long status = -(long)rc;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(c);
    return status;
}

Test(httpd, plain_http_kernel_port_handler_and_body_bound)
{
    char msg[PF_ERRLEN] = "";
    struct pf_httpd *h;
    struct pf_httpd_opts o = { .bind_addr = "127.0.0.1", .port = 0, .max_body = 1024,
                               .handler = echo };
    cr_assert_eq(pf_httpd_start(&o, &h, msg), PF_OK, "%s", msg);
    int port = pf_httpd_port(h);
    cr_assert(port > 0 && port < 65536);
    cr_assert_eq(pf_httpd_cert_generation(h), 0u);

    char url[128];
    struct buf b;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mutate?x=1", port);
    cr_assert_eq(fetch(url, "{\"a\":1}", 7, NULL, &b), 200);
    cr_assert_str_eq(b.d, "POST /mutate application/json 7:{\"a\":1}");

    snprintf(url, sizeof url, "http://127.0.0.1:%d/missing", port);
    cr_assert_eq(fetch(url, NULL, 0, NULL, &b), 404);
    cr_assert_eq(b.n, 0u);

    /* Exactly the bound is accepted; one byte more is refused unread. */
    char *big = malloc(1025);
    memset(big, 'x', 1025);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/b", port);
    cr_assert_eq(fetch(url, big, 1024, NULL, &b), 200);
    cr_assert(strstr(b.d, " 1024:xxx") != NULL, "%s", b.d);
    cr_assert_eq(fetch(url, big, 1025, NULL, &b), 413);
    free(big);
    /* and the server still serves after that */
    cr_assert_eq(fetch(url, "{}", 2, NULL, &b), 200);
    pf_httpd_stop(h);

    /* the port is released by stop */
    o.port = port;
    cr_assert_eq(pf_httpd_start(&o, &h, msg), PF_OK, "%s", msg);
    pf_httpd_stop(h);
}

Test(httpd, bad_options_are_named)
{
    char msg[PF_ERRLEN] = "";
    struct pf_httpd *h = (void *)1;
    struct pf_httpd_opts o = { .port = 70000, .handler = echo };
    cr_assert_eq(pf_httpd_start(&o, &h, msg), PF_ERR_USAGE);
    cr_assert_null(h);
    cr_assert(strstr(msg, "70000") != NULL, "%s", msg);
    o.port = 0;
    o.tls_cert = "/nonexistent/tls.crt";
    cr_assert_eq(pf_httpd_start(&o, &h, msg), PF_ERR_USAGE);
    o.tls_key = "/nonexistent/tls.key";
    cr_assert_neq(pf_httpd_start(&o, &h, msg), PF_OK);
    cr_assert(strstr(msg, "/nonexistent/tls.crt") != NULL, "%s", msg);
}

static int have_openssl(void)
{
    return system("openssl version >/dev/null 2>&1") == 0;
}

/* A self-signed certificate and key (CN test) in dir/<name>.{crt,key}. */
static void make_cert(const char *dir, const char *name)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-days 1 -subj /CN=test -keyout %s/%s.key -out %s/%s.crt >/dev/null 2>&1",
             dir, name, dir, name);
    cr_assert_eq(system(cmd), 0, "openssl req failed");
}

/* Install dir/<from>.<ext> as dir/tls.<ext> by rename, as a secret mount
 * update does. */
static void install(const char *dir, const char *from, const char *ext)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp %s/%s.%s %s/tls.%s.tmp && mv %s/tls.%s.tmp %s/tls.%s",
             dir, from, ext, dir, ext, dir, ext, dir, ext);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

Test(httpd, tls_serves_the_pair_and_picks_up_a_rotation)
{
    if (!have_openssl())
        cr_skip_test("openssl not installed");
    char dir[] = "/tmp/pf-httpd-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    make_cert(dir, "a");
    make_cert(dir, "b");
    install(dir, "a", "crt");
    install(dir, "a", "key");

    char msg[PF_ERRLEN] = "", cert[256], key[256], ca_a[256], ca_b[256], url[128];
    snprintf(cert, sizeof cert, "%s/tls.crt", dir);
    snprintf(key, sizeof key, "%s/tls.key", dir);
    snprintf(ca_a, sizeof ca_a, "%s/a.crt", dir);
    snprintf(ca_b, sizeof ca_b, "%s/b.crt", dir);
    struct pf_httpd *h;
    struct pf_httpd_opts o = { .bind_addr = "127.0.0.1", .tls_cert = cert,
                               .tls_key = key, .handler = echo };
    cr_assert_eq(pf_httpd_start(&o, &h, msg), PF_OK, "%s", msg);
    cr_assert_eq(pf_httpd_cert_generation(h), 1u);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/x", pf_httpd_port(h));
    struct buf b;
    cr_assert_eq(fetch(url, "{}", 2, ca_a, &b), 200);
    cr_assert(fetch(url, "{}", 2, ca_b, &b) < 0, "served a certificate not yet installed");

    /* Half a rotation (new cert, old key) is not served: the old pair stays. */
    install(dir, "b", "crt");
    int64_t until = pf_deadline_in(1500);
    while (pf_ms_left(until) > 0)
        cr_assert_eq(fetch(url, "{}", 2, ca_a, &b), 200);
    cr_assert_eq(pf_httpd_cert_generation(h), 1u);

    /* The key arrives: the new pair is served within the recheck period. */
    install(dir, "b", "key");
    long st = -1;
    int64_t deadline = pf_deadline_in(5000);
    while (pf_ms_left(deadline) > 0 && (st = fetch(url, "{}", 2, ca_b, &b)) != 200)
        pf_sleep_ms(50);
    cr_assert_eq(st, 200, "rotated certificate never served");
    cr_assert_eq(pf_httpd_cert_generation(h), 2u);
    cr_assert(fetch(url, "{}", 2, ca_a, &b) < 0, "old certificate still served");
    pf_httpd_stop(h);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
