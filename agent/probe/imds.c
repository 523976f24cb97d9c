/* IMDSv2: PUT /latest/api/token, then GET /latest/meta-data/instance-type
 * with the token. Both requests share one 1 s deadline; no proxy, no
 * redirects. The token is never logged and is wiped after use. */
#include "probe.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "../util/clock.h"

#define IMDS_DEADLINE_MS 1000
#define IMDS_BODY_MAX 128

struct body {
    char data[IMDS_BODY_MAX];
    size_t len;
    bool overflow;
};

static size_t on_data(char *p, size_t size, size_t n, void *userdata)
{
    struct body *b = userdata;
    size_t len = size * n;

    if (b->len + len >= sizeof(b->data)) {
        b->overflow = true;
        return 0;           /* aborts the transfer */
    }
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

/* One request; body filled on HTTP 200. */
static pf_err imds_request(const char *url, const char *method,
                           const char *header, int64_t deadline,
                           struct body *b, char *err)
{
    struct curl_slist *hdrs = NULL;
    CURL *c;
    CURLcode rc;
    long status = 0;
    int64_t left = pf_ms_left(deadline);

    memset(b, 0, sizeof(*b));
    if (left <= 0)
        return pf_fail(err, PF_ERR_TIMEOUT, "IMDS %s: no time left", url);
    c = curl_easy_init();
    if (!c)
        return pf_fail(err, PF_ERR_NOMEM, "IMDS: curl_easy_init failed");
    hdrs = curl_slist_append(hdrs, header);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    if (!strcmp(method, "PUT")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    }
    rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);

    if (b->overflow)
        return pf_fail(err, PF_ERR_PROTOCOL, "IMDS %s %s: reply longer than %d "
                       "bytes", method, url, IMDS_BODY_MAX);
    if (rc != CURLE_OK)
        return pf_fail(err, rc == CURLE_OPERATION_TIMEDOUT ? PF_ERR_TIMEOUT
                                                           : PF_ERR_API,
                       "IMDS %s %s: %s", method, url, curl_easy_strerror(rc));
    if (status != 200)
        return pf_fail(err, PF_ERR_API, "IMDS %s %s: HTTP %ld", method, url,
                       status);
    return PF_OK;
}

pf_err pf_imds_instance_type(const char *base_url, char *out, size_t len,
                             char *err)
{
    int64_t deadline = pf_deadline_in(IMDS_DEADLINE_MS);
    char url[PF_PATH_MAX], header[IMDS_BODY_MAX + 64];
    struct body b;
    pf_err rc;

    out[0] = '\0';
    if (strncmp(base_url, "http://", 7) && strncmp(base_url, "https://", 8))
        return pf_fail(err, PF_ERR_USAGE, "imds_endpoint '%s': not an "
                       "http(s) URL", base_url);
    snprintf(url, sizeof(url), "%s/latest/api/token", base_url);
    rc = imds_request(url, "PUT",
                      "X-aws-ec2-metadata-token-ttl-seconds: 60", deadline,
                      &b, err);
    if (rc != PF_OK)
        return rc;
    if (b.len == 0 || strpbrk(b.data, "\r\n"))
        return pf_fail(err, PF_ERR_PROTOCOL, "IMDS %s: malformed token", url);
    snprintf(header, sizeof(header), "X-aws-ec2-metadata-token: %s", b.data);
    explicit_bzero(&b, sizeof(b));

    snprintf(url, sizeof(url), "%s/latest/meta-data/instance-type", base_url);
    rc = imds_request(url, "GET", header, deadline, &b, err);
    explicit_bzero(header, sizeof(header));
    if (rc != PF_OK)
        return rc;
    snprintf(out, len, "%s", b.data);
    return PF_OK;
}
