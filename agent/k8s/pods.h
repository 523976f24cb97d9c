/* Pods as discovery and the coordinator need them: what one pod says
 * (pod.c, pure), a set of them, a Node's pool labels; and the reads
 * (pods.c): one pod, the own pod, the owner Job's size, and the wait for
 * the pods a label selector matches (list + watch). */
#ifndef PF_K8S_PODS_H
#define PF_K8S_PODS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../util/err.h"
#include "../util/sizes.h"
#include "session.h"

#define PF_K8S_COMPLETION_INDEX "batch.kubernetes.io/job-completion-index"
#define PF_K8S_JOBSET_INDEX "jobset.sigs.k8s.io/job-index"

/* What discovery needs of one pod. */
struct pf_k8s_pod {
    char name[PF_NAME_MAX];
    char node[PF_NAME_MAX];
    char ip[64];
    char phase[16];
    bool deleting;                    /* metadata.deletionTimestamp set */
    int job_index;                    /* JobSet job-index, -1 = none */
    int completion_index;             /* Indexed Job index, -1 = none */
};

struct pf_k8s_podset {
    int n, cap;
    struct pf_k8s_pod *items;
};

void pf_k8s_pod_parse(const cJSON *pod, struct pf_k8s_pod *out);
/* A pod counts as a peer when it has a podIP, is not being deleted and has
 * not finished. Pending counts: initContainers run while Pending. */
bool pf_k8s_pod_counts(const struct pf_k8s_pod *p);

pf_err pf_k8s_podset_put(struct pf_k8s_podset *s, const struct pf_k8s_pod *p,
                         char *err);
void pf_k8s_podset_remove(struct pf_k8s_podset *s, const char *name);
void pf_k8s_podset_free(struct pf_k8s_podset *s);

/* A Node's instance type and zone labels (GA, else beta), or NULL. */
const char *pf_k8s_node_type(const cJSON *node);
const char *pf_k8s_node_zone(const cJSON *node);

/* FNV-1a, for names and run ids every member derives alike. */
uint64_t pf_k8s_hash(const char *s, uint64_t h);

/* ---------------------------------------------------------------- reads */

/* GET pod ns/name; any non-2xx is an error naming the request (404
 * PF_ERR_NOTFOUND, ...). */
pf_err pf_k8s_pod_get(struct pf_kube *k, const char *ns, const char *name,
                      cJSON **out, char *err);
/* The own pod, or a usage error naming what identity is missing. */
pf_err pf_k8s_own_pod(struct pf_kube *k, const struct pf_kube_identity *id,
                      cJSON **own, char *err);
/* Pods per run of Job ns/job: its spec.completions, else parallelism, 0
 * when it has neither. A job that is no valid name is PF_ERR_API. */
pf_err pf_k8s_job_size(struct pf_kube *k, const char *ns, const char *job,
                       int *per_job, char *err);

/* The wait for the pods selector matches in ns: list (paged) + watch
 * (bookmarks) until done says so or the deadline passes (PF_ERR_TIMEOUT);
 * 410 on a continue token or a watch means list again. */
struct pf_k8s_pod_wait {
    const char *ns, *selector;
    /* The own pod's name and its podIP from the downward API ("" =
     * none), used until the API server shows one. */
    const char *own, *own_ip;
    /* One watch to the deadline (a follower watching one pod keeps its
     * request count constant) rather than 30 s streams. */
    bool one_stream;
    int64_t deadline;
    /* After every change of set: true when the caller has what it waits
     * for, or cannot have it (*rc an error, err saying why). */
    bool (*done)(void *ctx, const struct pf_k8s_podset *set, pf_err *rc,
                 char *err);
    /* About once a second while a watch is open, events or not. */
    void (*idle)(void *ctx, const struct pf_k8s_podset *set);
    void *ctx;
    /* The last complete view (a list cut short leaves the one before);
     * the caller frees it. */
    struct pf_k8s_podset set;
};
pf_err pf_k8s_pods_wait(struct pf_kube *k, struct pf_k8s_pod_wait *w,
                        char *err);

#endif
