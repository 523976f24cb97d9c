/* Node reads and writes, Events, and paged walks over Nodes and pods. */
#include "nodes.h"

#include <stdio.h>
#include <stdlib.h>

#include "../util/json.h"
#include "../util/sanitize.h"
#include "client.h"

#define LOOP_MAX 100000

pf_err pf_k8s_node_get(struct pf_kube *k, const char *node, cJSON **out,
                       char *err)
{
    char path[PF_PATH_MAX];

    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    return pf_kube_get(k, path, out, err);
}

/* Send obj (sanitized) and report the status: 409 is no error here. */
static pf_err send(struct pf_kube *k, const char *method, const char *path,
                   const char *ctype, cJSON *obj, long *status, char *err)
{
    struct pf_kube_resp r;
    char *body;
    pf_err rc;

    *status = 0;
    pf_sanitize_json(obj);
    body = obj ? cJSON_PrintUnformatted(obj) : NULL;
    if (!body)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    rc = pf_kube_do(k, method, path, ctype, body, &r, err);
    free(body);
    if (rc != PF_OK)
        return rc;
    *status = r.status;
    if (r.status == 409)
        pf_kube_status_err(&r, method, path, err);
    else if (r.status < 200 || r.status > 299)
        rc = pf_kube_status_err(&r, method, path, err);
    pf_kube_resp_free(&r);
    return rc;
}

pf_err pf_k8s_node_patch(struct pf_kube *k, const char *node,
                         enum pf_k8s_node_part part, cJSON *patch,
                         long *status, char *err)
{
    char path[PF_PATH_MAX];

    if (part == PF_K8S_NODE_STATUS) {
        snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", node);
        return send(k, "PATCH", path, "application/strategic-merge-patch+json",
                    patch, status, err);
    }
    snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
    return send(k, "PATCH", path, "application/merge-patch+json", patch,
                status, err);
}

pf_err pf_k8s_event_post(struct pf_kube *k, cJSON *ev, long *status,
                         char *err)
{
    return send(k, "POST", "/api/v1/namespaces/default/events",
                "application/json", ev, status, err);
}

pf_err pf_k8s_nodes_each(struct pf_kube *k, pf_k8s_node_fn fn, void *ctx,
                         char *err)
{
    char path[PF_PATH_MAX * 2], token[PF_PATH_MAX] = "";
    pf_err rc = PF_OK;

    for (int page = 0; page < LOOP_MAX; page++) {
        cJSON *list = NULL;
        const cJSON *it;
        const char *next;

        if (token[0])
            snprintf(path, sizeof(path), "/api/v1/nodes?limit=500&continue=%s",
                     token);
        else
            snprintf(path, sizeof(path), "/api/v1/nodes?limit=500");
        rc = pf_kube_get(k, path, &list, err);
        if (rc != PF_OK)
            break;
        cJSON_ArrayForEach(it, pf_json_at(list, "items")) {
            rc = fn(ctx, it, err);
            if (rc != PF_OK)
                break;
        }
        next = pf_json_str(list, "metadata.continue");
        /* Tokens are opaque base64: escape them for the query. */
        if (rc == PF_OK && next && *next)
            rc = pf_kube_query_escape(next, token, sizeof(token), err);
        else
            token[0] = '\0';
        cJSON_Delete(list);
        if (rc != PF_OK || !token[0])
            break;
    }
    return rc;
}

pf_err pf_k8s_node_pods_each(struct pf_kube *k, const char *node,
                             pf_k8s_pod_fn fn, void *ctx, char *err)
{
    char sel[PF_NAME_MAX * 3], path[PF_PATH_MAX * 2], cont[1024] = "";
    char field[PF_NAME_MAX + 32];

    snprintf(field, sizeof(field), "spec.nodeName=%s", node);
    if (pf_kube_query_escape(field, sel, sizeof(sel), err) != PF_OK)
        return PF_ERR_USAGE;
    for (int page = 0; page < 10000; page++) {
        cJSON *list = NULL;
        const cJSON *items, *p;
        const char *next;
        char esc[1024] = "";
        bool more = true;
        pf_err rc;

        if (cont[0] &&
            pf_kube_query_escape(cont, esc, sizeof(esc), err) != PF_OK)
            return PF_ERR_API;
        snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=%s"
                 "&limit=500%s%s", sel, esc[0] ? "&continue=" : "", esc);
        rc = pf_kube_get(k, path, &list, err);
        if (rc != PF_OK)
            return rc;
        items = cJSON_GetObjectItemCaseSensitive(list, "items");
        cJSON_ArrayForEach(p, items) {
            if (!fn(ctx, p)) {
                more = false;
                break;
            }
        }
        next = pf_json_str(list, "metadata.continue");
        snprintf(cont, sizeof(cont), "%s", next ? next : "");
        cJSON_Delete(list);
        if (!more || !cont[0])
            return PF_OK;
    }
    return pf_fail(err, PF_ERR_API, "pod list of node %s never ended", node);
}
