/* A ConfigMap as a shared record: read, optimistic write, delete. */
#include "configmap.h"

#include <stdio.h>

#include "client.h"

static void configmap_path(const char *ns, const char *name, char *out,
                           size_t len)
{
    if (name)
        snprintf(out, len, "/api/v1/namespaces/%s/configmaps/%s", ns, name);
    else
        snprintf(out, len, "/api/v1/namespaces/%s/configmaps", ns);
}

pf_err pf_k8s_configmap_read(struct pf_kube *k, const char *ns,
                              const char *name, cJSON **out, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    pf_err rc;

    *out = NULL;
    configmap_path(ns, name, path, sizeof(path));
    if ((rc = pf_kube_do(k, "GET", path, NULL, NULL, &r, err)) != PF_OK)
        return rc;
    if (r.status == 404) {
        pf_kube_resp_free(&r);
        return PF_OK;
    }
    if (r.status != 200 || !r.json) {
        rc = pf_kube_status_err(&r, "GET", path, err);
        pf_kube_resp_free(&r);
        return rc;
    }
    *out = r.json;
    r.json = NULL;
    pf_kube_resp_free(&r);
    return PF_OK;
}

pf_err pf_k8s_configmap_write(struct pf_kube *k, const char *ns,
                               const char *name, const char *rv, cJSON *data,
                               const char *managed_by, bool *won, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    cJSON *o = pf_k8s_object("v1", "ConfigMap", name, ns, rv);
    const char *method = rv ? "PUT" : "POST";
    char *body = NULL;
    pf_err rc;

    *won = false;
    if (o) {
        if (managed_by) {
            cJSON *labels = cJSON_AddObjectToObject(
                cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
            if (labels)
                cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by",
                                        managed_by);
        }
        cJSON_AddItemToObject(o, "data", data);
        body = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    } else {
        cJSON_Delete(data);
    }
    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    configmap_path(ns, rv ? name : NULL, path, sizeof(path));
    rc = pf_kube_do(k, method, path, "application/json", body, &r, err);
    cJSON_free(body);
    if (rc != PF_OK)
        return rc;
    if (r.status == 409 || (rv && r.status == 404)) {
        pf_kube_resp_free(&r);
        return PF_OK;
    }
    if (r.status < 200 || r.status > 299) {
        rc = pf_kube_status_err(&r, method, path, err);
        pf_kube_resp_free(&r);
        return rc;
    }
    pf_kube_resp_free(&r);
    *won = true;
    return PF_OK;
}

pf_err pf_k8s_configmap_delete(struct pf_kube *k, const char *ns,
                               const char *name, bool *deleted, char *err)
{
    char path[PF_PATH_MAX];
    struct pf_kube_resp r;
    pf_err rc;

    *deleted = false;
    configmap_path(ns, name, path, sizeof(path));
    rc = pf_kube_do(k, "DELETE", path, NULL, NULL, &r, err);
    if (rc != PF_OK)
        return rc;
    if (r.status == 404) {
        pf_kube_resp_free(&r);
        return PF_OK;
    }
    if (r.status < 200 || r.status > 299) {
        rc = pf_kube_status_err(&r, "DELETE", path, err);
        pf_kube_resp_free(&r);
        return rc;
    }
    pf_kube_resp_free(&r);
    *deleted = true;
    return PF_OK;
}
