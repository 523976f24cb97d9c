/* Nodes as the publishers (publish/, monitor/) use them: read one, patch
 * what we own on it, post an Event about it, walk every Node or every pod
 * on one. What to write is the caller's; how it travels is here. */
#ifndef PF_K8S_NODES_H
#define PF_K8S_NODES_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "../util/err.h"
#include "session.h"

/* Which part of the Node a patch writes: metadata and spec (labels,
 * taints: a JSON merge patch on the Node) or status (conditions: a
 * strategic merge patch on nodes/status). */
enum pf_k8s_node_part { PF_K8S_NODE_META, PF_K8S_NODE_STATUS };

/* GET the Node; any non-2xx is an error naming the request (403
 * PF_ERR_FORBIDDEN, 404 PF_ERR_NOTFOUND, ...). */
pf_err pf_k8s_node_get(struct pf_kube *k, const char *node, cJSON **out,
                       char *err);
/* PATCH patch (its texts sanitized first: they quote peers and the API
 * server) onto part of the Node. *status is the HTTP status. A 409 is
 * PF_OK with *status 409 and err saying so: the caller reads the Node
 * again and rebuilds, or gives up (PF_ERR_API). Another non-2xx is an
 * error as pf_k8s_node_get's. */
pf_err pf_k8s_node_patch(struct pf_kube *k, const char *node,
                         enum pf_k8s_node_part part, cJSON *patch,
                         long *status, char *err);
/* POST a core/v1 Event (namespace default), sanitized first. *status as
 * above: a 409 (an Event of that name exists) is PF_OK. */
pf_err pf_k8s_event_post(struct pf_kube *k, cJSON *ev, long *status,
                         char *err);

/* Every Node, 500 a page: fn for each; an error from fn ends the walk
 * and is returned, as is a failed page (err names the request). */
typedef pf_err (*pf_k8s_node_fn)(void *ctx, const cJSON *node, char *err);
pf_err pf_k8s_nodes_each(struct pf_kube *k, pf_k8s_node_fn fn, void *ctx,
                         char *err);
/* Every pod on node (all namespaces), 500 a page: fn for each until it
 * returns false. */
typedef bool (*pf_k8s_pod_fn)(void *ctx, const cJSON *pod);
pf_err pf_k8s_node_pods_each(struct pf_kube *k, const char *node,
                             pf_k8s_pod_fn fn, void *ctx, char *err);

#endif
