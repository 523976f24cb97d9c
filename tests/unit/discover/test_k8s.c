/* k8s bootstrap pieces: which pods count, ranks from JobSet / Indexed Job
 * indices or names, the selector order, what a timeout names, a
 * non-leader's two-pod table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "discover/k8s.h"

static cJSON *pod_json(const char *name, const char *ip, const char *phase,
                       int job_index, int comp_index, bool deleting)
{
    char buf[1024];
    char idx[256] = "";
    int n = 0;

    if (job_index >= 0)
        n += snprintf(idx + n, sizeof(idx) - (size_t)n,
                      ",\"" PF_K8S_JOBSET_INDEX "\":\"%d\"", job_index);
    if (comp_index >= 0)
        snprintf(idx + n, sizeof(idx) - (size_t)n,
                 ",\"" PF_K8S_COMPLETION_INDEX "\":\"%d\"", comp_index);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",%s\"labels\":{\"x\":\"y\"%s}},"
             "\"spec\":{\"nodeName\":\"node-%s\"},"
             "\"status\":{\"phase\":\"%s\"%s%s%s}}",
             name, deleting ? "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\","
                            : "",
             idx, name, phase, ip ? ",\"podIP\":\"" : "", ip ? ip : "",
             ip ? "\"" : "");
    return cJSON_Parse(buf);
}

static void add(struct pf_k8s_podset *s, const char *name, const char *ip,
                const char *phase, int job_index, int comp_index,
                bool deleting)
{
    char err[PF_ERRLEN];
    struct pf_k8s_pod p;
    cJSON *j = pod_json(name, ip, phase, job_index, comp_index, deleting);

    cr_assert_not_null(j);
    pf_k8s_pod_parse(j, &p);
    cr_assert_eq(pf_k8s_podset_put(s, &p, err), PF_OK);
    cJSON_Delete(j);
}

Test(k8s_discover, pending_with_ip_counts_deleting_and_failed_do_not)
{
    struct pf_k8s_pod p;
    cJSON *j;

    j = pod_json("a", "10.254.40.11", "Pending", -1, -1, false);
    pf_k8s_pod_parse(j, &p);
    cr_assert(pf_k8s_pod_counts(&p));
    cr_assert_str_eq(p.node, "node-a");
    cJSON_Delete(j);
    j = pod_json("b", NULL, "Pending", -1, -1, false);
    pf_k8s_pod_parse(j, &p);
    cr_assert_not(pf_k8s_pod_counts(&p));
    cJSON_Delete(j);
    j = pod_json("c", "10.254.40.12", "Running", -1, -1, true);
    pf_k8s_pod_parse(j, &p);
    cr_assert(p.deleting);
    cr_assert_not(pf_k8s_pod_counts(&p));
    cJSON_Delete(j);
    j = pod_json("d", "10.254.40.13", "Failed", -1, -1, false);
    pf_k8s_pod_parse(j, &p);
    cr_assert_not(pf_k8s_pod_counts(&p));
    cJSON_Delete(j);
}

Test(k8s_discover, jobset_rank_is_job_index_times_parallelism_plus_completion)
{
    struct pf_k8s_pod p;
    cJSON *j = pod_json("js-w-2-1-x", "10.0.0.1", "Pending", 2, 1, false);

    pf_k8s_pod_parse(j, &p);
    cr_assert_eq(p.job_index, 2);
    cr_assert_eq(p.completion_index, 1);
    cr_assert_eq(pf_k8s_pod_rank(&p, 4), 9);
    cr_assert_eq(pf_k8s_pod_rank(&p, 0), 1);
    cJSON_Delete(j);
    j = pod_json("plain", "10.0.0.1", "Pending", -1, -1, false);
    pf_k8s_pod_parse(j, &p);
    cr_assert_eq(pf_k8s_pod_rank(&p, 4), -1);
    cJSON_Delete(j);
}

Test(k8s_discover, completion_index_from_annotation)
{
    struct pf_k8s_pod p;
    cJSON *j = cJSON_Parse("{\"metadata\":{\"name\":\"j-3-x\",\"annotations\":"
                           "{\"" PF_K8S_COMPLETION_INDEX "\":\"3\"}}}");
    pf_k8s_pod_parse(j, &p);
    cr_assert_eq(p.completion_index, 3);
    cJSON_Delete(j);
}

#define JOBSET_POD "{\"metadata\":{\"name\":\"p\",\"labels\":{"                \
    "\"app.kubernetes.io/instance\":\"app\","                                  \
    "\"batch.kubernetes.io/job-name\":\"js-w-0\","                             \
    "\"" PF_K8S_JOBSET_NAME "\":\"js\","                                       \
    "\"" PF_K8S_JOBSET_RJOB "\":\"w\"}}}"

Test(k8s_discover, selector_order_and_override)
{
    /* pod, --peer-selector given, the selector it comes to */
    static const struct {
        const char *pod, *given, *want;
    } cases[] = {
        { JOBSET_POD, "", PF_K8S_JOBSET_NAME "=js," PF_K8S_JOBSET_RJOB "=w" },
        { JOBSET_POD, "team=a", "team=a" },
        { "{\"metadata\":{\"name\":\"p\",\"labels\":{"
          "\"app.kubernetes.io/instance\":\"app\","
          "\"training.kubeflow.org/job-name\":\"pt\"}}}",
          NULL, "training.kubeflow.org/job-name=pt" },
        /* A LeaderWorkerSet: this group only (leader and workers). */
        { "{\"metadata\":{\"name\":\"vllm-1-1\",\"labels\":{"
          "\"leaderworkerset.sigs.k8s.io/name\":\"vllm\","
          "\"leaderworkerset.sigs.k8s.io/group-index\":\"1\","
          "\"leaderworkerset.sigs.k8s.io/worker-index\":\"1\"}}}",
          NULL, "leaderworkerset.sigs.k8s.io/name=vllm,"
                "leaderworkerset.sigs.k8s.io/group-index=1" },
        /* A Volcano Job's pods. */
        { "{\"metadata\":{\"name\":\"nccl-worker-0\",\"labels\":{"
          "\"volcano.sh/job-name\":\"nccl\",\"volcano.sh/queue-name\":\"default\","
          "\"volcano.sh/task-spec\":\"worker\"}}}",
          NULL, "volcano.sh/job-name=nccl" },
    };
    char sel[256], err[PF_ERRLEN];
    cJSON *j;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        j = cJSON_Parse(cases[i].pod);
        cr_assert_eq(pf_k8s_selector(j, cases[i].given, sel, sizeof(sel), err),
                     PF_OK, "case %zu: %s", i, err);
        cr_assert_str_eq(sel, cases[i].want, "case %zu", i);
        cJSON_Delete(j);
    }

    j = cJSON_Parse("{\"metadata\":{\"name\":\"lonely\",\"labels\":{}}}");
    cr_assert_eq(pf_k8s_selector(j, NULL, sel, sizeof(sel), err),
                 PF_ERR_USAGE);
    cr_assert(strstr(err, "lonely") && strstr(err, "--peer-selector"), "%s",
              err);
    cJSON_Delete(j);
}

/* A pod set and what assigning ranks from it left. */
struct assign {
    struct pf_k8s_podset s;
    struct pf_peers peers;
    char missing[PF_ERRLEN];
    bool fatal;
};

/* pf_k8s_assign for own_pod in a world of `world` (parallelism per job). */
static bool assign(struct assign *a, int world, int parallelism,
                   const char *own_pod, const char *prefix, int port)
{
    return pf_k8s_assign(&a->s, world, parallelism, own_pod, prefix, port,
                         &a->peers, a->missing, sizeof(a->missing), &a->fatal);
}

/* pf_k8s_assign_follower, the same for a follower. */
static bool assign_follower(struct assign *a, int world, int parallelism,
                            const struct pf_k8s_pod *own, const char *prefix,
                            int port)
{
    return pf_k8s_assign_follower(&a->s, world, parallelism, own, prefix, port,
                                  &a->peers, a->missing, sizeof(a->missing),
                                  &a->fatal);
}

Test(k8s_discover, jobset_assign_complete)
{
    struct assign a = { 0 };

    /* 2 replicated jobs x parallelism 2, listed out of order. */
    add(&a.s, "js-w-1-1-d", "10.254.40.14", "Pending", 1, 1, false);
    add(&a.s, "js-w-0-0-a", "10.254.40.11", "Pending", 0, 0, false);
    add(&a.s, "js-w-1-0-c", "10.254.40.13", "Running", 1, 0, false);
    add(&a.s, "js-w-0-1-b", "10.254.40.12", "Pending", 0, 1, false);
    cr_assert(assign(&a, 4, 2, "js-w-1-0-c", "js-w-", 33100));
    cr_assert_not(a.fatal);
    cr_assert_eq(a.peers.world, 4);
    cr_assert_eq(a.peers.rank, 2);
    cr_assert_str_eq(a.peers.list[0].host, "10.254.40.11");
    cr_assert_str_eq(a.peers.list[1].pod, "js-w-0-1-b");
    cr_assert_str_eq(a.peers.list[3].host, "10.254.40.14");
    cr_assert_str_eq(a.peers.list[3].node, "node-js-w-1-1-d");
    cr_assert_eq(a.peers.list[3].port, 33100);
    free(a.peers.list);
    pf_k8s_podset_free(&a.s);
}

Test(k8s_discover, missing_pods_are_named)
{
    struct assign a = { 0 };

    add(&a.s, "js-w-0-0-a", "10.254.40.11", "Pending", 0, 0, false);
    add(&a.s, "js-w-0-1-b", NULL, "Pending", 0, 1, false);
    /* a replacement being deleted keeps its index but does not count */
    add(&a.s, "js-w-1-0-old", "10.254.40.19", "Running", 1, 0, true);
    cr_assert_not(assign(&a, 4, 2, "js-w-0-0-a", "js-w-", 1));
    cr_assert_not(a.fatal);
    cr_assert_null(a.peers.list);
    cr_assert_str_eq(a.missing,
                     "js-w-0-1-b (Pending, no podIP), "
                     "js-w-1-0-old (Running, being deleted), "
                     "js-w-1-1-* (rank 3, not created)");
    pf_k8s_podset_free(&a.s);
}

Test(k8s_discover, by_name_when_no_index)
{
    struct assign a = { 0 };

    add(&a.s, "worker-c", "10.0.0.3", "Pending", -1, -1, false);
    add(&a.s, "worker-a", "10.0.0.1", "Pending", -1, -1, false);
    cr_assert_not(assign(&a, 3, 0, "worker-a", "", 1));
    cr_assert_str_eq(a.missing, "1 pod(s) not created");
    add(&a.s, "worker-b", "10.0.0.2", "Pending", -1, -1, false);
    cr_assert(assign(&a, 3, 0, "worker-c", "", 1));
    cr_assert_eq(a.peers.rank, 2);
    cr_assert_str_eq(a.peers.list[1].host, "10.0.0.2");
    free(a.peers.list);
    a.peers.list = NULL;

    pf_k8s_podset_remove(&a.s, "worker-b");
    add(&a.s, "worker-b", "10.0.0.2", "Pending", -1, -1, false);
    add(&a.s, "worker-d", "10.0.0.4", "Pending", -1, -1, false);
    cr_assert_not(assign(&a, 3, 0, "worker-c", "", 1));
    cr_assert(strstr(a.missing, "4 pods with a podIP"), "%s", a.missing);
    pf_k8s_podset_free(&a.s);
}

Test(k8s_discover, own_pod_outside_the_set_is_fatal)
{
    struct assign a = { 0 };

    add(&a.s, "a", "10.0.0.1", "Pending", -1, -1, false);
    cr_assert_not(assign(&a, 1, 0, "me", "", 1));
    cr_assert(a.fatal);
    cr_assert(strstr(a.missing, "own pod me"), "%s", a.missing);
    cr_assert_null(a.peers.list);
    pf_k8s_podset_free(&a.s);
}

static cJSON *own_json(const char *labels)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"me\",\"labels\":"
             "{%s}}}", labels);
    return cJSON_Parse(buf);
}

Test(k8s_discover, leader_selector_adds_index_zero)
{
    char out[512];
    cJSON *j = own_json("\"" PF_K8S_COMPLETION_INDEX "\":\"3\"");

    cr_assert(pf_k8s_leader_selector(j, "batch.kubernetes.io/job-name=t", 0,
                                     out, sizeof(out)));
    cr_assert_str_eq(out, "batch.kubernetes.io/job-name=t,"
                     PF_K8S_COMPLETION_INDEX "=0");
    /* JobSet with parallelism: the job index too; without the label (old
     * clusters put the index in an annotation only) no selector can. */
    cr_assert_not(pf_k8s_leader_selector(j, "s=1", 2, out, sizeof(out)));
    cJSON_Delete(j);
    j = own_json("\"" PF_K8S_COMPLETION_INDEX "\":\"1\",\""
                 PF_K8S_JOBSET_INDEX "\":\"4\"");
    cr_assert(pf_k8s_leader_selector(j, "s=1", 2, out, sizeof(out)));
    cr_assert_str_eq(out, "s=1," PF_K8S_COMPLETION_INDEX "=0,"
                     PF_K8S_JOBSET_INDEX "=0");
    cJSON_Delete(j);
    j = own_json("\"x\":\"y\"");
    cr_assert_not(pf_k8s_leader_selector(j, "s=1", 0, out, sizeof(out)));
    cJSON_Delete(j);
}

Test(k8s_discover, follower_table_names_rank_zero_and_itself_only)
{
    struct assign a = { 0 };
    struct pf_k8s_pod own;
    cJSON *j = pod_json("js-w-1-0-c", "10.254.40.13", "Pending", 1, 0, false);

    pf_k8s_pod_parse(j, &own);
    cJSON_Delete(j);
    /* Rank 0 not created yet: named by the controller's pattern. */
    cr_assert_not(assign_follower(&a, 4, 2, &own, "js-w-", 1));
    cr_assert_not(a.fatal);
    cr_assert_str_eq(a.missing, "js-w-0-0-* (rank 0, not created)");
    add(&a.s, "js-w-0-0-a", NULL, "Pending", 0, 0, false);
    cr_assert_not(assign_follower(&a, 4, 2, &own, "js-w-", 1));
    cr_assert_str_eq(a.missing, "js-w-0-0-a (Pending, no podIP)");
    /* Its IP arrives (a watch event): the table has rank 0 and us. */
    add(&a.s, "js-w-0-0-a", "10.254.40.11", "Pending", 0, 0, false);
    cr_assert(assign_follower(&a, 4, 2, &own, "js-w-", 33100));
    cr_assert_eq(a.peers.world, 4);
    cr_assert_eq(a.peers.rank, 2);
    cr_assert_str_eq(a.peers.list[0].host, "10.254.40.11");
    cr_assert_str_eq(a.peers.list[0].pod, "js-w-0-0-a");
    cr_assert_str_eq(a.peers.list[2].host, "10.254.40.13");
    cr_assert_str_eq(a.peers.list[1].host, "");
    cr_assert_eq(a.peers.list[3].port, 33100);
    free(a.peers.list);
    a.peers.list = NULL;
    /* A rank beyond the world is a configuration error. */
    cr_assert_not(assign_follower(&a, 2, 2, &own, "js-w-", 1));
    cr_assert(a.fatal);
    cr_assert(strstr(a.missing, "rank 2, outside the world of 2"), "%s",
              a.missing);
    pf_k8s_podset_free(&a.s);
}

Test(k8s_discover, run_id_hash_is_stable)
{
    cr_assert_eq(pf_k8s_hash("a", 0), pf_k8s_hash("a", 0));
    cr_assert_neq(pf_k8s_hash("a", 0), pf_k8s_hash("b", 0));
    cr_assert_eq(pf_k8s_hash("", 0), 1469598103934665603ull);
}
