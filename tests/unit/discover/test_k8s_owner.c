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

/* The gangs of other controllers (docs/install/gangs.md), with the labels
 * and owner references their controllers write. */
#define LWS_POD(name, worker, sts, sts_uid)                                             \
    "{\"metadata\": {\"name\": \"" name "\", \"labels\": {"                              \
    "\"leaderworkerset.sigs.k8s.io/name\": \"vllm\","                                    \
    "\"leaderworkerset.sigs.k8s.io/group-index\": \"1\","                                \
    "\"leaderworkerset.sigs.k8s.io/worker-index\": \"" worker "\","                      \
    "\"leaderworkerset.sigs.k8s.io/group-key\": \"689ad1b7e4d7c2f0a1b2c3d4e5f60718293a4b5c\"}," \
    "\"annotations\": {\"leaderworkerset.sigs.k8s.io/size\": \"2\"},"                   \
    "\"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"StatefulSet\","     \
    "\"name\": \"" sts "\", \"uid\": \"" sts_uid "\", \"controller\": true}]}}"

Test(k8s_owner, a_leaderworkerset_group_shares_its_group_key_not_its_statefulsets)
{
    /* The leader is the leader StatefulSet's, the worker the group's own. */
    cr_assert_str_eq(owner_of(LWS_POD("vllm-1", "0", "vllm", "sts-leaders"), false, false),
                     "LeaderWorkerSet/689ad1b7e4d7c2f0a1b2c3d4e5f60718293a4b5c");
    cr_assert_str_eq(owner_of(LWS_POD("vllm-1-1", "1", "vllm-1", "sts-group-1"), false, false),
                     "LeaderWorkerSet/689ad1b7e4d7c2f0a1b2c3d4e5f60718293a4b5c");
}

Test(k8s_owner, a_pytorchjob_and_a_volcano_job_are_found_by_their_controller_reference)
{
    cr_assert_str_eq(owner_of("{\"metadata\": {\"name\": \"llama-worker-0\", \"labels\": {"
                              "\"training.kubeflow.org/job-name\": \"llama\","
                              "\"training.kubeflow.org/operator-name\": \"pytorchjob-controller\","
                              "\"training.kubeflow.org/replica-type\": \"worker\","
                              "\"training.kubeflow.org/replica-index\": \"0\"},"
                              "\"ownerReferences\": [{\"apiVersion\": \"kubeflow.org/v1\","
                              "\"kind\": \"PyTorchJob\", \"name\": \"llama\","
                              "\"uid\": \"0b9d6a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b\","
                              "\"controller\": true, \"blockOwnerDeletion\": true}]}}",
                              false, false),
                     "PyTorchJob/0b9d6a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
    cr_assert_str_eq(owner_of("{\"metadata\": {\"name\": \"nccl-worker-1\", \"labels\": {"
                              "\"volcano.sh/job-name\": \"nccl\", \"volcano.sh/task-spec\": \"worker\"},"
                              "\"annotations\": {\"scheduling.k8s.io/group-name\": \"nccl\"},"
                              "\"ownerReferences\": [{\"apiVersion\": \"batch.volcano.sh/v1alpha1\","
                              "\"kind\": \"Job\", \"name\": \"nccl\","
                              "\"uid\": \"7e8f9a0b-1c2d-4e5f-8a9b-0c1d2e3f4a5b\", \"controller\": true}]}}",
                              false, false),
                     "Job/7e8f9a0b-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
}
