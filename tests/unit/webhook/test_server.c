/* The webhook's answer to one body (no server), and its endpoints over
 * plain HTTP: every answer is allowed; garbage, foreign kinds and the
 * release's own namespace get no patch; /healthz and /metrics serve. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/webhook.h"

static const struct pf_webhook_opts opts = {
    .bind_addr = "127.0.0.1",
    .own_namespace = "efa-preflight",
    .gate = { .agent_image = "a:1", .prefix = "efa-preflight.io/", .timeout_s = 60,
              .port = 29600 },
};

static const char *const efa_pod_review =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
    "\"request\":{\"uid\":\"u-7\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"namespace\":\"%s\",\"operation\":\"CREATE\",\"object\":{\"spec\":{\"containers\":"
    "[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}}}";

static cJSON *answer(const char *body, enum pf_webhook_outcome want)
{
    char *out = NULL, msg[PF_ERRLEN] = "";
    size_t len = 0;
    enum pf_webhook_outcome oc;
    cr_assert_eq(pf_webhook_review(&opts, body, strlen(body), &out, &len, &oc, msg), PF_OK,
                 "%s", msg);
    cr_assert_eq(oc, want, "outcome %s, wanted %s", pf_webhook_outcome_name(oc),
                 pf_webhook_outcome_name(want));
    cJSON *doc = cJSON_ParseWithLength(out, len);
    cr_assert_not_null(doc, "answer is not JSON: %s", out);
    free(out);
    cJSON *r = cJSON_DetachItemFromObject(doc, "response");
    cJSON_Delete(doc);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "allowed")), "not allowed");
    return r;
}

Test(server, an_efa_pod_elsewhere_is_patched_in_our_namespace_not)
{
    char body[2048];
    snprintf(body, sizeof body, efa_pod_review, "team-a");
    cJSON *r = answer(body, PF_WH_INJECTED);
    cr_assert_str_eq(cJSON_GetObjectItem(r, "uid")->valuestring, "u-7");
    cr_assert_not_null(cJSON_GetObjectItem(r, "patch"));
    cJSON_Delete(r);
    snprintf(body, sizeof body, efa_pod_review, "efa-preflight");
    r = answer(body, PF_WH_OWN_NAMESPACE);
    cr_assert_null(cJSON_GetObjectItem(r, "patch"));
    cJSON_Delete(r);
}

Test(server, garbage_is_allowed_with_a_warning_and_no_patch)
{
    const char *bodies[] = { "garbage", "{}", "{\"apiVersion\":\"admission.k8s.io/v1\","
                             "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"kind\":"
                             "{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"object\":{\"spec\":7}}}" };
    for (size_t i = 0; i < 3; i++) {
        cJSON *r = answer(bodies[i], PF_WH_MALFORMED);
        cr_assert_null(cJSON_GetObjectItem(r, "patch"));
        const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "warnings"), 0);
        cr_assert(cJSON_IsString(w) && strstr(w->valuestring, "not gated"), "no warning");
        cJSON_Delete(r);
    }
}

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
    char *b = ud;
    size_t have = strlen(b), len = sz * n;
    if (len > 4095 - have)
        len = 4095 - have;
    memcpy(b + have, p, len);
    b[have + len] = '\0';
    return sz * n;
}

static long get(int port, const char *path, const char *post, char *body)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    body[0] = '\0';
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    if (post)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
    long status = -1;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

Test(server, endpoints_answer_and_metrics_count_outcomes)
{
    struct pf_webhook *w;
    char msg[PF_ERRLEN] = "", body[4096], review[2048];
    cr_assert_eq(pf_webhook_start(&opts, &w, msg), PF_OK, "%s", msg);
    int port = pf_webhook_port(w);
    cr_assert_eq(get(port, "/healthz", NULL, body), 200);
    cr_assert_str_eq(body, "ok\n");
    cr_assert_eq(get(port, "/mutate", NULL, body), 405);
    cr_assert_eq(get(port, "/other", NULL, body), 404);
    snprintf(review, sizeof review, efa_pod_review, "team-b");
    cr_assert_eq(get(port, "/mutate", review, body), 200);
    cr_assert(strstr(body, "\"patch\":"), "%s", body);
    cr_assert_eq(get(port, "/mutate", "nonsense", body), 200);
    cr_assert(strstr(body, "\"allowed\":true"), "%s", body);
    cr_assert_eq(get(port, "/metrics", NULL, body), 200);
    cr_assert(strstr(body, "efa_preflight_webhook_reviews_total{outcome=\"injected\"} 1\n"), "%s", body);
    cr_assert(strstr(body, "efa_preflight_webhook_reviews_total{outcome=\"malformed\"} 1\n"), "%s", body);
    pf_webhook_stop(w);
}

Test(server, no_agent_image_is_a_usage_error)
{
    struct pf_webhook_opts o = opts;
    o.gate.agent_image = "";
    struct pf_webhook *w = (void *)1;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_webhook_start(&o, &w, msg), PF_ERR_USAGE);
    cr_assert_null(w);
    cr_assert(strstr(msg, "agent"), "%s", msg);
}
