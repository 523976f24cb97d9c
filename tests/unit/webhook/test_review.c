/* The AdmissionReview parser: what it accepts, and that anything else is a
 * named error with the uid kept when it could be read. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/review.h"

#define POD "{\"spec\":{\"containers\":[]}}"

static char *review(const char *kind, const char *op, const char *sub, const char *object)
{
    char *b = malloc(4096);
    snprintf(b, 4096,
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
             "\"request\":{\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"%s\"},"
             "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
             "%s\"namespace\":\"team-a\",\"operation\":\"%s\"%s%s}}",
             kind, sub, op, object ? ",\"object\":" : "", object ? object : "");
    return b;
}

Test(review, a_pod_create_is_read_with_uid_namespace_and_object)
{
    char *b = review("Pod", "CREATE", "", POD);
    struct pf_review r;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_review_parse(b, strlen(b), &r, msg), PF_OK, "%s", msg);
    cr_assert(r.pod_create);
    cr_assert_str_eq(r.uid, "u-1");
    cr_assert_str_eq(r.ns, "team-a");
    cr_assert(cJSON_IsObject(cJSON_GetObjectItem(r.pod, "spec")));
    pf_review_free(&r);
    free(b);
}

Test(review, other_requests_are_well_formed_but_not_ours)
{
    struct { const char *kind, *op, *sub, *why; } cases[] = {
        { "Deployment", "CREATE", "", "not a Pod" },
        { "Pod", "UPDATE", "", "not a CREATE" },
        { "Pod", "CREATE", "\"subResource\":\"ephemeralcontainers\",", "subresource" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *b = review(cases[i].kind, cases[i].op, cases[i].sub, POD);
        struct pf_review r;
        char msg[PF_ERRLEN] = "";
        cr_assert_eq(pf_review_parse(b, strlen(b), &r, msg), PF_OK, "%s", msg);
        cr_assert_not(r.pod_create);
        cr_assert(strstr(r.not_pod, cases[i].why), "%s: %s", cases[i].why, r.not_pod);
        cr_assert_str_eq(r.uid, "u-1");
        pf_review_free(&r);
        free(b);
    }
}

static void bad(const char *body, size_t len, const char *words, const char *uid)
{
    struct pf_review r;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_review_parse(body, len, &r, msg), PF_ERR_PROTOCOL, "accepted: %.80s", body);
    cr_assert(strstr(msg, words), "message '%s' lacks '%s'", msg, words);
    cr_assert_str_eq(r.uid, uid);
    cr_assert_not(r.pod_create);
    pf_review_free(&r);
}

Test(review, malformed_reviews_are_named_errors)
{
    bad("", 0, "empty", "");
    bad("garbage", 7, "not JSON", "");
    bad("{\"a\":", 5, "not JSON", "");
    bad("[1,2]", 5, "not a JSON object", "");
    bad("{}", 2, "apiVersion", "");
    const char *v1beta1 = "{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\","
                          "\"request\":{\"uid\":\"u-2\"}}";
    bad(v1beta1, strlen(v1beta1), "admission.k8s.io/v1", "u-2");
    const char *nouid = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                        "\"request\":{\"uid\":5}}";
    bad(nouid, strlen(nouid), "uid", "");
    const char *ctl = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"request\":{\"uid\":\"a\\nb\"}}";
    bad(ctl, strlen(ctl), "uid", "");
    const char *noreq = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}";
    bad(noreq, strlen(noreq), "no request", "");
    char *noobj = review("Pod", "CREATE", "", NULL);
    bad(noobj, strlen(noobj), "without request.object", "u-1");
    free(noobj);
}

Test(review, the_length_bounds_the_parse_not_a_terminator)
{
    char *b = review("Pod", "CREATE", "", POD);
    size_t n = strlen(b);
    char *copy = malloc(n);
    memcpy(copy, b, n); /* no NUL after it */
    struct pf_review r;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_review_parse(copy, n, &r, msg), PF_OK, "%s", msg);
    pf_review_free(&r);
    /* one byte short is not JSON */
    cr_assert_eq(pf_review_parse(copy, n - 1, &r, msg), PF_ERR_PROTOCOL);
    pf_review_free(&r);
    free(copy);
    free(b);
}

Test(review, deep_nesting_is_refused_not_a_stack_overflow)
{
    size_t depth = 100000;
    char *b = malloc(2 * depth + 1);
    memset(b, '[', depth);
    memset(b + depth, ']', depth);
    b[2 * depth] = '\0';
    struct pf_review r;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_review_parse(b, 2 * depth, &r, msg), PF_ERR_PROTOCOL);
    pf_review_free(&r);
    free(b);
}
