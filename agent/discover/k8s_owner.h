/* The object that owns a whole k8s group, read from the own pod. */
#ifndef PF_DISCOVER_K8S_OWNER_H
#define PF_DISCOVER_K8S_OWNER_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* "<Kind>/<uid>" of the object every member of this pod's group shares
 * (JobSet, Job, or the DaemonSet in daemonset mode) into out, or "" when
 * there is no such single owner: a custom --peer-selector outside
 * daemonset mode (the group may span owners), a JobSet pod without its
 * uid label, a bare pod. */
void pf_k8s_group_owner(const cJSON *own_pod, bool daemonset,
                        bool custom_selector, char *out, size_t cap);

#endif
