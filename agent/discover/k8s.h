/* The k8s bootstrap's pieces: selector and world size, rank assignment
 * (k8s_pods.c), the wait for the group (k8s.c) and the DaemonSet mode's
 * path through the coordinator (daemonset.c). The pods and their list +
 * watch are agent/k8s/'s (k8s/pods.h). Exposed for the unit tests. */
#ifndef PF_DISCOVER_K8S_H
#define PF_DISCOVER_K8S_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "../k8s/pods.h"
#include "../types/peers.h"

#define PF_K8S_JOBSET_NAME "jobset.sigs.k8s.io/jobset-name"
#define PF_K8S_JOBSET_RJOB "jobset.sigs.k8s.io/replicatedjob-name"
#define PF_K8S_JOBSET_REPLICAS "jobset.sigs.k8s.io/replicatedjob-replicas"
/* Gangs of other controllers (docs/install/gangs.md): a LeaderWorkerSet
 * group (leader and workers; its size annotated on every pod, its group
 * key shared by them), a Kubeflow PyTorchJob, a Volcano Job. */
#define PF_K8S_LWS_NAME "leaderworkerset.sigs.k8s.io/name"
#define PF_K8S_LWS_GROUP "leaderworkerset.sigs.k8s.io/group-index"
#define PF_K8S_LWS_GROUP_KEY "leaderworkerset.sigs.k8s.io/group-key"
#define PF_K8S_LWS_SIZE "leaderworkerset.sigs.k8s.io/size"
#define PF_K8S_PYTORCHJOB_NAME "training.kubeflow.org/job-name"
#define PF_K8S_VOLCANO_JOB "volcano.sh/job-name"

/* Rank hint: job_index x parallelism + completion_index, or the completion
 * index alone; -1 when the pod carries no index. */
int pf_k8s_pod_rank(const struct pf_k8s_pod *p, int parallelism);

/* --peer-selector if set, else the first of the labels (docs/internals/kubernetes.md) the own
 * pod carries (JobSet: jobset-name plus replicatedjob-name when present).
 * PF_ERR_USAGE when none is found. */
pf_err pf_k8s_selector(const cJSON *own_pod, const char *cfg_selector,
                       char *out, size_t len, char *err);

/* Pick world ranks from the set. Returns true when complete and fills
 * peers->list (world entries, calloc'd) and peers->rank (own pod's rank).
 * Otherwise describes what is missing in missing[] (pod names where known)
 * and returns false. A fatal inconsistency (own pod absent from a complete
 * set) is reported through *fatal. */
bool pf_k8s_assign(const struct pf_k8s_podset *s, int world, int parallelism,
                   const char *own_pod, const char *name_prefix, int port,
                   struct pf_peers *peers, char *missing, size_t mlen,
                   bool *fatal);

/* Only rank 0 lists and watches the group; any other rank asks for two
 * pods: its own and rank 0's. The selector that finds rank 0 alone is the
 * group's plus index 0 (completion index, and JobSet job index when the
 * JobSet has parallelism). False when the own pod carries its index only
 * as an annotation, which no selector can match: then every rank lists. */
bool pf_k8s_leader_selector(const cJSON *own_pod, const char *selector,
                            int parallelism, char *out, size_t len);
/* A non-leader's table from the pods its rank-0 selector found: world
 * entries, rank 0 (the live pod of rank 0 with a podIP, first by name) and
 * own filled, the others empty until rank 0's WELCOME brings them. True
 * when rank 0 has an address; else missing[] says what is missing. An own
 * rank outside the world is reported through *fatal. */
bool pf_k8s_assign_follower(const struct pf_k8s_podset *s, int world,
                            int parallelism, const struct pf_k8s_pod *own,
                            const char *name_prefix, int port,
                            struct pf_peers *peers, char *missing,
                            size_t mlen, bool *fatal);

/* DaemonSet mode (daemonset.c): the whole run's group, formed by the
 * pool's coordinator (coord/coord.h) once discovery has the client and the
 * own pod. */
struct pf_run;
pf_err pf_discover_daemonset(struct pf_run *run, struct pf_kube *k,
                             const struct pf_k8s_target *t,
                             const cJSON *own_pod, char *err);

#endif
