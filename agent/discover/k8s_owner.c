/* The group's owner, from the own pod alone: its labels (JobSet and Job
 * controllers stamp their uid on every pod) or its ownerReferences. The
 * rendezvous keys its HMAC with it when no secret file is given (docs/internals/hardening.md,
 * "Rendezvous security"). */
#include "k8s_owner.h"

#include <stdio.h>
#include <string.h>

#include "../util/json.h"
#include "k8s.h"

#define JOBSET_UID "jobset.sigs.k8s.io/jobset-uid"

static const char *label(const cJSON *pod, const char *key)
{
    const cJSON *labels = pf_json_at(pod, "metadata.labels");
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key)
                            : NULL;

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A uid as the API server writes them: letters, digits and dashes. */
static bool uid_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > 64)
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-") == n;
}

/* The uid of the controller ownerReference of this kind, or NULL. */
static const char *owner_uid(const cJSON *pod, const char *kind)
{
    const cJSON *refs = pf_json_at(pod, "metadata.ownerReferences");
    const cJSON *ref;

    cJSON_ArrayForEach(ref, refs) {
        const char *k = pf_json_str(ref, "kind");
        const cJSON *ctl = cJSON_GetObjectItemCaseSensitive(ref, "controller");
        if (k && !strcmp(k, kind) && cJSON_IsTrue(ctl))
            return pf_json_str(ref, "uid");
    }
    return NULL;
}

void pf_k8s_group_owner(const cJSON *own_pod, bool daemonset,
                        bool custom_selector, char *out, size_t cap)
{
    const char *kind = NULL, *uid = NULL;

    out[0] = '\0';
    if (daemonset) {
        kind = "DaemonSet";
        uid = owner_uid(own_pod, kind);
    } else if (custom_selector) {
        return;
    } else if (label(own_pod, PF_K8S_JOBSET_NAME)) {
        /* The child Jobs differ: only the JobSet's own uid is shared. */
        kind = "JobSet";
        uid = label(own_pod, JOBSET_UID);
    } else if (label(own_pod, PF_K8S_LWS_NAME)) {
        /* Leader and workers belong to different StatefulSets: the group
         * key is what they share, and no other group has. */
        kind = "LeaderWorkerSet";
        uid = label(own_pod, PF_K8S_LWS_GROUP_KEY);
    } else if (label(own_pod, PF_K8S_PYTORCHJOB_NAME)) {
        kind = "PyTorchJob";
        uid = owner_uid(own_pod, kind);
    } else {
        kind = "Job";
        uid = label(own_pod, "batch.kubernetes.io/controller-uid");
        if (!uid)
            uid = label(own_pod, "controller-uid");
        if (!uid)
            uid = owner_uid(own_pod, kind);   /* a Volcano Job's kind is Job too */
    }
    if (uid_ok(uid))
        snprintf(out, cap, "%s/%s", kind, uid);
}
