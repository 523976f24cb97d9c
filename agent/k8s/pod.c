/* Pods and Nodes as discovery and the coordinator read them: parse a pod,
 * keep a set of them, a Node's pool labels. Pure: no I/O. */
#include "pods.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/json.h"

static int parse_index(const cJSON *pod, const char *key)
{
    const char *v = NULL;
    const cJSON *labels = pf_json_at(pod, "metadata.labels");
    const cJSON *annos = pf_json_at(pod, "metadata.annotations");
    const cJSON *item;
    char *end;
    long n;

    /* The key holds dots, so look it up directly rather than by path. */
    item = labels ? cJSON_GetObjectItemCaseSensitive(labels, key) : NULL;
    if (!cJSON_IsString(item) && annos)
        item = cJSON_GetObjectItemCaseSensitive(annos, key);
    if (cJSON_IsString(item))
        v = item->valuestring;
    if (!v || !*v)
        return -1;
    n = strtol(v, &end, 10);
    if (*end || n < 0 || n >= 1000000)
        return -1;
    return (int)n;
}

void pf_k8s_pod_parse(const cJSON *pod, struct pf_k8s_pod *out)
{
    const char *s;

    memset(out, 0, sizeof(*out));
    s = pf_json_str(pod, "metadata.name");
    snprintf(out->name, sizeof(out->name), "%s", s ? s : "");
    s = pf_json_str(pod, "spec.nodeName");
    snprintf(out->node, sizeof(out->node), "%s", s ? s : "");
    s = pf_json_str(pod, "status.podIP");
    snprintf(out->ip, sizeof(out->ip), "%s", s ? s : "");
    s = pf_json_str(pod, "status.phase");
    snprintf(out->phase, sizeof(out->phase), "%s", s ? s : "Pending");
    out->deleting = pf_json_at(pod, "metadata.deletionTimestamp") != NULL &&
                    !cJSON_IsNull(pf_json_at(pod, "metadata.deletionTimestamp"));
    out->job_index = parse_index(pod, PF_K8S_JOBSET_INDEX);
    out->completion_index = parse_index(pod, PF_K8S_COMPLETION_INDEX);
}

bool pf_k8s_pod_counts(const struct pf_k8s_pod *p)
{
    return p->ip[0] && !p->deleting && strcmp(p->phase, "Failed") != 0 &&
           strcmp(p->phase, "Succeeded") != 0;
}

pf_err pf_k8s_podset_put(struct pf_k8s_podset *s, const struct pf_k8s_pod *p,
                         char *err)
{
    for (int i = 0; i < s->n; i++) {
        if (!strcmp(s->items[i].name, p->name)) {
            s->items[i] = *p;
            return PF_OK;
        }
    }
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        struct pf_k8s_pod *items;
        if (cap > 100000)
            return pf_fail(err, PF_ERR_API, "selector matches more than "
                           "100000 pods");
        items = realloc(s->items, (size_t)cap * sizeof(*items));
        if (!items)
            return pf_fail(err, PF_ERR_NOMEM, "out of memory");
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = *p;
    return PF_OK;
}

void pf_k8s_podset_remove(struct pf_k8s_podset *s, const char *name)
{
    for (int i = 0; i < s->n; i++) {
        if (!strcmp(s->items[i].name, name)) {
            s->items[i] = s->items[--s->n];
            return;
        }
    }
}

void pf_k8s_podset_free(struct pf_k8s_podset *s)
{
    free(s->items);
    memset(s, 0, sizeof(*s));
}

static const char *label_of(const cJSON *pod, const char *key)
{
    const cJSON *labels = pf_json_at(pod, "metadata.labels");
    const cJSON *v = labels ? cJSON_GetObjectItemCaseSensitive(labels, key)
                            : NULL;
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static const char *node_label(const cJSON *node, const char *ga,
                              const char *beta)
{
    const char *v = label_of(node, ga);
    return v ? v : label_of(node, beta);
}

const char *pf_k8s_node_type(const cJSON *node)
{
    return node_label(node, "node.kubernetes.io/instance-type",
                      "beta.kubernetes.io/instance-type");
}

const char *pf_k8s_node_zone(const cJSON *node)
{
    return node_label(node, "topology.kubernetes.io/zone",
                      "failure-domain.beta.kubernetes.io/zone");
}

uint64_t pf_k8s_hash(const char *s, uint64_t h)
{
    if (!h)
        h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}
