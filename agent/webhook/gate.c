/* gate: decide whether a Pod gets the gate, and build the JSON Patch. */
#include "gate.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/sizes.h"

#define GATE_DIR "/efa-preflight"
#define TOKEN_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define GPU_RESOURCE "nvidia.com/gpu"

/* Taints an EFA node group commonly carries (FACTS: AWS samples taint with
 * either EFA key; the GPU operator's nodes with nvidia.com/gpu). */
static const char *const efa_taint_keys[] = { "vpc.amazonaws.com/efa", "aws.amazon.com/efa" };

const char *pf_gate_decision_name(enum pf_gate_decision d)
{
    switch (d) {
    case PF_GATE_INJECT: return "inject";
    case PF_GATE_NO_EFA: return "no-efa";
    case PF_GATE_ALREADY: return "already-gated";
    case PF_GATE_OPTED_OUT: return "opted-out";
    }
    return "?";
}

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *get_str(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A resource quantity as the API gives it (a string; a number is taken
 * too): is it more than zero? */
static bool quantity_positive(const cJSON *q)
{
    if (cJSON_IsNumber(q))
        return q->valuedouble > 0;
    if (!cJSON_IsString(q) || !q->valuestring)
        return false;
    char *end;
    double v = strtod(q->valuestring, &end);
    return end != q->valuestring && v > 0;
}

/* The container's quantity of resource: limits first (where extended
 * resources must be), else requests. NULL when it asks for none. */
static const cJSON *resource_of(const cJSON *c, const char *resource)
{
    const cJSON *res = get(c, "resources");
    const cJSON *q = get(get(res, "limits"), resource);
    if (quantity_positive(q))
        return q;
    q = get(get(res, "requests"), resource);
    return quantity_positive(q) ? q : NULL;
}

/* ---- DRA: devices through spec.resourceClaims --------------------------
 * A Pod may get its EFA devices and GPUs from a DRA driver instead of a
 * device plugin: pod.spec.resourceClaims[] names a ResourceClaimTemplate
 * (resourceClaimTemplateName) or a ResourceClaim (resourceClaimName), and a
 * container takes a claim by name in resources.claims[]. The webhook reads
 * no API object, so what a template hands out is not known here: the Pod's
 * claims whose template or claim name matches one of the configured shell
 * patterns (dra_claims) are taken as its EFA/GPU devices. Nothing matches
 * by default: gating a Pod without EFA would fail a good job. */

/* Does name match one of the comma-separated patterns? */
static bool claim_pattern_matches(const char *patterns, const char *name)
{
    if (!patterns || !*patterns || !name || !*name)
        return false;
    const char *p = patterns;
    while (*p) {
        size_t n = strcspn(p, ",");
        size_t start = 0, len = n;
        while (start < len && p[start] == ' ')
            start++;
        while (len > start && p[len - 1] == ' ')
            len--;
        if (len > start) {
            char *pat = strndup(p + start, len - start);
            bool hit = pat && fnmatch(pat, name, 0) == 0;
            free(pat);
            if (hit)
                return true;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return false;
}

/* Is the Pod-level claim called claim_name (an entry of resourceClaims)
 * one of the configured device claims? */
static bool device_claim(const cJSON *claims, const char *claim_name, const char *patterns)
{
    const cJSON *rc;
    cJSON_ArrayForEach(rc, claims) {
        const char *n = get_str(rc, "name");
        if (!n || strcmp(n, claim_name))
            continue;
        return claim_pattern_matches(patterns, get_str(rc, "resourceClaimTemplateName")) ||
               claim_pattern_matches(patterns, get_str(rc, "resourceClaimName"));
    }
    return false;
}

/* How many of the container's resources.claims are device claims. */
static int device_claims_of(const cJSON *c, const cJSON *claims, const char *patterns)
{
    int n = 0;
    const cJSON *cc;
    cJSON_ArrayForEach(cc, get(get(c, "resources"), "claims")) {
        const char *name = get_str(cc, "name");
        if (name && device_claim(claims, name, patterns))
            n++;
    }
    return n;
}

static double quantity_value(const cJSON *q)
{
    if (cJSON_IsNumber(q))
        return q->valuedouble;
    return q && cJSON_IsString(q) ? strtod(q->valuestring, NULL) : 0;
}

/* Every element of a list field must be an object: a Pod the API server
 * admitted always is; anything else is not a Pod we understand. */
static pf_err check_list(const cJSON *spec, const char *field, bool required,
                         const cJSON **out, char *msg)
{
    const cJSON *l = get(spec, field);
    *out = NULL;
    if (!l || cJSON_IsNull(l)) {
        if (required)
            return pf_fail(msg, PF_ERR_PROTOCOL, "Pod has no spec.%s", field);
        return PF_OK;
    }
    if (!cJSON_IsArray(l))
        return pf_fail(msg, PF_ERR_PROTOCOL, "Pod spec.%s is not a list", field);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, l) {
        if (!cJSON_IsObject(e))
            return pf_fail(msg, PF_ERR_PROTOCOL, "Pod spec.%s[%d] is not an object", field, i);
        i++;
    }
    *out = l;
    return PF_OK;
}

static bool has_named(const cJSON *list, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, list) {
        const char *n = get_str(e, "name");
        if (n && !strcmp(n, name))
            return true;
    }
    return false;
}

/* A gate already there: ours by name, or one written by hand that runs the
 * agent (docs/install/gate-a-job.md's patterns name theirs efa-preflight too, but a command
 * naming efa-preflight counts as well). An app container that is the agent
 * (the pre-flight DaemonSet's pods) counts too, and one holding a name we
 * would add: container names are unique across both lists, so adding ours
 * would make the Pod invalid. */
static bool gated_already(const cJSON *list)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, list) {
        const char *n = get_str(c, "name");
        if (n && (!strcmp(n, PF_GATE_CONTAINER) || !strcmp(n, PF_GATE_COPY_CONTAINER)))
            return true;
        const cJSON *cmd = get(c, "command");
        const cJSON *prog = cJSON_IsArray(cmd) ? cmd->child : NULL; /* not an argument */
        if (cJSON_IsString(prog) && strstr(prog->valuestring, "efa-preflight"))
            return true;
    }
    return false;
}

static bool opted_out(const cJSON *pod, const char *key)
{
    const cJSON *md = get(pod, "metadata");
    const char *a = get_str(get(md, "annotations"), key);
    const char *l = get_str(get(md, "labels"), key);
    return (a && !strcmp(a, "false")) || (l && !strcmp(l, "false"));
}

/* ---- building blocks of the patch --------------------------------------- */

/* cJSON's Add* calls on a NULL parent do nothing and return NULL, so the
 * helpers chain them without a check per call. */

static cJSON *env_field(const char *name, const char *path)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON *vf = cJSON_AddObjectToObject(e, "valueFrom");
    cJSON *fr = cJSON_AddObjectToObject(vf, "fieldRef");
    cJSON_AddStringToObject(fr, "fieldPath", path);
    return e;
}

static cJSON *env_value(const char *name, const char *value)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "value", value);
    return e;
}

static cJSON *mount(const char *name, const char *path, bool ro)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "mountPath", path);
    if (ro)
        cJSON_AddBoolToObject(m, "readOnly", true);
    return m;
}

/* The job's stack settings: NCCL_* and FI_* from the container under test,
 * so the gate loads what training will load. */
static bool stack_env(const char *name)
{
    return !strncmp(name, "NCCL_", 5) || !strncmp(name, "FI_", 3) ||
           !strcmp(name, "LD_LIBRARY_PATH");
}

static cJSON *gate_env(const cJSON *main_c, const struct pf_gate_opts *o)
{
    cJSON *env = cJSON_CreateArray();
    char num[32];
    cJSON_AddItemToArray(env, env_field("POD_NAME", "metadata.name"));
    cJSON_AddItemToArray(env, env_field("POD_NAMESPACE", "metadata.namespace"));
    cJSON_AddItemToArray(env, env_field("NODE_NAME", "spec.nodeName"));
    cJSON_AddItemToArray(env, env_field("POD_IP", "status.podIP"));
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_BOOTSTRAP", "k8s"));
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_MODE", "initcontainer"));
    snprintf(num, sizeof num, "%d", o->port);
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_PORT", num));
    snprintf(num, sizeof num, "%d", o->timeout_s);
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_TIMEOUT", num));
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_TAINT_ON_FAILURE",
                                        o->taint_on_failure ? "true" : "false"));
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_LABEL_PREFIX", o->prefix));
    snprintf(num, sizeof num, "%d", o->valid_hours);
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_VALID_HOURS", num));
    if (o->taint_budget && o->taint_budget[0]) /* the release's, not the default name */
        cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_TAINT_BUDGET", o->taint_budget));
    if (o->baseline_configmap && o->baseline_configmap[0])
        cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_BASELINE_CONFIGMAP",
                                            o->baseline_configmap));
    cJSON_AddItemToArray(env, env_value("EFA_PREFLIGHT_REPORT", GATE_DIR "/report.json"));
    bool huge_page_set = false;
    const cJSON *e;
    cJSON_ArrayForEach(e, get(main_c, "env")) {
        const char *n = get_str(e, "name");
        if (!n || !stack_env(n))
            continue;
        if (!strcmp(n, "FI_EFA_USE_HUGE_PAGE"))
            huge_page_set = true;
        cJSON_AddItemToArray(env, cJSON_Duplicate(e, true));
    }
    /* Huge pages make fork() in data loaders fail with ENOMEM (FACTS); the
     * gate forks nothing big, but follows the job when it says otherwise. */
    if (!huge_page_set)
        cJSON_AddItemToArray(env, env_value("FI_EFA_USE_HUGE_PAGE", "0"));
    return env;
}

/* The tested container's resources whole (cpu, memory, hugepages: a
 * ResourceQuota may require them of every container, and the Pod's
 * effective request, the larger of any init container and the app
 * containers' sum, does not grow), with its EFA and GPU counts in both
 * limits and requests (extended resources must be in limits). Its DRA
 * claims (resources.claims) come along: a Pod's containers share a claim's
 * devices. */
static cJSON *gate_resources(const cJSON *main_c, const cJSON *efa_q, const cJSON *gpu_q)
{
    const cJSON *given = get(main_c, "resources");
    cJSON *r = cJSON_IsObject(given) ? cJSON_Duplicate(given, true) : cJSON_CreateObject();
    const char *const sides[] = { "limits", "requests" };
    for (int i = 0; i < 2; i++) {
        cJSON *side = cJSON_GetObjectItemCaseSensitive(r, sides[i]);
        if (!cJSON_IsObject(side)) {
            cJSON_DeleteItemFromObjectCaseSensitive(r, sides[i]);
            side = cJSON_AddObjectToObject(r, sides[i]);
        }
        if (efa_q) {
            cJSON_DeleteItemFromObjectCaseSensitive(side, PF_GATE_EFA_RESOURCE);
            cJSON_AddItemToObject(side, PF_GATE_EFA_RESOURCE, cJSON_Duplicate(efa_q, false));
        }
        if (gpu_q) {
            cJSON_DeleteItemFromObjectCaseSensitive(side, GPU_RESOURCE);
            cJSON_AddItemToObject(side, GPU_RESOURCE, cJSON_Duplicate(gpu_q, false));
        }
    }
    return r;
}

/* The /dev/shm mount of the container under test, if it has one. */
static const cJSON *shm_mount_of(const cJSON *c)
{
    const cJSON *m;
    cJSON_ArrayForEach(m, get(c, "volumeMounts")) {
        const char *p = get_str(m, "mountPath");
        if (p && (!strcmp(p, "/dev/shm") || !strcmp(p, "/dev/shm/")) && get_str(m, "name"))
            return m;
    }
    return NULL;
}

static cJSON *gate_container(const cJSON *main_c, const cJSON *efa_q, const cJSON *gpu_q,
                             const struct pf_gate_opts *o)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", PF_GATE_CONTAINER);
    cJSON_AddStringToObject(c, "image", get_str(main_c, "image"));
    const char *pull = get_str(main_c, "imagePullPolicy");
    if (pull)
        cJSON_AddStringToObject(c, "imagePullPolicy", pull);
    cJSON *cmd = cJSON_AddArrayToObject(c, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString(GATE_DIR "/efa-preflight"));
    cJSON_AddItemToArray(cmd, cJSON_CreateString("run"));
    cJSON_AddItemToObject(c, "env", gate_env(main_c, o));
    cJSON_AddItemToObject(c, "resources", gate_resources(main_c, efa_q, gpu_q));
    /* The job's own securityContext: the gate runs with the privileges the
     * training will have (memlock, capabilities) and passes whatever Pod
     * Security level the Pod already passes. Without one, IPC_LOCK: EFA
     * registers (locks) memory. */
    const cJSON *main_sc = get(main_c, "securityContext");
    if (cJSON_IsObject(main_sc)) {
        cJSON_AddItemToObject(c, "securityContext", cJSON_Duplicate(main_sc, true));
    } else {
        cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
        cJSON *caps = cJSON_AddObjectToObject(sc, "capabilities");
        cJSON *add = cJSON_AddArrayToObject(caps, "add");
        cJSON_AddItemToArray(add, cJSON_CreateString("IPC_LOCK"));
    }
    cJSON *mounts = cJSON_AddArrayToObject(c, "volumeMounts");
    cJSON_AddItemToArray(mounts, mount(PF_GATE_VOLUME, GATE_DIR, false));
    cJSON_AddItemToArray(mounts, mount(PF_GATE_TOKEN_VOLUME, TOKEN_DIR, true));
    const cJSON *shm = shm_mount_of(main_c);
    cJSON_AddItemToArray(mounts, shm ? mount(get_str(shm, "name"), "/dev/shm", false)
                                     : mount(PF_GATE_SHM_VOLUME, "/dev/shm", false));
    return c;
}

static cJSON *copy_container(const struct pf_gate_opts *o)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", PF_GATE_COPY_CONTAINER);
    cJSON_AddStringToObject(c, "image", o->agent_image);
    cJSON *cmd = cJSON_AddArrayToObject(c, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString("cp"));
    cJSON_AddItemToArray(cmd, cJSON_CreateString("/usr/local/bin/efa-preflight"));
    cJSON_AddItemToArray(cmd, cJSON_CreateString(GATE_DIR "/efa-preflight"));
    cJSON *r = cJSON_AddObjectToObject(c, "resources");
    cJSON *req = cJSON_AddObjectToObject(r, "requests");
    cJSON_AddStringToObject(req, "cpu", "10m");
    cJSON_AddStringToObject(req, "memory", "16Mi");
    cJSON *lim = cJSON_AddObjectToObject(r, "limits"); /* quotas may ask for both */
    cJSON_AddStringToObject(lim, "cpu", "100m");
    cJSON_AddStringToObject(lim, "memory", "64Mi");
    /* A plain copy needs nothing: what the "restricted" Pod Security level
     * asks for, so the copy never makes a Pod fail admission. */
    cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
    cJSON_AddBoolToObject(sc, "runAsNonRoot", true);
    cJSON_AddNumberToObject(sc, "runAsUser", 65532);
    cJSON_AddBoolToObject(sc, "allowPrivilegeEscalation", false);
    cJSON_AddBoolToObject(sc, "readOnlyRootFilesystem", true);
    cJSON *caps = cJSON_AddObjectToObject(sc, "capabilities");
    cJSON *drop = cJSON_AddArrayToObject(caps, "drop");
    cJSON_AddItemToArray(drop, cJSON_CreateString("ALL"));
    cJSON *sp = cJSON_AddObjectToObject(sc, "seccompProfile");
    cJSON_AddStringToObject(sp, "type", "RuntimeDefault");
    cJSON *mounts = cJSON_AddArrayToObject(c, "volumeMounts");
    cJSON_AddItemToArray(mounts, mount(PF_GATE_VOLUME, GATE_DIR, false));
    return c;
}

static cJSON *volume_empty(const char *name, bool memory)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", name);
    cJSON *ed = cJSON_AddObjectToObject(v, "emptyDir");
    if (memory) { /* NCCL's shared-memory transport; a container's default is 64 MiB */
        cJSON_AddStringToObject(ed, "medium", "Memory");
        cJSON_AddStringToObject(ed, "sizeLimit", "1Gi");
    }
    return v;
}

/* The token, the cluster CA and the namespace at the kubelet's path, in
 * the gate alone. */
static cJSON *volume_token(void)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "name", PF_GATE_TOKEN_VOLUME);
    cJSON *pr = cJSON_AddObjectToObject(v, "projected");
    cJSON *src = cJSON_AddArrayToObject(pr, "sources");
    cJSON *s1 = cJSON_CreateObject(), *s2 = cJSON_CreateObject(), *s3 = cJSON_CreateObject();
    cJSON *t = cJSON_AddObjectToObject(s1, "serviceAccountToken");
    cJSON_AddStringToObject(t, "path", "token");
    cJSON_AddNumberToObject(t, "expirationSeconds", 3600);
    cJSON *cm = cJSON_AddObjectToObject(s2, "configMap");
    cJSON_AddStringToObject(cm, "name", "kube-root-ca.crt");
    cJSON *items = cJSON_AddArrayToObject(cm, "items");
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "key", "ca.crt");
    cJSON_AddStringToObject(it, "path", "ca.crt");
    cJSON_AddItemToArray(items, it);
    cJSON *dw = cJSON_AddObjectToObject(s3, "downwardAPI");
    cJSON *ditems = cJSON_AddArrayToObject(dw, "items");
    cJSON *di = cJSON_CreateObject();
    cJSON_AddStringToObject(di, "path", "namespace");
    cJSON *fr = cJSON_AddObjectToObject(di, "fieldRef");
    cJSON_AddStringToObject(fr, "fieldPath", "metadata.namespace");
    cJSON_AddItemToArray(ditems, di);
    cJSON_AddItemToArray(src, s1);
    cJSON_AddItemToArray(src, s2);
    cJSON_AddItemToArray(src, s3);
    return v;
}

static cJSON *toleration(const char *key)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "key", key);
    cJSON_AddStringToObject(t, "operator", "Exists");
    cJSON_AddStringToObject(t, "effect", "NoSchedule");
    return t;
}

/* Does the pod already tolerate a NoSchedule taint with this key? */
static bool tolerates(const cJSON *tols, const char *key)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tols) {
        const char *k = get_str(t, "key"), *op = get_str(t, "operator");
        const char *eff = get_str(t, "effect");
        bool key_ok = (k && !strcmp(k, key)) || ((!k || !*k) && op && !strcmp(op, "Exists"));
        if (key_ok && (!eff || !*eff || !strcmp(eff, "NoSchedule")))
            return true;
    }
    return false;
}

static void op_add(cJSON *patch, const char *path, cJSON *value)
{
    cJSON *op = cJSON_CreateObject();
    cJSON_AddStringToObject(op, "op", "add");
    cJSON_AddStringToObject(op, "path", path);
    cJSON_AddItemToObject(op, "value", value);
    cJSON_AddItemToArray(patch, op);
}

/* Append items to the list at path: one add of the whole list when the Pod
 * has none, else one add per item at "-". items is consumed. */
static void op_append(cJSON *patch, const char *path, bool exists, cJSON *items)
{
    if (!exists) {
        op_add(patch, path, items);
        return;
    }
    char p[128];
    snprintf(p, sizeof p, "%s/-", path);
    cJSON *it;
    while ((it = cJSON_DetachItemFromArray(items, 0)) != NULL)
        op_add(patch, p, it);
    cJSON_Delete(items);
}

/* RFC 6901: '~' is "~0" and '/' is "~1" inside a pointer's token. */
static void pointer_token(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 3 < cap; s++) {
        if (*s == '~' || *s == '/') {
            out[n++] = '~';
            out[n++] = *s == '~' ? '0' : '1';
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
}

/* ---- the decision and the patch ------------------------------------------ */

pf_err pf_gate_patch(const cJSON *pod, const struct pf_gate_opts *o,
                     enum pf_gate_decision *decision, cJSON **patch, char *msg)
{
    *patch = NULL;
    *decision = PF_GATE_NO_EFA;
    if (!cJSON_IsObject(pod))
        return pf_fail(msg, PF_ERR_PROTOCOL, "the object is not a Pod");
    const cJSON *spec = get(pod, "spec");
    if (!cJSON_IsObject(spec))
        return pf_fail(msg, PF_ERR_PROTOCOL, "Pod has no spec");
    const cJSON *containers, *inits, *volumes, *tols, *claims;
    pf_err e;
    if ((e = check_list(spec, "containers", true, &containers, msg)) ||
        (e = check_list(spec, "initContainers", false, &inits, msg)) ||
        (e = check_list(spec, "resourceClaims", false, &claims, msg)) ||
        (e = check_list(spec, "volumes", false, &volumes, msg)) ||
        (e = check_list(spec, "tolerations", false, &tols, msg)))
        return e;
    const cJSON *md = get(pod, "metadata");
    if (md && !cJSON_IsObject(md))
        return pf_fail(msg, PF_ERR_PROTOCOL, "Pod metadata is not an object");
    const cJSON *annotations = get(md, "annotations");
    if (annotations && !cJSON_IsNull(annotations) && !cJSON_IsObject(annotations))
        return pf_fail(msg, PF_ERR_PROTOCOL, "Pod metadata.annotations is not an object");

    /* The container under test: the one that asks for the most EFA
     * devices (the first of equals); init containers only when no app
     * container asks. */
    const cJSON *main_c = NULL, *efa_q = NULL, *c;
    double best = 0;
    for (int pass = 0; pass < 2 && !main_c; pass++) {
        const cJSON *list = pass == 0 ? containers : inits;
        cJSON_ArrayForEach(c, list) {
            const cJSON *q = resource_of(c, PF_GATE_EFA_RESOURCE);
            if (q && quantity_value(q) > best) {
                best = quantity_value(q);
                main_c = c;
                efa_q = q;
            }
        }
    }
    /* No EFA resource: the container taking the most device claims (DRA). */
    int best_claims = 0;
    for (int pass = 0; pass < 2 && !main_c && claims; pass++) {
        const cJSON *list = pass == 0 ? containers : inits;
        cJSON_ArrayForEach(c, list) {
            int n = device_claims_of(c, claims, o->dra_claims);
            if (n > best_claims) {
                best_claims = n;
                main_c = c;
            }
        }
    }
    if (!main_c)
        return PF_OK; /* PF_GATE_NO_EFA */

    char key[PF_NAME_MAX + 16]; /* the prefix is at most a label prefix */
    snprintf(key, sizeof key, "%sinject", o->prefix);
    if (opted_out(pod, key)) {
        *decision = PF_GATE_OPTED_OUT;
        return PF_OK;
    }
    if (gated_already(inits) || gated_already(containers)) {
        *decision = PF_GATE_ALREADY;
        return PF_OK;
    }
    const char *image = get_str(main_c, "image");
    if (!image || !*image)
        return pf_fail(msg, PF_ERR_PROTOCOL, "the container requesting %s has no image",
                       efa_q ? PF_GATE_EFA_RESOURCE : "the EFA/GPU claims");
    const char *clash[] = { PF_GATE_VOLUME, PF_GATE_TOKEN_VOLUME, PF_GATE_SHM_VOLUME };
    for (size_t i = 0; i < sizeof clash / sizeof clash[0]; i++)
        if (has_named(volumes, clash[i]))
            return pf_fail(msg, PF_ERR_PROTOCOL,
                           "the Pod already has a volume named %s (not ours)", clash[i]);

    const cJSON *gpu_q = resource_of(main_c, GPU_RESOURCE);
    cJSON *p = cJSON_CreateArray();
    /* Init containers run in order: the copy, the gate, then the job's own
     * (a data download is wasted on a node that fails). */
    if (!inits) {
        cJSON *l = cJSON_CreateArray();
        cJSON_AddItemToArray(l, copy_container(o));
        cJSON_AddItemToArray(l, gate_container(main_c, efa_q, gpu_q, o));
        op_add(p, "/spec/initContainers", l);
    } else {
        op_add(p, "/spec/initContainers/0", gate_container(main_c, efa_q, gpu_q, o));
        op_add(p, "/spec/initContainers/0", copy_container(o));
    }
    cJSON *vols = cJSON_CreateArray();
    cJSON_AddItemToArray(vols, volume_empty(PF_GATE_VOLUME, false));
    cJSON_AddItemToArray(vols, volume_token());
    if (!shm_mount_of(main_c))
        cJSON_AddItemToArray(vols, volume_empty(PF_GATE_SHM_VOLUME, true));
    op_append(p, "/spec/volumes", volumes != NULL, vols);

    cJSON *add_tols = cJSON_CreateArray();
    for (size_t i = 0; i < sizeof efa_taint_keys / sizeof efa_taint_keys[0]; i++)
        if (!tolerates(tols, efa_taint_keys[i]))
            cJSON_AddItemToArray(add_tols, toleration(efa_taint_keys[i]));
    if (gpu_q && !tolerates(tols, GPU_RESOURCE))
        cJSON_AddItemToArray(add_tols, toleration(GPU_RESOURCE));
    if (cJSON_GetArraySize(add_tols) > 0)
        op_append(p, "/spec/tolerations", tols != NULL, add_tols);
    else
        cJSON_Delete(add_tols);

    /* A marker for people and for `kubectl get -o`; the gate's presence is
     * what makes a second pass a no-op. */
    char mark[PF_NAME_MAX + 16];
    snprintf(mark, sizeof mark, "%sgate", o->prefix);
    if (!cJSON_IsObject(annotations)) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, mark, "injected");
        op_add(p, "/metadata/annotations", a);
    } else if (!get(annotations, mark)) {
        char tok[2 * sizeof mark], path[2 * sizeof mark + 32]; /* each char escapes to 2 */
        pointer_token(mark, tok, sizeof tok);
        snprintf(path, sizeof path, "/metadata/annotations/%s", tok);
        op_add(p, path, cJSON_CreateString("injected"));
    }
    if (!md) {
        /* "/metadata/annotations" needs a parent: give the whole object. */
        cJSON *last = cJSON_DetachItemFromArray(p, cJSON_GetArraySize(p) - 1);
        cJSON *val = cJSON_DetachItemFromObject(last, "value");
        cJSON_Delete(last);
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToObject(m, "annotations", val);
        op_add(p, "/metadata", m);
    }

    *patch = p;
    *decision = PF_GATE_INJECT;
    return PF_OK;
}
