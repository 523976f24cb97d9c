/* What an API object looks like, without the API: the syntax of names and
 * labels (FACTS.md) and the head of a new object. Pure, usable anywhere. */
#ifndef PF_K8S_OBJECT_H
#define PF_K8S_OBJECT_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/* Longest object name (a DNS-1123 subdomain), and a label key's prefix. */
#define PF_K8S_NAME_MAX 253

/* A DNS-1123 name (pod, node, namespace) safe to put in a path. */
bool pf_k8s_name_ok(const char *s);

/* Label syntax (FACTS.md): value <= 63 chars of [A-Za-z0-9-_.], starting
 * and ending alphanumeric, or empty; key = optional DNS-subdomain prefix +
 * "/" + name. */
bool pf_label_value_ok(const char *v);
bool pf_label_key_ok(const char *k);

/* A new API object with its head: apiVersion, kind, and metadata with
 * name, namespace and (unless rv is NULL) resourceVersion. */
cJSON *pf_k8s_object(const char *api_version, const char *kind,
                     const char *name, const char *ns, const char *rv);

#endif
