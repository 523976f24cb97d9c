/* A ConfigMap used as a small shared record (the taint budget, the fleet
 * baseline), written with optimistic concurrency. The caller decides what
 * the record holds; a lost race is read again after pf_k8s_backoff_ms
 * (backoff.h). */
#ifndef PF_K8S_CONFIGMAP_H
#define PF_K8S_CONFIGMAP_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "../util/err.h"
#include "session.h"

/* Read: *out the object, or NULL when there is none (404). */
pf_err pf_k8s_configmap_read(struct pf_kube *k, const char *ns,
                             const char *name, cJSON **out, char *err);
/* Write data (taken) back: PUT with the resourceVersion read (rv), or POST
 * when there was none (rv NULL). *won false when another writer came
 * first (409, or 404 to a PUT: deleted meanwhile): read again and retry.
 * managed_by, when set, labels the object app.kubernetes.io/managed-by. */
pf_err pf_k8s_configmap_write(struct pf_kube *k, const char *ns,
                              const char *name, const char *rv, cJSON *data,
                              const char *managed_by, bool *won, char *err);
/* DELETE it: *deleted false when there was none (404). */
pf_err pf_k8s_configmap_delete(struct pf_kube *k, const char *ns,
                               const char *name, bool *deleted, char *err);

#endif
