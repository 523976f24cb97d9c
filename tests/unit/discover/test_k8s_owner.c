/* The k8s group's owner, which keys the rendezvous HMAC when no secret
 * file is given: every member of one group must find the same one, and a
 * group without a single owner must find none. */
#include <criterion/criterion.h>
#include <string.h>

#include "discover/k8s_owner.h"

static char *owner_of(const char *json, bool ds, bool custom)
{
    static char out[256];
    cJSON *pod = cJSON_Parse(json);

    cr_assert_not_null(pod, "bad fixture: %s", json);
    pf_k8s_group_owner(pod, ds, custom, out, sizeof(out));
    cJSON_Delete(pod);
    return out;
}

#define JOBSET_POD(i) \
    "{\"metadata\": {\"labels\": {" \
    "\"jobset.sigs.k8s.io/jobset-name\": \"train\"," \
    "\"jobset.sigs.k8s.io/jobset-uid\": \"5f1c2d3e-aaaa-bbbb-cccc-0123456789ab\"}," \
    "\"ownerReferences\": [{\"kind\": \"Job\", \"controller\": true," \
    "\"uid\": \"job-uid-" #i "\"}]}}"

Test(k8s_owner, every_pod_of_a_jobset_finds_the_jobset_not_its_own_job)
{
    cr_assert_str_eq(owner_of(JOBSET_POD(0), false, false),
                     "JobSet/5f1c2d3e-aaaa-bbbb-cccc-0123456789ab");
    cr_assert_str_eq(owner_of(JOBSET_POD(1), false, false),
                     "JobSet/5f1c2d3e-aaaa-bbbb-cccc-0123456789ab");
    /* Without its uid label the child Jobs differ: no owner at all. */
    cr_assert_str_eq(owner_of("{\"metadata\": {\"labels\": {"
                              "\"jobset.sigs.k8s.io/jobset-name\": \"t\"},"
                              "\"ownerReferences\": [{\"kind\": \"Job\","
                              "\"controller\": true, \"uid\": \"j1\"}]}}",
                              false, false), "");
}

Test(k8s_owner, an_indexed_job_is_found_by_label_or_owner_reference)
{
    cr_assert_str_eq(owner_of("{\"metadata\": {\"labels\": {"
                              "\"batch.kubernetes.io/controller-uid\": \"u-1\"}}}",
                              false, false), "Job/u-1");
    cr_assert_str_eq(owner_of("{\"metadata\": {\"labels\": {"
                              "\"controller-uid\": \"u-2\"}}}", false, false),
                     "Job/u-2");
    cr_assert_str_eq(owner_of("{\"metadata\": {\"ownerReferences\": ["
                              "{\"kind\": \"Job\", \"controller\": false, \"uid\": \"no\"},"
                              "{\"kind\": \"Job\", \"controller\": true, \"uid\": \"u-3\"}]}}",
                              false, false), "Job/u-3");
}

Test(k8s_owner, the_daemonset_is_the_owner_in_daemonset_mode)
{
    const char *pod = "{\"metadata\": {\"ownerReferences\": [{\"kind\": "
                      "\"DaemonSet\", \"controller\": true, \"uid\": \"ds-9\"}]}}";

    cr_assert_str_eq(owner_of(pod, true, true), "DaemonSet/ds-9");
    cr_assert_str_eq(owner_of(pod, false, false), "");
}

Test(k8s_owner, no_single_owner_means_none)
{
    /* A custom selector may span owners. */
    cr_assert_str_eq(owner_of(JOBSET_POD(0), false, true), "");
    /* A bare pod. */
    cr_assert_str_eq(owner_of("{\"metadata\": {\"name\": \"p\"}}", false, false), "");
    /* A uid that is not one. */
    cr_assert_str_eq(owner_of("{\"metadata\": {\"labels\": {"
                              "\"controller-uid\": \"a/b\\n\"}}}", false, false), "");
}
