/* gate: the RFC 6902 JSON Patch that puts the efa-preflight gate into a
 * Pod that requests EFA: the vpc.amazonaws.com/efa resource of a device
 * plugin, or a DRA claim of the configured names (dra_claims).
 *
 * Two initContainers go first: a copy of the agent binary from its own small
 * image into an emptyDir, then the gate itself, run in the image of the
 * container that requests the most EFA devices (so the NCCL, aws-ofi-nccl and
 * libfabric under test are the job's), with that container's resources,
 * GPU and EFA counts included (an init container gets devices only if it asks), its NCCL_* / FI_*
 * environment, its /dev/shm mount, the downward-API identity the agent reads,
 * and the service account token projected into the gate alone. The job keeps
 * its own service account (IRSA / Pod Identity). */
#ifndef PF_WEBHOOK_GATE_H
#define PF_WEBHOOK_GATE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "../util/err.h"

struct pf_gate_opts {
    const char *agent_image;   /* image whose /usr/local/bin/efa-preflight is copied */
    const char *prefix;        /* "efa-preflight.io/": opt-out key <prefix>inject,
                                  marker annotation <prefix>gate */
    int timeout_s;             /* the gate's EFA_PREFLIGHT_TIMEOUT */
    int port;                  /* its EFA_PREFLIGHT_PORT */
    bool taint_on_failure;     /* its EFA_PREFLIGHT_TAINT_ON_FAILURE */
    int valid_hours;           /* its EFA_PREFLIGHT_VALID_HOURS */
    const char *taint_budget;  /* its EFA_PREFLIGHT_TAINT_BUDGET ("ns/name"; NULL or
                                  "" = the agent's default) */
    const char *baseline_configmap; /* its EFA_PREFLIGHT_BASELINE_CONFIGMAP
                                  (the same) */
    const char *dra_claims;    /* comma-separated shell patterns: a Pod whose
                                  spec.resourceClaims[] names a matching
                                  ResourceClaimTemplate or ResourceClaim, taken by
                                  a container, is gated too (DRA); NULL or "" = none */
};

enum pf_gate_decision {
    PF_GATE_INJECT,            /* *patch holds the operations */
    PF_GATE_NO_EFA,            /* no container requests vpc.amazonaws.com/efa or
                                  takes a configured DRA claim */
    PF_GATE_ALREADY,           /* a gate is there (ours or written by hand) */
    PF_GATE_OPTED_OUT,         /* <prefix>inject: "false" on the Pod */
};

/* Names of the things the gate adds (tests and docs use them too). */
#define PF_GATE_CONTAINER "efa-preflight"
#define PF_GATE_COPY_CONTAINER "efa-preflight-copy"
#define PF_GATE_VOLUME "efa-preflight"
#define PF_GATE_TOKEN_VOLUME "efa-preflight-token"
#define PF_GATE_SHM_VOLUME "efa-preflight-shm"
#define PF_GATE_EFA_RESOURCE "vpc.amazonaws.com/efa"

/* Decide for pod (a Pod object) and, for PF_GATE_INJECT, build the patch
 * (a cJSON array the caller deletes). A Pod whose shape is wrong (spec or
 * containers missing, a container that is not an object) is an error,
 * PF_ERR_PROTOCOL, with *patch NULL. */
pf_err pf_gate_patch(const cJSON *pod, const struct pf_gate_opts *o,
                     enum pf_gate_decision *decision, cJSON **patch, char *msg);

/* "inject", "no-efa", "already-gated", "opted-out": for logs and metrics. */
const char *pf_gate_decision_name(enum pf_gate_decision d);

#endif
