/* The embedded HTTP(S) server: a kernel-chosen port, the handler's answer,
 * the body bound (413), a bad key pair refused at start, and a rotated
 * certificate served without a restart (libcurl as the client); against
 * raw sockets: the request deadline that trickled bytes do not extend,
 * room made past the per-client limit, the bound on buffered body bytes,
 * 400/411 framing, and a FIFO refused as a certificate. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
    /* past 8 times the bound: refused unread (or the connection reset
     * while the client still sends) */
    big = calloc(1, 64 * 1024);
    long st = fetch(url, big, 64 * 1024, NULL, &b);
    cr_assert(st == 413 || st < 0, "64 KiB body answered %ld", st);
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

/* ---- raw clients -------------------------------------------------------- */

static int dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            return; /* closed by the server: the caller looks at that */
        p += k;
        n -= (size_t)k;
    }
}

/* Whether the server closed fd within ms (an EOF or a reset). */
static int closed_within(int fd, int ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char b[512];
    int64_t until = pf_deadline_in(ms);
    while (pf_ms_left(until) > 0) {
        if (poll(&p, 1, (int)pf_ms_left(until)) > 0) {
            ssize_t n = recv(fd, b, sizeof b, 0);
            if (n <= 0)
                return 1;
        }
    }
    return 0;
}

/* The status of the answer to raw, or 0 when the connection closed first. */
static int raw_status(int port, const char *raw)
{
    int fd = dial(port);
    send_all(fd, raw, strlen(raw));
    char b[1024];
    size_t n = 0;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int64_t until = pf_deadline_in(5000);
    while (n < sizeof b - 1 && !memchr(b, '\n', n) && pf_ms_left(until) > 0 &&
           poll(&p, 1, (int)pf_ms_left(until)) > 0) {
        ssize_t k = recv(fd, b + n, sizeof b - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    b[n] = '\0';
    int st = 0;
    return sscanf(b, "HTTP/1.%*d %d", &st) == 1 ? st : 0;
}

static struct pf_httpd *plain(struct pf_httpd_opts *o)
{
    char msg[PF_ERRLEN] = "";
    struct pf_httpd *h;
    o->bind_addr = "127.0.0.1";
    o->handler = echo;
    cr_assert_eq(pf_httpd_start(o, &h, msg), PF_OK, "%s", msg);
    return h;
}

Test(httpd, a_trickling_request_is_cut_at_its_deadline)
{
    struct pf_httpd_opts o = { .request_timeout_s = 1 };
    struct pf_httpd *h = plain(&o);
    int fd = dial(pf_httpd_port(h));
    const char *head = "POST /x HTTP/1.1\r\nHost: a\r\n";
    send_all(fd, head, strlen(head));
    /* a header byte every 100 ms: an idle timer would never fire */
    int64_t start = pf_now_ms(), cut = 0;
    while (pf_now_ms() - start < 4000) {
        send_all(fd, "x", 1);
        if (closed_within(fd, 100)) {
            cut = pf_now_ms() - start;
            break;
        }
    }
    cr_assert(cut >= 900 && cut <= 2500, "cut after %lld ms (deadline 1 s)", (long long)cut);
    struct pf_httpd_stats st;
    pf_httpd_stats(h, &st);
    cr_assert_geq(st.timed_out, 1ul);
    close(fd);
    pf_httpd_stop(h);
}

Test(httpd, past_the_per_client_limit_the_longest_waiting_is_cut_for_a_new_one)
{
    struct pf_httpd_opts o = { .per_ip_limit = 4 };
    struct pf_httpd *h = plain(&o);
    int port = pf_httpd_port(h), fds[6];
    for (int i = 0; i < 6; i++) { /* idle: no headers ever */
        fds[i] = dial(port);
        pf_sleep_ms(20);
    }
    pf_sleep_ms(400);           /* older than the 0.25 s a new client is spared */
    char url[128];
    struct buf b;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ok", port);
    cr_assert_eq(fetch(url, "{}", 2, NULL, &b), 200);
    cr_assert(closed_within(fds[0], 2000), "the oldest idle connection still open");
    struct pf_httpd_stats st;
    pf_httpd_stats(h, &st);
    cr_assert_geq(st.evicted, 1ul);
    cr_assert_leq(st.conns, 6u);
    for (int i = 0; i < 6; i++)
        close(fds[i]);
    pf_httpd_stop(h);
}

Test(httpd, body_bytes_held_across_connections_are_bounded)
{
    struct pf_httpd_opts o = { .max_body = 48 * 1024, .max_buffered = 64 * 1024 };
    struct pf_httpd *h = plain(&o);
    int port = pf_httpd_port(h), fds[4];
    char head[128], *part = malloc(40 * 1024);
    memset(part, 'x', 40 * 1024);
    snprintf(head, sizeof head, "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n",
             48 * 1024);
    for (int i = 0; i < 4; i++) { /* 4 x 40 KiB of unfinished bodies */
        fds[i] = dial(port);
        send_all(fds[i], head, strlen(head));
        send_all(fds[i], part, 40 * 1024);
        pf_sleep_ms(100);
    }
    struct pf_httpd_stats st;
    size_t most = 0;
    int64_t until = pf_deadline_in(1000);
    while (pf_ms_left(until) > 0) {
        pf_httpd_stats(h, &st);
        if (st.buffered > most)
            most = st.buffered;
        pf_sleep_ms(20);
    }
    cr_assert_leq(most, (size_t)96 * 1024, "%zu body bytes held (bound 64 KiB, 96 hard)", most);
    cr_assert_geq(st.evicted, 1ul);
    int cut = 0;
    for (int i = 0; i < 4; i++) {
        cut += closed_within(fds[i], 200);
        close(fds[i]);
    }
    cr_assert_geq(cut, 2, "only %d of 4 holders cut", cut);
    /* a legitimate body afterwards is served */
    char url[128];
    struct buf b;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/ok", port);
    cr_assert_eq(fetch(url, part, 1000, NULL, &b), 200);
    free(part);
    pf_httpd_stop(h);
}

Test(httpd, framing_that_is_not_one_length_is_refused)
{
    struct pf_httpd_opts o = { 0 };
    struct pf_httpd *h = plain(&o);
    int port = pf_httpd_port(h);
    cr_assert_eq(raw_status(port, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                                  "Content-Length: 20\r\n\r\n{}"), 400);
    cr_assert_eq(raw_status(port, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                                  "Content-Length: 2\r\n\r\n{}"), 200);
    cr_assert_eq(raw_status(port, "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
                                  "chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), 411);
    cr_assert_eq(raw_status(port, "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
                                  "chunked\r\nContent-Length: 2\r\n\r\n{}"), 400);
    cr_assert_eq(raw_status(port, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
    pf_httpd_stop(h);
}

Test(httpd, a_fifo_is_refused_as_a_certificate_without_blocking)
{
    if (!have_openssl())
        cr_skip_test("openssl not installed");
    char dir[] = "/tmp/pf-httpd-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    make_cert(dir, "a");
    char msg[PF_ERRLEN] = "", fifo[256], key[256], cmd[300];
    snprintf(fifo, sizeof fifo, "%s/fifo.crt", dir);
    snprintf(key, sizeof key, "%s/a.key", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    struct pf_httpd *h;
    struct pf_httpd_opts o = { .bind_addr = "127.0.0.1", .tls_cert = fifo,
                               .tls_key = key, .handler = echo };
    int64_t t0 = pf_now_ms();
    cr_assert_eq(pf_httpd_start(&o, &h, msg), PF_ERR_CONFIG, "%s", msg);
    cr_assert(strstr(msg, "not a regular file") && strstr(msg, fifo), "%s", msg);
    cr_assert_lt(pf_now_ms() - t0, 2000);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
