/* What the Node publisher writes: label values (always valid), conditions
 * (lastTransitionTime kept while the status holds), taints (only ours
 * touched) and the Event. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_fixture.h"
#include "publish/node.h"
#include "util/kubeapi.h"
#include "verdict/verdict.h"

/* A run whose fabric check says `fabric` with `reason` (PF_R_None on a
 * pass). */
static struct pf_run *make_run_with(enum pf_status fabric, enum pf_reason reason,
                                    int exit_code)
{
    struct pf_run *run = calloc(1, sizeof(*run));

    cr_assert_not_null(run);
    run->cfg.command = PF_CMD_RUN;
    run->cfg.mode = PF_MODE_INITCONTAINER;
    snprintf(run->cfg.label_prefix, sizeof(run->cfg.label_prefix),
             "efa-preflight.io/");
    run->cfg.valid_hours = 24;
    run->node.efa_count = 32;
    run->peers.world = 4;
    run->coll.ran = true;
    run->coll.nnodes = 4;
    run->coll.peak_busbw = 335.24;
    run->coll.avg_busbw = 120.5;
    snprintf(run->coll.engine, sizeof(run->coll.engine), "host");
    pf_test_judged(run);
    pf_verdict_add(&run->verdict, "efa_devices", PF_COND_DEVICES, PF_PASS,
                   PF_R_EFADeviceCountMatches, "", "32 of 32");
    pf_verdict_add(&run->verdict, "busbw", PF_COND_FABRIC, fabric, reason,
                   "check the fabric", "busbw 3.1 GB/s below floor 300");
    pf_verdict_finish(run);
    cr_assert_eq(run->verdict.exit_code, exit_code);
    return run;
}

/* exit 1 here is a group failure (BandwidthBelowThreshold, nobody blamed),
 * exit 3 a peer that never came (PeerTimeout). */
static struct pf_run *make_run(enum pf_status fabric, int exit_code)
{
    return make_run_with(fabric, fabric == PF_PASS ? PF_R_None
                                 : exit_code == PF_EXIT_INFRA ? PF_R_PeerTimeout
                                 : PF_R_BandwidthBelowThreshold, exit_code);
}

static const char *label(const cJSON *patch, const char *key)
{
    const cJSON *labels = pf_json_at(patch, "metadata.labels");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, key);
    if (cJSON_IsNull(v))
        return "(null)";
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

Test(k8s_publish, label_time_has_no_colons)
{
    char t[32];
    pf_node_label_time(t, 1795309323);          /* 2026-11-22T01:02:03Z */
    cr_assert_str_eq(t, "20261122T010203Z");
    cr_assert(pf_label_value_ok(t));
}

/* The label patch the run gives at 2026-11-22T01:02:03Z, under prefix. */
static cJSON *labels_patch(struct pf_run *run, const char *prefix)
{
    struct pf_node_labels l;

    pf_node_labels_make(run, 1795309323, &l);
    return pf_node_labels_patch(prefix, &l);
}

Test(k8s_publish, labels_on_pass)
{
    struct pf_run *run = make_run(PF_PASS, 0);
    cJSON *p;

    p = labels_patch(run, "efa-preflight.io/");
    cr_assert_str_eq(label(p, "efa-preflight.io/status"), "pass");
    cr_assert_str_eq(label(p, "efa-preflight.io/efa-count"), "32");
    cr_assert_str_eq(label(p, "efa-preflight.io/busbw-gbps"), "335.24");
    cr_assert_str_eq(label(p, "efa-preflight.io/validated-at"),
                     "20261122T010203Z");
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until"),
                     "20261123T010203Z");
    cr_assert_str_eq(label(p, "efa-preflight.io/fabric"), "tested");
    /* no GPU check ran: the GPU label is removed, not left stale */
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
        pf_json_at(p, "metadata.labels"), "efa-preflight.io/gpu-health")));
    cr_assert_eq(cJSON_GetArraySize(pf_json_at(p, "metadata.labels")), 8);
    cJSON_Delete(p);
    free(run);
}

/* valid-until again as an integer, so nodeAffinity Gt/Lt can compare it
 * (label values are strings; Gt/Lt parse them as integers). */
Test(k8s_publish, valid_until_epoch_is_an_integer_label)
{
    struct pf_run *run = make_run(PF_PASS, 0);
    cJSON *p;

    run->cfg.valid_hours = 48;
    p = labels_patch(run, "example.com/");
    cr_assert_str_eq(label(p, "example.com/valid-until-epoch"), "1795482123");
    cr_assert_str_eq(label(p, "example.com/valid-until"), "20261124T010203Z");
    cr_assert(pf_label_value_ok(label(p, "example.com/valid-until-epoch")));
    cJSON_Delete(p);
    free(run);
}

Test(k8s_publish, labels_on_infra_failure_and_singleton)
{
    struct pf_run *run = make_run(PF_FAIL, 3);
    cJSON *p;

    run->coll.ran = false;
    p = labels_patch(run, "example.com/");
    cr_assert_str_eq(label(p, "example.com/status"), "error");
    cr_assert_str_eq(label(p, "example.com/busbw-gbps"), "(null)");
    cJSON_Delete(p);

    /* The peers never came: whatever else, the fabric was not tested. */
    pf_fault_set(&run->peers.fault, PF_ERR_TIMEOUT, PF_R_PeerTimeout,
                 "PeerTimeout: 3 of 4 peer pods");
    p = labels_patch(run, "example.com/");
    cr_assert_str_eq(label(p, "example.com/fabric"), "untested");
    cJSON_Delete(p);
    memset(&run->peers.fault, 0, sizeof(run->peers.fault));

    run->verdict.cls = PF_CLASS_FABRIC;
    run->verdict.exit_code = 1;
    run->coll.ran = true;
    run->cfg.mode = PF_MODE_DAEMONSET;
    run->peers.world = 1;
    p = labels_patch(run, "efa-preflight.io/");
    cr_assert_str_eq(label(p, "efa-preflight.io/status"), "fail");
    cr_assert_str_eq(label(p, "efa-preflight.io/fabric"), "untested");
    cr_assert_str_eq(label(p, "efa-preflight.io/busbw-gbps"), "(null)");
    cJSON_Delete(p);
    free(run);
}

static const cJSON *condition(const cJSON *patch, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, pf_json_at(patch, "status.conditions")) {
        if (!strcmp(pf_json_str(c, "type"), type))
            return c;
    }
    return NULL;
}

/* run's EFAFabricReady condition says status for reason; run is freed. */
static void fabric_condition_is(struct pf_run *run, const char *status,
                                const char *reason)
{
    cJSON *p = pf_node_conditions_patch(run, NULL, "2026-11-22T01:02:03Z");

    cr_assert_str_eq(pf_json_str(condition(p, "EFAFabricReady"), "status"),
                     status);
    cr_assert_str_eq(pf_json_str(condition(p, "EFAFabricReady"), "reason"),
                     reason);
    cJSON_Delete(p);
    free(run);
}

Test(k8s_publish, conditions_keep_transition_time_while_status_holds)
{
    struct pf_run *run = make_run_with(PF_FAIL, PF_R_StragglerNode, 1);
    cJSON *node = cJSON_Parse(
        "{\"status\":{\"conditions\":["
        "{\"type\":\"Ready\",\"status\":\"True\","
        "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"},"
        "{\"type\":\"EFADevicesReady\",\"status\":\"True\","
        "\"lastTransitionTime\":\"2026-02-02T00:00:00Z\"},"
        "{\"type\":\"EFAFabricReady\",\"status\":\"True\","
        "\"lastTransitionTime\":\"2026-03-03T00:00:00Z\"}]}}");
    cJSON *p = pf_node_conditions_patch(run, node, "2026-11-22T01:02:03Z");
    const cJSON *dev = condition(p, "EFADevicesReady");
    const cJSON *fab = condition(p, "EFAFabricReady");

    cr_assert_eq(cJSON_GetArraySize(pf_json_at(p, "status.conditions")), 2);
    cr_assert_null(condition(p, "Ready"));
    cr_assert_str_eq(pf_json_str(dev, "status"), "True");
    cr_assert_str_eq(pf_json_str(dev, "reason"), "PreflightPassed");
    cr_assert_str_eq(pf_json_str(dev, "lastTransitionTime"),
                     "2026-02-02T00:00:00Z");
    cr_assert_str_eq(pf_json_str(fab, "status"), "False");
    cr_assert_str_eq(pf_json_str(fab, "reason"), "StragglerNode");
    cr_assert_str_eq(pf_json_str(fab, "message"),
                     "busbw 3.1 GB/s below floor 300");
    cr_assert_str_eq(pf_json_str(fab, "lastTransitionTime"),
                     "2026-11-22T01:02:03Z");
    cr_assert_str_eq(pf_json_str(fab, "lastHeartbeatTime"),
                     "2026-11-22T01:02:03Z");
    cJSON_Delete(p);
    cJSON_Delete(node);
    free(run);
}

/* DaemonSet: a node alone in its pool reads its own status word, which a
 * status in (pass,warn) selector does not admit; a node that had partners
 * but no group keeps "pending" and nothing that speaks for a verdict,
 * unless a failure was proven on it. */
Test(k8s_publish, daemonset_alone_is_untested_and_no_group_stays_pending)
{
    struct pf_run *run = make_run(PF_PASS, 0);
    struct pf_node_labels l;
    cJSON *p;

    run->cfg.mode = PF_MODE_DAEMONSET;
    run->peers.world = 1;
    p = labels_patch(run, "efa-preflight.io/");
    cr_assert_str_eq(label(p, "efa-preflight.io/status"), PF_NODE_UNTESTED);
    cr_assert_str_eq(label(p, "efa-preflight.io/fabric"), "untested");
    cJSON_Delete(p);

    run->peers.world = 0;
    run->peers.stay_pending = true;
    pf_fault_set(&run->peers.fault, PF_ERR_TIMEOUT, PF_R_GroupNotFormed,
                 "3 other node(s) of pool p5.48xlarge/us-east-1a are pending");
    pf_verdict_add(&run->verdict, "collective", PF_COND_FABRIC, PF_FAIL,
                   PF_R_GroupNotFormed, "", "no group");
    pf_verdict_finish(run);
    p = labels_patch(run, "efa-preflight.io/");
    cr_assert_str_eq(label(p, "efa-preflight.io/status"), PF_NODE_PENDING);
    cr_assert_str_eq(label(p, "efa-preflight.io/efa-count"), "32");
    for (const char *const *k = (const char *const[]){ "fabric", "busbw-gbps",
             "validated-at", "valid-until", "valid-until-epoch", NULL };
         *k; k++) {
        char key[64];
        snprintf(key, sizeof(key), "efa-preflight.io/%s", *k);
        cr_assert_str_eq(label(p, key), "(null)", "%s", key);
    }
    cJSON_Delete(p);

    /* A node failure proven on it leaves pending all the same. */
    pf_verdict_add(&run->verdict, "gpu_count", PF_COND_DEVICES, PF_FAIL,
                   PF_R_GPUCountMismatch, "", "0 of 8");
    pf_verdict_finish(run);
    pf_node_labels_make(run, 1795309323, &l);
    cr_assert_str_eq(l.status, "fail");
    free(run);
}

Test(k8s_publish, singleton_fabric_is_unknown)
{
    struct pf_run *run = make_run(PF_PASS, 0);

    run->cfg.mode = PF_MODE_DAEMONSET;
    run->peers.world = 1;
    fabric_condition_is(run, "Unknown", "FabricUntested");
}

Test(k8s_publish, taints_touch_only_ours)
{
    cJSON *node = cJSON_Parse(
        "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"taints\":["
        "{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"},"
        "{\"key\":\"efa-preflight.io/unhealthy\",\"value\":\"Old\","
        "\"effect\":\"NoSchedule\"}]}}");
    cJSON *clean = cJSON_Parse("{\"metadata\":{\"resourceVersion\":\"7\"},"
                               "\"spec\":{\"taints\":[{\"key\":\"a\","
                               "\"effect\":\"NoExecute\"}]}}");
    bool changed;
    cJSON *p;
    const cJSON *t;

    p = pf_node_taints_patch(node, "efa-preflight.io/", true, "X", &changed);
    cr_assert_not(changed);
    cr_assert_null(p);

    p = pf_node_taints_patch(node, "efa-preflight.io/", false, NULL, &changed);
    cr_assert(changed);
    cr_assert_str_eq(pf_json_str(p, "metadata.resourceVersion"), "42");
    t = pf_json_at(p, "spec.taints");
    cr_assert_eq(cJSON_GetArraySize(t), 1);
    cr_assert_str_eq(pf_json_str(cJSON_GetArrayItem(t, 0), "key"),
                     "nvidia.com/gpu");
    cJSON_Delete(p);

    p = pf_node_taints_patch(clean, "efa-preflight.io/", true,
                             "BandwidthBelowThreshold", &changed);
    cr_assert(changed);
    t = pf_json_at(p, "spec.taints");
    cr_assert_eq(cJSON_GetArraySize(t), 2);
    cr_assert_str_eq(pf_json_str(cJSON_GetArrayItem(t, 0), "key"), "a");
    cr_assert_str_eq(pf_json_str(cJSON_GetArrayItem(t, 1), "key"),
                     "efa-preflight.io/unhealthy");
    cr_assert_str_eq(pf_json_str(cJSON_GetArrayItem(t, 1), "effect"),
                     "NoSchedule");
    cr_assert_str_eq(pf_json_str(cJSON_GetArrayItem(t, 1), "value"),
                     "BandwidthBelowThreshold");
    cJSON_Delete(p);

    p = pf_node_taints_patch(clean, "efa-preflight.io/", false, NULL, &changed);
    cr_assert_not(changed);
    cr_assert_null(p);
    cJSON_Delete(node);
    cJSON_Delete(clean);
}

Test(k8s_publish, event_type_reason_and_numbers)
{
    struct pf_run *run = make_run(PF_PASS, 0);
    cJSON *ev = pf_node_event(run, "n1", "uid-1", "pod-a",
                              "2026-11-22T01:02:03Z", "n1.abc", NULL);

    cr_assert_str_eq(pf_json_str(ev, "type"), "Normal");
    cr_assert_str_eq(pf_json_str(ev, "reason"), "PreflightPassed");
    cr_assert_str_eq(pf_json_str(ev, "involvedObject.kind"), "Node");
    cr_assert_str_eq(pf_json_str(ev, "involvedObject.uid"), "uid-1");
    cr_assert_str_eq(pf_json_str(ev, "metadata.namespace"), "default");
    cr_assert_str_eq(pf_json_str(ev, "message"),
                     "pass: efa 32, busbw 335.24 GB/s over 4 nodes, no floor");
    cJSON_Delete(ev);
    free(run);

    /* a group failure: the class's word, "error" as on the label */
    run = make_run(PF_FAIL, 1);
    ev = pf_node_event(run, "n1", NULL, "pod-a", "2026-11-22T01:02:03Z", "e", NULL);
    cr_assert_str_eq(pf_json_str(ev, "type"), "Warning");
    cr_assert_str_eq(pf_json_str(ev, "reason"), "BandwidthBelowThreshold");
    cr_assert_str_eq(pf_json_str(ev, "message"),
                     "error: busbw 3.1 GB/s below floor 300; efa 32, busbw "
                     "335.24 GB/s over 4 nodes, no floor");
    cJSON_Delete(ev);
    free(run);

    run = make_run_with(PF_FAIL, PF_R_DataCorruption, 1);
    ev = pf_node_event(run, "n1", NULL, "pod-a", "2026-11-22T01:02:03Z", "e", NULL);
    cr_assert(!strncmp(pf_json_str(ev, "message"), "fail: ", 6), "%s",
              pf_json_str(ev, "message"));
    cJSON_Delete(ev);
    free(run);
}

/* EFAFabricReady by the deciding class: False only for a fault proven on
 * this node; Unknown with the reason for a group failure, a peer that died
 * or was at fault, the infrastructure and a usage error (docs/install/remediation.md's
 * NodeHealthCheck remediates on False: it must never reboot the healthy
 * survivors of a peer that died); True for pass and warn. */
Test(k8s_publish, fabric_condition_by_class)
{
    static const struct {
        enum pf_status st;
        enum pf_reason reason;
        int exit_code;
        const char *status, *label;
    } cases[] = {
        { PF_FAIL, PF_R_PeerLost, 3, "Unknown", "error" },
        { PF_FAIL, PF_R_PeerTimeout, 3, "Unknown", "error" },
        { PF_FAIL, PF_R_BandwidthBelowThreshold, 1, "Unknown", "error" },
        { PF_FAIL, PF_R_DataCorruptionNotLocalised, 1, "Unknown", "error" },
        { PF_FAIL, PF_R_RendezvousPortInUse, 2, "Unknown", NULL },
        { PF_WARN, PF_R_SlowPeer, 4, "Unknown", "warn" },
        { PF_FAIL, PF_R_PeerDataCorruption, 4, "Unknown", "warn" },
        { PF_FAIL, PF_R_StragglerNode, 1, "False", "fail" },
        { PF_FAIL, PF_R_DataCorruption, 1, "False", "fail" },
        { PF_WARN, PF_R_BandwidthNotJudged, 0, "True", "warn" },
        { PF_PASS, PF_R_None, 0, "True", "pass" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pf_run *run = make_run_with(cases[i].st, cases[i].reason,
                                           cases[i].exit_code);
        cJSON *p = pf_node_conditions_patch(run, NULL, "2026-11-22T01:02:03Z");
        const cJSON *fab = condition(p, "EFAFabricReady");
        const char *label = pf_class_status_label(run->verdict.cls);
        const char *why = pf_reason_name(cases[i].reason);

        cr_assert_str_eq(pf_json_str(fab, "status"), cases[i].status, "%s", why);
        cr_assert_str_eq(pf_json_str(fab, "reason"),
                         cases[i].reason == PF_R_None ? "PreflightPassed" : why);
        if (cases[i].reason != PF_R_None)
            cr_assert_str_eq(pf_json_str(fab, "message"),
                             "busbw 3.1 GB/s below floor 300", "%s", why);
        /* the node's own checks passed: its devices stay True */
        cr_assert_str_eq(pf_json_str(condition(p, "EFADevicesReady"), "status"),
                         "True", "%s", why);
        if (cases[i].label)
            cr_assert_str_eq(label, cases[i].label, "%s", why);
        else
            cr_assert_null(label, "%s", why);
        cJSON_Delete(p);
        free(run);
    }
}

/* A proven fault decides its condition whatever else could not judge it,
 * and the survivor of a lost peer keeps Unknown even next to a warning. */
Test(k8s_publish, a_proven_fault_is_never_hidden_by_unknown)
{
    struct pf_run *run = make_run_with(PF_FAIL, PF_R_PeerLost, 3);

    pf_verdict_add(&run->verdict, "nic_errors", PF_COND_FABRIC, PF_FAIL,
                   PF_R_EFANICErrors, "", "rdmap0 errors moved");
    pf_verdict_add(&run->verdict, "usage", PF_COND_FABRIC, PF_FAIL,
                   PF_R_RendezvousPortInUse, "", "port in use");
    pf_verdict_finish(run);
    fabric_condition_is(run, "False", "EFANICErrors");

    run = make_run_with(PF_FAIL, PF_R_PeerLost, 3);
    pf_verdict_add(&run->verdict, "hint", PF_COND_FABRIC, PF_WARN,
                   PF_R_BandwidthNotJudged, "", "not judged");
    pf_verdict_finish(run);
    fabric_condition_is(run, "Unknown", "PeerLost");
}

Test(k8s_publish, event_name_stays_a_valid_object_name)
{
    char node[254], name[PF_NAME_MAX + 32];

    pf_node_event_name(name, sizeof(name), "ip-10-0-0-7.ec2.internal",
                       0x1873a5b2c4d5e6f7ull);
    cr_assert_str_eq(name, "ip-10-0-0-7.ec2.internal.1873a5b2c4d5e6f7");

    /* A 253-character node name: the node part is cut, the time kept. */
    memset(node, 'n', 253);
    node[253] = '\0';
    pf_node_event_name(name, sizeof(name), node, 0x1873a5b2c4d5e6f7ull);
    cr_assert_eq(strlen(name), 253);
    cr_assert(pf_kube_name_ok(name), "%s", name);
    cr_assert_str_eq(name + 236, ".1873a5b2c4d5e6f7");
    cr_assert_eq(strspn(name, "n"), 236);
}

/* Blast radius: the cap counts nodes carrying our taint or a HyperPod
 * recovery label, and rounds down to no less than one. */
Test(k8s_publish, blast_cap_counts_and_rounds_down)
{
    cr_assert_eq(pf_blast_cap("20%", 10), 2);
    /* rounded down, but a percentage allows one node in any cluster: 20%
     * of 4 (0.8) would let a small cluster never be tainted */
    cr_assert_eq(pf_blast_cap("20%", 4), 1);
    cr_assert_eq(pf_blast_cap("20%", 1), 1);
    cr_assert_eq(pf_blast_cap("20%", 14), 2);
    cr_assert_eq(pf_blast_cap("0%", 4), 0);
    cr_assert_eq(pf_blast_cap("50%", 1000), 500);
    cr_assert_eq(pf_blast_cap("3", 10), 3);
    cr_assert_eq(pf_blast_cap("0", 10), 0);
    cr_assert_eq(pf_blast_cap("lots", 10), 0);   /* unparsable: none */

    cJSON *n = cJSON_Parse("{\"metadata\":{\"name\":\"a\",\"labels\":{}},"
                           "\"spec\":{\"taints\":[{\"key\":\"other/x\","
                           "\"effect\":\"NoSchedule\"}]}}");
    cr_assert_not(pf_node_marked(n, "efa-preflight.io/"));
    cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "spec"), "taints"),
                         cJSON_Parse("{\"key\":\"efa-preflight.io/unhealthy\","
                                     "\"effect\":\"NoSchedule\"}"));
    cr_assert(pf_node_marked(n, "efa-preflight.io/"));
    cr_assert_not(pf_node_marked(n, "example.com/"));
    cJSON_Delete(n);
    n = cJSON_Parse("{\"metadata\":{\"labels\":{\"sagemaker.amazonaws.com/"
                    "node-health-status\":\"UnschedulablePendingReboot\"}}}");
    cr_assert(pf_node_marked(n, "efa-preflight.io/"));
    cJSON_Delete(n);
    n = cJSON_Parse("{\"metadata\":{\"labels\":{\"sagemaker.amazonaws.com/"
                    "node-health-status\":\"Schedulable\"}}}");
    cr_assert_not(pf_node_marked(n, "efa-preflight.io/"));
    cJSON_Delete(n);
}

Test(k8s_publish, hyperpod_recovery_label_only_when_asked)
{
    struct pf_run *run = make_run(PF_FAIL, 1);
    struct pf_node_labels l;
    cJSON *p;
    const cJSON *v;

    cr_assert_null(pf_hyperpod_action_value(PF_FAIL_ACTION_NONE));
    cr_assert_str_eq(pf_hyperpod_action_value(PF_FAIL_ACTION_HYPERPOD_REBOOT),
                     "UnschedulablePendingReboot");
    cr_assert_str_eq(pf_hyperpod_action_value(PF_FAIL_ACTION_HYPERPOD_REPLACE),
                     "UnschedulablePendingReplacement");
    p = labels_patch(run, "efa-preflight.io/");
    v = cJSON_GetObjectItemCaseSensitive(pf_json_at(p, "metadata.labels"),
                                         PF_HYPERPOD_HEALTH_LABEL);
    cr_assert_null(v, "the label is never written, nor removed, unasked");
    cJSON_Delete(p);
    snprintf(l.health_status, sizeof(l.health_status), "UnschedulablePendingReplacement");
    p = pf_node_labels_patch("efa-preflight.io/", &l);
    v = cJSON_GetObjectItemCaseSensitive(pf_json_at(p, "metadata.labels"),
                                         PF_HYPERPOD_HEALTH_LABEL);
    cr_assert_str_eq(cJSON_GetStringValue(v), "UnschedulablePendingReplacement");
    cJSON_Delete(p);
    free(run);
}

/* A localised corruption: the Event on the culprit's Node names the rank,
 * pod and node, as its condition does. */
Test(k8s_publish, event_names_the_corrupting_rank_pod_and_node)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    cJSON *ev;

    snprintf(run->cfg.label_prefix, sizeof(run->cfg.label_prefix), "efa-preflight.io/");
    pf_verdict_add(&run->verdict, "data", PF_COND_FABRIC, PF_FAIL,
                   PF_R_DataCorruption, "",
                   "this node (rank 2, pod train-2, node-c, 10.0.0.12) corrupts "
                   "data: 186 wrong elements");
    pf_verdict_finish(run);
    ev = pf_node_event(run, "node-c", "uid", "train-2", "2026-11-24T01:02:03Z",
                       "node-c.1", NULL);
    cr_assert_str_eq(pf_json_str(ev, "type"), "Warning");
    cr_assert_str_eq(pf_json_str(ev, "reason"), "DataCorruption");
    cr_assert(strstr(pf_json_str(ev, "message"),
                     "rank 2, pod train-2, node-c, 10.0.0.12"), "%s",
              pf_json_str(ev, "message"));
    cJSON_Delete(ev);
    free(run);
}

static const char *node_with_pass =
    "{\"metadata\":{\"labels\":{"
    "\"efa-preflight.io/status\":\"pass\","
    "\"efa-preflight.io/efa-count\":\"32\","
    "\"efa-preflight.io/busbw-gbps\":\"335.24\","
    "\"efa-preflight.io/validated-at\":\"20261121T010203Z\","
    "\"efa-preflight.io/valid-until\":\"20261122T010203Z\","
    "\"efa-preflight.io/valid-until-epoch\":\"1795309323\","
    "\"kubernetes.io/hostname\":\"n1\"}},"
    "\"status\":{\"conditions\":["
    "{\"type\":\"Ready\",\"status\":\"True\"},"
    "{\"type\":\"EFAFabricReady\",\"status\":\"True\","
    "\"reason\":\"PreflightPassed\","
    "\"lastTransitionTime\":\"2026-03-03T00:00:00Z\"}]}}";

/* Before the run: no label may still say pass, nor vouch for a verdict
 * (valid-until, busbw), while the facts (efa-count) stay; a "pending"
 * status is the DaemonSet's selector and stays. */
Test(k8s_publish, validating_state_drops_every_stale_pass)
{
    cJSON *node = cJSON_Parse(node_with_pass);
    cJSON *p = pf_node_state_labels_patch("efa-preflight.io/", node,
                                          PF_NODE_VALIDATING);

    cr_assert_str_eq(label(p, "efa-preflight.io/status"), "validating");
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until"), "(null)");
    cr_assert_str_eq(label(p, "efa-preflight.io/validated-at"), "(null)");
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until-epoch"), "(null)");
    cr_assert_str_eq(label(p, "efa-preflight.io/busbw-gbps"), "(null)");
    cr_assert_str_eq(label(p, "efa-preflight.io/fabric"), "(null)");
    cr_assert_null(label(p, "efa-preflight.io/efa-count"));
    cr_assert_null(label(p, "kubernetes.io/hostname"));
    cJSON_Delete(p);
    cJSON_Delete(node);

    node = cJSON_Parse("{\"metadata\":{\"labels\":{"
                       "\"efa-preflight.io/status\":\"pending\"}}}");
    p = pf_node_state_labels_patch("efa-preflight.io/", node, "error");
    cr_assert_null(label(p, "efa-preflight.io/status"));
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until"), "(null)");
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until-epoch"), "(null)");
    cJSON_Delete(p);
    cJSON_Delete(node);

    /* Conditions: Unknown with the reason, transition kept while Unknown. */
    node = cJSON_Parse(node_with_pass);
    p = pf_node_state_conditions_patch(node, PF_R_Interrupted, "stopped",
                                       "2026-11-22T01:02:03Z");
    cr_assert_eq(cJSON_GetArraySize(pf_json_at(p, "status.conditions")), 2);
    cr_assert_str_eq(pf_json_str(condition(p, "EFAFabricReady"), "status"),
                     "Unknown");
    cr_assert_str_eq(pf_json_str(condition(p, "EFAFabricReady"), "reason"),
                     "Interrupted");
    cr_assert_str_eq(pf_json_str(condition(p, "EFADevicesReady"), "reason"),
                     "Interrupted");
    cJSON_Delete(p);
    cJSON_Delete(node);
}

/* A usage error after the mark puts back exactly what was there: values,
 * absent labels removed, conditions restored or deleted. */
Test(k8s_publish, undo_puts_back_labels_and_conditions_as_found)
{
    cJSON *node = cJSON_Parse(node_with_pass);
    cJSON *l = pf_node_undo_labels_patch("efa-preflight.io/", node);
    cJSON *c = pf_node_undo_conditions_patch(node);
    const cJSON *fab = condition(c, "EFAFabricReady");
    const cJSON *dev = condition(c, "EFADevicesReady");

    cr_assert_str_eq(label(l, "efa-preflight.io/status"), "pass");
    cr_assert_str_eq(label(l, "efa-preflight.io/valid-until"),
                     "20261122T010203Z");
    cr_assert_str_eq(label(l, "efa-preflight.io/valid-until-epoch"),
                     "1795309323");
    cr_assert_str_eq(label(l, "efa-preflight.io/fabric"), "(null)");
    cr_assert_null(label(l, "kubernetes.io/hostname"));
    cr_assert_str_eq(pf_json_str(fab, "reason"), "PreflightPassed");
    cr_assert_str_eq(pf_json_str(fab, "lastTransitionTime"),
                     "2026-03-03T00:00:00Z");
    cr_assert_str_eq(pf_json_str(dev, "$patch"), "delete");
    cr_assert_null(condition(c, "Ready"));

    /* The verdict keeps lastTransitionTime from the Node as it was
     * before the mark (the undo patch), not from Unknown/Validating. */
    struct pf_run *run = make_run(PF_PASS, 0);
    cJSON *p = pf_node_conditions_patch(run, c, "2026-11-22T01:02:03Z");
    cr_assert_str_eq(pf_json_str(condition(p, "EFAFabricReady"),
                                 "lastTransitionTime"), "2026-03-03T00:00:00Z");
    cr_assert_str_eq(pf_json_str(condition(p, "EFADevicesReady"),
                                 "lastTransitionTime"), "2026-11-22T01:02:03Z");
    cJSON_Delete(p);
    free(run);
    cJSON_Delete(l);
    cJSON_Delete(c);
    cJSON_Delete(node);
}

/* A peer's forged hostname quoted in a message reaches the conditions and
 * the Event sanitised: no ESC, no newline, valid UTF-8. */
Test(k8s_publish, forged_peer_names_reach_conditions_and_event_sanitised)
{
    struct pf_run *run = make_run(PF_PASS, 0);
    cJSON *p, *ev;
    char *text;

    pf_verdict_add(&run->verdict, "rendezvous", PF_COND_FABRIC, PF_FAIL,
                   PF_R_PeerLost, "", "rank 1 (%s) hung up",
                   "evil\x1b[2J\nFAKE: pass\xff");
    pf_verdict_finish(run);
    p = pf_node_conditions_patch(run, NULL, "2026-11-22T01:02:03Z");
    cr_assert_str_eq(pf_json_str(condition(p, "EFAFabricReady"), "message"),
                     "rank 1 (evil?[2J?FAKE: pass?) hung up");
    ev = pf_node_event(run, "n1", NULL, "pod-a", "2026-11-22T01:02:03Z", "e", "");
    text = cJSON_PrintUnformatted(ev);
    cr_assert_null(strchr(text, '\x1b'));
    cr_assert_null(strstr(text, "\\n"));
    cr_assert(strstr(text, "evil?[2J?FAKE: pass?"), "%s", text);
    free(text);
    cJSON_Delete(ev);
    cJSON_Delete(p);
    free(run);
}

/* The labels table (docs/reference/labels.md's, printed from our_labels) is what the
 * verdict writes, key for key and in order; the mark before a run drops
 * every label that speaks for a verdict, valid-until-epoch included, and
 * the undo puts each of them back. */
Test(k8s_publish, label_table_is_what_the_patches_write)
{
    struct pf_run *run = make_run(PF_PASS, 0);
    const cJSON *item;
    cJSON *p, *node;
    size_t i = 0;
    char key[128];

    p = labels_patch(run, "efa-preflight.io/");
    cJSON_ArrayForEach(item, pf_json_at(p, "metadata.labels")) {
        cr_assert_not_null(pf_node_label_name(i), "%s beyond the table", item->string);
        snprintf(key, sizeof(key), "efa-preflight.io/%s", pf_node_label_name(i));
        cr_assert_str_eq(item->string, key);
        i++;
    }
    cr_assert_null(pf_node_label_name(i), "the table lists %s, not written",
                   pf_node_label_name(i));
    cr_assert_eq(i, 8);
    cJSON_Delete(p);

    node = cJSON_Parse("{\"metadata\":{\"labels\":{"
                       "\"efa-preflight.io/status\":\"pass\","
                       "\"efa-preflight.io/valid-until-epoch\":\"1795482123\"}}}");
    p = pf_node_state_labels_patch("efa-preflight.io/", node, "validating");
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until-epoch"), "(null)");
    cr_assert_null(label(p, "efa-preflight.io/efa-count"));
    cJSON_Delete(p);
    p = pf_node_undo_labels_patch("efa-preflight.io/", node);
    cr_assert_str_eq(label(p, "efa-preflight.io/valid-until-epoch"), "1795482123");
    cJSON_Delete(p);
    cJSON_Delete(node);
    free(run);
}
