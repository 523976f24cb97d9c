/* The patch builder: which Pods get the gate, and that the patch, applied
 * as RFC 6902 says, gives a Pod with the copy-in and gate initContainers
 * first, the gate in the image and with the devices of the container that
 * requests EFA, and that a second pass over the patched Pod adds nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/gate.h"

static const struct pf_gate_opts opts = {
    .agent_image = "repo/efa-preflight:agent",
    .prefix = "efa-preflight.io/",
    .timeout_s = 600,
    .port = 29600,
    .taint_on_failure = true,
    .valid_hours = 12,
    .taint_budget = "ops/budget",
    .baseline_configmap = "ops/base",
};

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_Parse(s);
    cr_assert_not_null(j, "test JSON does not parse: %s", s);
    return j;
}

/* ---- a small RFC 6902 "add" applier, enough for what the builder emits -- */

static cJSON *resolve_parent(cJSON *doc, const char *path, char *last, size_t cap)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
    /* unescape the last token */
    size_t n = 0;
    for (const char *t = slash + 1; *t && n + 1 < cap; t++) {
        if (t[0] == '~' && (t[1] == '0' || t[1] == '1')) {
            last[n++] = t[1] == '0' ? '~' : '/';
            t++;
        } else {
            last[n++] = *t;
        }
    }
    last[n] = '\0';
    cJSON *cur = doc;
    if (slash == buf)
        return cur; /* a member of the root */
    char *save = NULL;
    for (char *tok = strtok_r(buf + 1, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(tok))
                                 : cJSON_GetObjectItemCaseSensitive(cur, tok);
        cr_assert_not_null(cur, "patch path %s: %s missing", path, tok);
    }
    return cur;
}

static void apply(cJSON *doc, const cJSON *patch)
{
    const cJSON *op;
    cJSON_ArrayForEach(op, patch) {
        cr_assert_str_eq(cJSON_GetObjectItem(op, "op")->valuestring, "add");
        const char *path = cJSON_GetObjectItem(op, "path")->valuestring;
        cJSON *val = cJSON_Duplicate(cJSON_GetObjectItem(op, "value"), true);
        char last[256];
        cJSON *parent = resolve_parent(doc, path, last, sizeof last);
        if (cJSON_IsArray(parent)) {
            if (!strcmp(last, "-")) {
                cJSON_AddItemToArray(parent, val);
            } else {
                int at = atoi(last);
                cr_assert(at >= 0 && at <= cJSON_GetArraySize(parent), "index %d", at);
                if (at == cJSON_GetArraySize(parent))
                    cJSON_AddItemToArray(parent, val);
                else
                    cJSON_InsertItemInArray(parent, at, val);
            }
        } else {
            cr_assert(cJSON_IsObject(parent), "parent of %s is not an object", path);
            cr_assert_null(cJSON_GetObjectItemCaseSensitive(parent, last),
                           "add over an existing member %s", path);
            cJSON_AddItemToObject(parent, last, val);
        }
    }
}

/* Build, check the decision, apply; the patched pod (caller deletes). */
static cJSON *gate(const char *pod_json, enum pf_gate_decision want)
{
    cJSON *pod = parse(pod_json), *patch = NULL;
    enum pf_gate_decision d;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_gate_patch(pod, &opts, &d, &patch, msg), PF_OK, "%s", msg);
    cr_assert_eq(d, want, "decision %s, wanted %s", pf_gate_decision_name(d),
                 pf_gate_decision_name(want));
    if (want != PF_GATE_INJECT) {
        cr_assert_null(patch);
        return pod;
    }
    cr_assert(cJSON_IsArray(patch) && cJSON_GetArraySize(patch) > 0);
    apply(pod, patch);
    cJSON_Delete(patch);
    /* idempotent: the patched Pod is gated already */
    cJSON *again = NULL;
    cr_assert_eq(pf_gate_patch(pod, &opts, &d, &again, msg), PF_OK, "%s", msg);
    cr_assert_eq(d, PF_GATE_ALREADY);
    cr_assert_null(again);
    return pod;
}

static const cJSON *at(const cJSON *j, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *cur = j;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(tok))
                                 : cJSON_GetObjectItemCaseSensitive(cur, tok);
    return cur;
}

static const char *str_at(const cJSON *j, const char *path)
{
    const cJSON *v = at(j, path);
    return cJSON_IsString(v) ? v->valuestring : "(none)";
}

static const cJSON *env_named(const cJSON *c, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "env"))
        if (!strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name))
            return e;
    return NULL;
}

static int count_named(const cJSON *list, const char *name)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        const cJSON *k = cJSON_GetObjectItem(e, "name");
        if (!k)
            k = cJSON_GetObjectItem(e, "key");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, name))
            n++;
    }
    return n;
}

Test(gate, one_container_gets_copy_then_gate_with_its_image_and_devices)
{
    cJSON *pod = gate("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"train\","
                      "\"image\":\"my/train:1\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"8\","
                      "\"vpc.amazonaws.com/efa\":\"32\"}}}]}}", PF_GATE_INJECT);
    const cJSON *inits = at(pod, "spec.initContainers");
    cr_assert_eq(cJSON_GetArraySize(inits), 2);
    cr_assert_str_eq(str_at(inits, "0.name"), PF_GATE_COPY_CONTAINER);
    cr_assert_str_eq(str_at(inits, "0.image"), "repo/efa-preflight:agent");
    cr_assert_str_eq(str_at(inits, "1.name"), PF_GATE_CONTAINER);
    cr_assert_str_eq(str_at(inits, "1.image"), "my/train:1");
    cr_assert_str_eq(str_at(inits, "1.command.0"), "/efa-preflight/efa-preflight");
    cr_assert_str_eq(str_at(inits, "1.command.1"), "run");
    const cJSON *g = cJSON_GetArrayItem(inits, 1);
    const cJSON *lim = at(g, "resources.limits"), *req = at(g, "resources.requests");
    cr_assert_str_eq(cJSON_GetObjectItem(lim, "vpc.amazonaws.com/efa")->valuestring, "32");
    cr_assert_str_eq(cJSON_GetObjectItem(req, "vpc.amazonaws.com/efa")->valuestring, "32");
    cr_assert_str_eq(cJSON_GetObjectItem(lim, "nvidia.com/gpu")->valuestring, "8");
    cr_assert_str_eq(cJSON_GetObjectItem(req, "nvidia.com/gpu")->valuestring, "8");
    /* what the agent reads at run time */
    cr_assert_str_eq(str_at(env_named(g, "POD_NAME"), "valueFrom.fieldRef.fieldPath"), "metadata.name");
    cr_assert_str_eq(str_at(env_named(g, "NODE_NAME"), "valueFrom.fieldRef.fieldPath"), "spec.nodeName");
    cr_assert_str_eq(str_at(env_named(g, "POD_IP"), "valueFrom.fieldRef.fieldPath"), "status.podIP");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_BOOTSTRAP"), "value"), "k8s");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_MODE"), "value"), "initcontainer");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_TIMEOUT"), "value"), "600");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_TAINT_ON_FAILURE"), "value"), "true");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_VALID_HOURS"), "value"), "12");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_TAINT_BUDGET"), "value"), "ops/budget");
    cr_assert_str_eq(str_at(env_named(g, "EFA_PREFLIGHT_BASELINE_CONFIGMAP"), "value"), "ops/base");
    cr_assert_str_eq(str_at(g, "securityContext.capabilities.add.0"), "IPC_LOCK");
    /* the copy passes the "restricted" Pod Security level on its own */
    const cJSON *csc = at(cJSON_GetArrayItem(inits, 0), "securityContext");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(csc, "runAsNonRoot")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(csc, "allowPrivilegeEscalation")));
    cr_assert_str_eq(str_at(csc, "capabilities.drop.0"), "ALL");
    cr_assert_str_eq(str_at(csc, "seccompProfile.type"), "RuntimeDefault");
    /* the token reaches the gate alone, at the kubelet's path */
    cr_assert_eq(count_named(at(g, "volumeMounts"), PF_GATE_TOKEN_VOLUME), 1);
    cr_assert_null(at(pod, "spec.containers.0.volumeMounts"));
    const cJSON *vols = at(pod, "spec.volumes");
    cr_assert_eq(count_named(vols, PF_GATE_VOLUME), 1);
    cr_assert_eq(count_named(vols, PF_GATE_TOKEN_VOLUME), 1);
    cr_assert_eq(count_named(vols, PF_GATE_SHM_VOLUME), 1);
    /* the service account is the job's own */
    cr_assert_null(at(pod, "spec.serviceAccountName"));
    const cJSON *tols = at(pod, "spec.tolerations");
    cr_assert_eq(count_named(tols, "vpc.amazonaws.com/efa"), 1);
    cr_assert_eq(count_named(tols, "nvidia.com/gpu"), 1);
    cr_assert_str_eq(cJSON_GetObjectItem(at(pod, "metadata.annotations"),
                                         "efa-preflight.io/gate")->valuestring, "injected");
    cJSON_Delete(pod);
}

Test(gate, of_n_containers_the_one_with_most_efa_is_tested)
{
    cJSON *pod = gate("{\"metadata\":{},\"spec\":{\"containers\":["
                      "{\"name\":\"sidecar\",\"image\":\"log:1\"},"
                      "{\"name\":\"a\",\"image\":\"a:1\",\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"4\"}}},"
                      "{\"name\":\"b\",\"image\":\"b:1\",\"imagePullPolicy\":\"Always\",\"resources\":{\"limits\":"
                      "{\"vpc.amazonaws.com/efa\":\"16\",\"nvidia.com/gpu\":4,\"memory\":\"1000Gi\"},"
                      "\"requests\":{\"cpu\":\"90\"}}},"
                      "{\"name\":\"c\",\"image\":\"c:1\",\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"16\"}}}]}}",
                      PF_GATE_INJECT);
    const cJSON *g = at(pod, "spec.initContainers.1");
    cr_assert_str_eq(str_at(g, "image"), "b:1");
    cr_assert_str_eq(str_at(g, "imagePullPolicy"), "Always");
    /* its whole resources, EFA and GPU in both limits and requests */
    cr_assert_str_eq(cJSON_GetObjectItem(at(g, "resources.requests"), "cpu")->valuestring, "90");
    cr_assert_str_eq(cJSON_GetObjectItem(at(g, "resources.limits"), "memory")->valuestring, "1000Gi");
    cr_assert_eq(cJSON_GetObjectItem(at(g, "resources.requests"), "nvidia.com/gpu")->valueint, 4);
    const cJSON *gpu = cJSON_GetObjectItem(at(g, "resources.limits"), "nvidia.com/gpu");
    cr_assert(cJSON_IsNumber(gpu) && gpu->valueint == 4, "quantity copied as given");
    cr_assert_eq(cJSON_GetArraySize(at(pod, "spec.containers")), 4, "app containers untouched");
    cJSON_Delete(pod);
}

Test(gate, efa_in_requests_only_is_found_and_copied_to_both)
{
    cJSON *pod = gate("{\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                      "{\"requests\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}", PF_GATE_INJECT);
    const cJSON *g = at(pod, "spec.initContainers.1");
    cr_assert_str_eq(cJSON_GetObjectItem(at(g, "resources.limits"), "vpc.amazonaws.com/efa")->valuestring, "1");
    cr_assert_str_eq(cJSON_GetObjectItem(at(g, "resources.requests"), "vpc.amazonaws.com/efa")->valuestring, "1");
    cr_assert_null(cJSON_GetObjectItem(at(g, "resources.limits"), "nvidia.com/gpu"));
    /* no GPU requested: no GPU toleration added; and no metadata at all
     * before: the patch adds it whole */
    cr_assert_eq(count_named(at(pod, "spec.tolerations"), "nvidia.com/gpu"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(at(pod, "metadata.annotations"),
                                         "efa-preflight.io/gate")->valuestring, "injected");
    cJSON_Delete(pod);
}

Test(gate, existing_init_containers_run_after_the_gate)
{
    cJSON *pod = gate("{\"metadata\":{\"annotations\":{\"a\":\"b\"}},\"spec\":{"
                      "\"initContainers\":[{\"name\":\"download\",\"image\":\"d:1\"}],"
                      "\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\"}}],"
                      "\"tolerations\":[{\"key\":\"vpc.amazonaws.com/efa\",\"operator\":\"Exists\"}],"
                      "\"containers\":[{\"name\":\"t\",\"image\":\"t:1\","
                      "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"INFO\"},{\"name\":\"FI_EFA_USE_HUGE_PAGE\",\"value\":\"1\"},{\"name\":\"SECRET\",\"value\":\"x\"}],"
                      "\"volumeMounts\":[{\"name\":\"dshm\",\"mountPath\":\"/dev/shm\"}],"
                      "\"securityContext\":{\"runAsUser\":1000,\"capabilities\":{\"add\":[\"IPC_LOCK\",\"SYS_RESOURCE\"]}},"
                      "\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"2\"}}}]}}", PF_GATE_INJECT);
    const cJSON *inits = at(pod, "spec.initContainers");
    cr_assert_eq(cJSON_GetArraySize(inits), 3);
    cr_assert_str_eq(str_at(inits, "0.name"), PF_GATE_COPY_CONTAINER);
    cr_assert_str_eq(str_at(inits, "1.name"), PF_GATE_CONTAINER);
    cr_assert_str_eq(str_at(inits, "2.name"), "download");
    const cJSON *g = cJSON_GetArrayItem(inits, 1);
    /* the job's stack settings follow it; nothing else of its env does */
    cr_assert_str_eq(str_at(env_named(g, "NCCL_DEBUG"), "value"), "INFO");
    cr_assert_str_eq(str_at(env_named(g, "FI_EFA_USE_HUGE_PAGE"), "value"), "1");
    cr_assert_null(env_named(g, "SECRET"));
    /* and its securityContext, as it is */
    cr_assert_eq(at(g, "securityContext.runAsUser")->valueint, 1000);
    cr_assert_str_eq(str_at(g, "securityContext.capabilities.add.1"), "SYS_RESOURCE");
    /* its /dev/shm is reused, no volume of ours for it */
    const cJSON *vols = at(pod, "spec.volumes");
    cr_assert_eq(cJSON_GetArraySize(vols), 4);
    cr_assert_eq(count_named(vols, PF_GATE_SHM_VOLUME), 0);
    cr_assert_eq(count_named(at(g, "volumeMounts"), "dshm"), 1);
    /* a toleration the Pod has is not doubled */
    cr_assert_eq(count_named(at(pod, "spec.tolerations"), "vpc.amazonaws.com/efa"), 1);
    cr_assert_eq(count_named(at(pod, "spec.tolerations"), "aws.amazon.com/efa"), 1);
    /* annotations kept, ours added through an escaped pointer */
    cr_assert_str_eq(cJSON_GetObjectItem(at(pod, "metadata.annotations"), "a")->valuestring, "b");
    cr_assert_str_eq(cJSON_GetObjectItem(at(pod, "metadata.annotations"),
                                         "efa-preflight.io/gate")->valuestring, "injected");
    cJSON_Delete(pod);
}

Test(gate, a_gate_written_by_hand_is_left_alone)
{
    cJSON_Delete(gate("{\"spec\":{\"initContainers\":[{\"name\":\"check\",\"image\":\"t:1\","
                      "\"command\":[\"/preflight/efa-preflight\",\"run\"]}],"
                      "\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":{\"limits\":"
                      "{\"vpc.amazonaws.com/efa\":\"2\"}}}]}}", PF_GATE_ALREADY));
    cJSON_Delete(gate("{\"spec\":{\"initContainers\":[{\"name\":\"efa-preflight\",\"image\":\"full:1\"}],"
                      "\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":{\"limits\":"
                      "{\"vpc.amazonaws.com/efa\":\"2\"}}}]}}", PF_GATE_ALREADY));
    /* a Pod that is the agent itself (the pre-flight DaemonSet's) */
    cJSON_Delete(gate("{\"spec\":{\"containers\":[{\"name\":\"validate\",\"image\":\"full:1\","
                      "\"command\":[\"efa-preflight\",\"run\"],\"resources\":{\"limits\":"
                      "{\"vpc.amazonaws.com/efa\":\"32\"}}}]}}", PF_GATE_ALREADY));
    /* an app container holding our name: adding ours would clash */
    cJSON_Delete(gate("{\"spec\":{\"containers\":[{\"name\":\"efa-preflight-copy\",\"image\":\"t:1\","
                      "\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"2\"}}}]}}",
                      PF_GATE_ALREADY));
    /* an argument naming the tool is not a gate */
    cJSON_Delete(gate("{\"spec\":{\"initContainers\":[{\"name\":\"x\",\"image\":\"t:1\","
                      "\"command\":[\"echo\",\"efa-preflight\"]}],"
                      "\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":{\"limits\":"
                      "{\"vpc.amazonaws.com/efa\":\"2\"}}}]}}", PF_GATE_INJECT));
}

Test(gate, no_efa_or_zero_efa_is_not_gated)
{
    cJSON_Delete(gate("{\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                      "{\"limits\":{\"nvidia.com/gpu\":\"8\"}}}]}}", PF_GATE_NO_EFA));
    cJSON_Delete(gate("{\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                      "{\"limits\":{\"vpc.amazonaws.com/efa\":\"0\"}}}]}}", PF_GATE_NO_EFA));
    cJSON_Delete(gate("{\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\"}]}}",
                      PF_GATE_NO_EFA));
}

Test(gate, opt_out_by_annotation_or_label)
{
    cJSON_Delete(gate("{\"metadata\":{\"annotations\":{\"efa-preflight.io/inject\":\"false\"}},"
                      "\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                      "{\"limits\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}", PF_GATE_OPTED_OUT));
    cJSON_Delete(gate("{\"metadata\":{\"labels\":{\"efa-preflight.io/inject\":\"false\"}},"
                      "\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                      "{\"limits\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}", PF_GATE_OPTED_OUT));
    /* any other value is not an opt-out */
    cJSON_Delete(gate("{\"metadata\":{\"annotations\":{\"efa-preflight.io/inject\":\"true\"}},"
                      "\"spec\":{\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                      "{\"limits\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}", PF_GATE_INJECT));
}

static void refused(const char *pod_json, const char *words)
{
    cJSON *pod = parse(pod_json), *patch = (cJSON *)1;
    enum pf_gate_decision d;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_gate_patch(pod, &opts, &d, &patch, msg), PF_ERR_PROTOCOL, "%s", pod_json);
    cr_assert_null(patch);
    cr_assert(strstr(msg, words) != NULL, "message '%s' lacks '%s'", msg, words);
    cJSON_Delete(pod);
}

Test(gate, a_pod_of_the_wrong_shape_is_an_error_naming_the_field)
{
    refused("[]", "not a Pod");
    refused("{\"spec\":1}", "no spec");
    refused("{\"spec\":{}}", "spec.containers");
    refused("{\"spec\":{\"containers\":{}}}", "not a list");
    refused("{\"spec\":{\"containers\":[1]}}", "containers[0]");
    refused("{\"spec\":{\"containers\":[],\"initContainers\":\"x\"}}", "initContainers");
    refused("{\"metadata\":{\"annotations\":[]},\"spec\":{\"containers\":[]}}", "annotations");
    refused("{\"spec\":{\"containers\":[{\"name\":\"t\",\"resources\":{\"limits\":"
            "{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}", "no image");
    refused("{\"spec\":{\"volumes\":[{\"name\":\"efa-preflight\"}],\"containers\":[{\"name\":\"t\","
            "\"image\":\"t:1\",\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}",
            "volume named efa-preflight");
}

/* ---- DRA: EFA and GPUs through spec.resourceClaims (resource.k8s.io/v1,
 * Kubernetes 1.34+): the Pod names ResourceClaimTemplates (one claim per
 * Pod) or a shared ResourceClaim; its containers take claims by name. Only
 * claims whose template or claim name matches dra_claims count. */

static const struct pf_gate_opts dra_opts = {
    .agent_image = "repo/efa-preflight:agent",
    .prefix = "efa-preflight.io/",
    .timeout_s = 600,
    .port = 29600,
    .valid_hours = 12,
    .dra_claims = "efa-*, h100-x8",
};

static cJSON *gate_dra(const struct pf_gate_opts *o, const char *pod_json,
                       enum pf_gate_decision want)
{
    cJSON *pod = parse(pod_json), *patch = NULL;
    enum pf_gate_decision d;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_gate_patch(pod, o, &d, &patch, msg), PF_OK, "%s", msg);
    cr_assert_eq(d, want, "decision %s, wanted %s", pf_gate_decision_name(d),
                 pf_gate_decision_name(want));
    if (want != PF_GATE_INJECT) {
        cr_assert_null(patch);
        return pod;
    }
    apply(pod, patch);
    cJSON_Delete(patch);
    cJSON *again = NULL;
    cr_assert_eq(pf_gate_patch(pod, o, &d, &again, msg), PF_OK, "%s", msg);
    cr_assert_eq(d, PF_GATE_ALREADY);
    cr_assert_null(again);
    return pod;
}

/* A PyTorchJob worker's Pod as the API server stores it with DRA devices:
 * EFA and GPUs from two templates, a log sidecar with a shared scratch
 * claim. */
#define DRA_POD(efa_tpl, gpu_tpl)                                                             \
    "{\"metadata\":{\"name\":\"llama-worker-0\",\"namespace\":\"ml\",\"labels\":"              \
    "{\"training.kubeflow.org/job-name\":\"llama\",\"training.kubeflow.org/replica-type\":"    \
    "\"worker\"}},\"spec\":{\"resourceClaims\":["                                               \
    "{\"name\":\"efa\",\"resourceClaimTemplateName\":\"" efa_tpl "\"},"                         \
    "{\"name\":\"gpus\",\"resourceClaimTemplateName\":\"" gpu_tpl "\"},"                        \
    "{\"name\":\"scratch\",\"resourceClaimName\":\"shared-scratch\"}],"                         \
    "\"containers\":[{\"name\":\"logs\",\"image\":\"fluent/bit:3\",\"resources\":{\"claims\":" \
    "[{\"name\":\"scratch\"}]}},{\"name\":\"pytorch\",\"image\":\"my/train:1\",\"resources\":"  \
    "{\"claims\":[{\"name\":\"efa\"},{\"name\":\"gpus\",\"request\":\"gpu\"}],"                \
    "\"limits\":{\"memory\":\"64Gi\"}}}]}}"

Test(gate, dra_claims_of_configured_templates_gate_the_container_taking_them)
{
    cJSON *pod = gate_dra(&dra_opts, DRA_POD("efa-32", "h100-x8"), PF_GATE_INJECT);
    const cJSON *g = at(pod, "spec.initContainers.1");
    cr_assert_str_eq(str_at(g, "name"), "efa-preflight");
    cr_assert_str_eq(str_at(g, "image"), "my/train:1", "the gate runs in the container taking the claims");
    /* the same claims (a Pod's containers share a claim's devices), the
     * container's own resources, and no device-plugin resource made up */
    const cJSON *claims = at(g, "resources.claims");
    cr_assert_eq(cJSON_GetArraySize(claims), 2);
    cr_assert_str_eq(str_at(claims, "0.name"), "efa");
    cr_assert_str_eq(str_at(claims, "1.name"), "gpus");
    cr_assert_str_eq(str_at(claims, "1.request"), "gpu");
    cr_assert_str_eq(str_at(g, "resources.limits.memory"), "64Gi");
    cr_assert_null(cJSON_GetObjectItem(at(g, "resources.limits"), "vpc.amazonaws.com/efa"));
    cr_assert_null(cJSON_GetObjectItem(at(g, "resources.limits"), "nvidia.com/gpu"));
    cr_assert_str_eq(str_at(pod, "spec.initContainers.0.name"), "efa-preflight-copy");
    cr_assert_eq(count_named(at(pod, "spec.tolerations"), "vpc.amazonaws.com/efa"), 1);
    cr_assert_not_null(cJSON_GetObjectItem(at(pod, "metadata.annotations"), "efa-preflight.io/gate"));
    cJSON_Delete(pod);
    /* one matching template is enough (GPUs from elsewhere) */
    cJSON_Delete(gate_dra(&dra_opts, DRA_POD("efa-32", "a100-x8"), PF_GATE_INJECT));
}

Test(gate, dra_claims_of_other_names_or_none_configured_are_not_gated)
{
    /* nothing configured: a DRA Pod is not taken for an EFA Pod */
    cJSON_Delete(gate_dra(&opts, DRA_POD("efa-32", "h100-x8"), PF_GATE_NO_EFA));
    /* configured, but the Pod's templates are others */
    cJSON_Delete(gate_dra(&dra_opts, DRA_POD("rdma-32", "a100-x8"), PF_GATE_NO_EFA));
    /* a matching claim no container takes */
    cJSON_Delete(gate_dra(&dra_opts, "{\"spec\":{\"resourceClaims\":[{\"name\":\"efa\","
                          "\"resourceClaimTemplateName\":\"efa-32\"}],\"containers\":[{\"name\":\"t\","
                          "\"image\":\"t:1\",\"resources\":{\"claims\":[{\"name\":\"other\"}]}}]}}",
                          PF_GATE_NO_EFA));
    /* a pattern matches whole names, not parts */
    struct pf_gate_opts exact = dra_opts;
    exact.dra_claims = "efa";
    cJSON_Delete(gate_dra(&exact, DRA_POD("efa-32", "a100-x8"), PF_GATE_NO_EFA));
}

Test(gate, dra_a_shared_resource_claim_by_name_and_the_opt_out_hold)
{
    struct pf_gate_opts o = dra_opts;
    o.dra_claims = "shared-scratch";
    cJSON *pod = gate_dra(&o, DRA_POD("x", "y"), PF_GATE_INJECT);
    cr_assert_str_eq(str_at(pod, "spec.initContainers.1.image"), "fluent/bit:3");
    cJSON_Delete(pod);
    cJSON_Delete(gate_dra(&dra_opts, "{\"metadata\":{\"labels\":{\"efa-preflight.io/inject\":\"false\"}},"
                          "\"spec\":{\"resourceClaims\":[{\"name\":\"efa\",\"resourceClaimTemplateName\":"
                          "\"efa-32\"}],\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                          "{\"claims\":[{\"name\":\"efa\"}]}}]}}", PF_GATE_OPTED_OUT));
}

Test(gate, dra_gpus_with_efa_from_the_device_plugin_keep_both)
{
    cJSON *pod = gate_dra(&dra_opts, "{\"spec\":{\"resourceClaims\":[{\"name\":\"gpus\","
                          "\"resourceClaimTemplateName\":\"h100-x8\"}],\"containers\":[{\"name\":\"t\","
                          "\"image\":\"t:1\",\"resources\":{\"claims\":[{\"name\":\"gpus\"}],\"limits\":"
                          "{\"vpc.amazonaws.com/efa\":\"32\"}}}]}}", PF_GATE_INJECT);
    const cJSON *g = at(pod, "spec.initContainers.1");
    cr_assert_str_eq(cJSON_GetObjectItem(at(g, "resources.limits"), "vpc.amazonaws.com/efa")->valuestring, "32");
    cr_assert_str_eq(cJSON_GetObjectItem(at(g, "resources.requests"), "vpc.amazonaws.com/efa")->valuestring, "32");
    cr_assert_str_eq(str_at(g, "resources.claims.0.name"), "gpus");
    cJSON_Delete(pod);
}

Test(gate, dra_resource_claims_of_the_wrong_shape_are_refused)
{
    cJSON *pod = parse("{\"spec\":{\"resourceClaims\":{\"name\":\"efa\"},\"containers\":[{\"name\":\"t\","
                       "\"image\":\"t:1\"}]}}"), *patch = NULL;
    enum pf_gate_decision d;
    char msg[PF_ERRLEN] = "";
    cr_assert_eq(pf_gate_patch(pod, &dra_opts, &d, &patch, msg), PF_ERR_PROTOCOL);
    cr_assert(strstr(msg, "resourceClaims") != NULL, "%s", msg);
    cr_assert_null(patch);
    cJSON_Delete(pod);
    /* odd members inside are not a crash, just no match */
    cJSON_Delete(gate_dra(&dra_opts, "{\"spec\":{\"resourceClaims\":[{\"name\":7,\"resourceClaimTemplateName\":"
                          "[\"efa-1\"]}],\"containers\":[{\"name\":\"t\",\"image\":\"t:1\",\"resources\":"
                          "{\"claims\":[{\"name\":null},7]}}]}}", PF_GATE_NO_EFA));
}
