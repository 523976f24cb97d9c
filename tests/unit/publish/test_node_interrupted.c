/* The Interrupted mark read back by a peer: the mark a stopped agent
 * writes (pf_node_interrupted_message in both conditions) says that its
 * pod stopped, from the time it was written; a mark of another pod, an
 * older one, or a condition that is not ours or not Interrupted says
 * nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "publish/node.h"
#include "k8s/client.h"
#include "util/json.h"

#define AT "2026-01-01T00:00:10Z"
#define AT_S 1767225610

/* A Node whose status is the state patch written at AT for pod. */
static cJSON *marked_node(const char *pod, enum pf_reason reason)
{
    char msg[256];
    cJSON *patch;

    pf_node_interrupted_message(msg, sizeof(msg), 15, "Terminated", AT, pod);
    patch = pf_node_state_conditions_patch(NULL, reason, msg, AT);
    cr_assert_not_null(patch);
    return patch;
}

Test(node_interrupted, the_mark_names_the_pod_and_the_signal)
{
    char msg[256];

    pf_node_interrupted_message(msg, sizeof(msg), 15, "Terminated", AT,
                                "train-workers-1-0-p1");
    cr_assert_str_eq(msg, "run stopped by signal 15 (Terminated) at " AT
                          " before its verdict (pod train-workers-1-0-p1)");
}

Test(node_interrupted, a_peer_reads_its_pods_mark_from_when_it_was_written)
{
    cJSON *node = marked_node("train-workers-1-0-p1", PF_R_Interrupted);
    char msg[256] = "";

    cr_assert(pf_node_interrupted_mark(node, "train-workers-1-0-p1", AT_S,
                                       msg, sizeof(msg)));
    cr_assert(strstr(msg, "signal 15"), "%s", msg);
    cr_assert(pf_node_interrupted_mark(node, "train-workers-1-0-p1",
                                       AT_S - 60, NULL, 0));
    /* Written before this run began: another run's. */
    cr_assert_not(pf_node_interrupted_mark(node, "train-workers-1-0-p1",
                                           AT_S + 1, NULL, 0));
    cJSON_Delete(node);
}

Test(node_interrupted, another_pods_mark_says_nothing)
{
    cJSON *node = marked_node("train-workers-1-0-p1", PF_R_Interrupted);

    cr_assert_not(pf_node_interrupted_mark(node, "workers-1-0-p1", 0, NULL, 0));
    cr_assert_not(pf_node_interrupted_mark(node, "train-workers-1-0-p", 0,
                                           NULL, 0));
    cr_assert_not(pf_node_interrupted_mark(node, "", 0, NULL, 0));
    cr_assert_not(pf_node_interrupted_mark(node, NULL, 0, NULL, 0));
    cJSON_Delete(node);
}

Test(node_interrupted, a_validating_mark_or_a_foreign_condition_says_nothing)
{
    cJSON *node = marked_node("p1", PF_R_Validating);
    cJSON *ready;

    cr_assert_not(pf_node_interrupted_mark(node, "p1", 0, NULL, 0));
    cJSON_Delete(node);
    /* The same words under a condition type that is not ours. */
    node = marked_node("p1", PF_R_Interrupted);
    cJSON_ArrayForEach(ready, pf_json_at(node, "status.conditions"))
        cJSON_ReplaceItemInObject(ready, "type", cJSON_CreateString("Ready"));
    cr_assert_not(pf_node_interrupted_mark(node, "p1", 0, NULL, 0));
    cJSON_Delete(node);
}

Test(node_interrupted, a_mark_without_a_readable_time_says_nothing)
{
    cJSON *node = marked_node("p1", PF_R_Interrupted), *c;

    cJSON_ArrayForEach(c, pf_json_at(node, "status.conditions"))
        cJSON_ReplaceItemInObject(c, "lastHeartbeatTime",
                                  cJSON_CreateString("yesterday"));
    cr_assert_not(pf_node_interrupted_mark(node, "p1", 0, NULL, 0));
    cJSON_Delete(node);
}
