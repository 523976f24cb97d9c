/* review: the AdmissionReview request, checked field by field. */
#include "review.h"

#include <stdio.h>
#include <string.h>

/* request.uid is a UID (36 characters); anything we echo back is kept to
 * printable ASCII so the answer is always valid JSON text. */
static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

static const char *str_field(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

pf_err pf_review_parse(const char *body, size_t len, struct pf_review *r, char *msg)
{
    memset(r, 0, sizeof *r);
    r->not_pod = "not parsed";
    if (!body || len == 0)
        return pf_fail(msg, PF_ERR_PROTOCOL, "empty body");
    const char *end = NULL;
    r->doc = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!r->doc) {
        size_t at = end && end >= body ? (size_t)(end - body) : 0;
        return pf_fail(msg, PF_ERR_PROTOCOL, "not JSON (error near byte %zu)", at);
    }
    if (!cJSON_IsObject(r->doc))
        return pf_fail(msg, PF_ERR_PROTOCOL, "not a JSON object");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(r->doc, "request");
    if (cJSON_IsObject(req)) {
        const char *uid = str_field(req, "uid");
        if (uid && strlen(uid) < sizeof r->uid && printable(uid))
            snprintf(r->uid, sizeof r->uid, "%s", uid);
    }
    const char *api = str_field(r->doc, "apiVersion");
    const char *kind = str_field(r->doc, "kind");
    if (!api || strcmp(api, "admission.k8s.io/v1") != 0)
        return pf_fail(msg, PF_ERR_PROTOCOL, "apiVersion is not admission.k8s.io/v1");
    if (!kind || strcmp(kind, "AdmissionReview") != 0)
        return pf_fail(msg, PF_ERR_PROTOCOL, "kind is not AdmissionReview");
    if (!cJSON_IsObject(req))
        return pf_fail(msg, PF_ERR_PROTOCOL, "no request object");
    if (!r->uid[0])
        return pf_fail(msg, PF_ERR_PROTOCOL, "request.uid missing or not a short printable string");
    const char *ns = str_field(req, "namespace");
    if (ns) {
        if (strlen(ns) >= sizeof r->ns || !printable(ns))
            return pf_fail(msg, PF_ERR_PROTOCOL, "request.namespace is not a namespace name");
        snprintf(r->ns, sizeof r->ns, "%s", ns);
    }

    /* Only a Pod CREATE is ours; anything else is answered "allowed" as is
     * (the configuration should not send it, but a wider one may). */
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(req, "kind");
    const char *group = str_field(k, "group"), *kk = str_field(k, "kind");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(req, "resource");
    const char *resource = str_field(res, "resource");
    const char *op = str_field(req, "operation");
    const char *sub = str_field(req, "subResource");
    if (!kk || strcmp(kk, "Pod") != 0 || (group && group[0]))
        r->not_pod = "not a Pod";
    else if (resource && strcmp(resource, "pods") != 0)
        r->not_pod = "not the pods resource";
    else if (sub && sub[0])
        r->not_pod = "a subresource of a Pod";
    else if (!op || strcmp(op, "CREATE") != 0)
        r->not_pod = "not a CREATE";
    else {
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(req, "object");
        if (!cJSON_IsObject(obj))
            return pf_fail(msg, PF_ERR_PROTOCOL, "Pod CREATE without request.object");
        r->pod = obj;
        r->pod_create = true;
        r->not_pod = NULL;
    }
    return PF_OK;
}

void pf_review_free(struct pf_review *r)
{
    cJSON_Delete(r->doc);
    r->doc = NULL;
    r->pod = NULL;
}
