/* The DaemonSet coordinator: one agent per (instance type, zone), the one
 * holding that pool's Lease (k8s/lease.h), forms the validation groups; every
 * other pending node's agent registers with it over TCP and waits for its
 * group. Frames are the rendezvous' (net/wire.h) with their own
 * magic, on port --port + 1:
 *
 *   coordinator -> agent   CHALLENGE {magic, version, nonce0}
 *   agent -> coordinator   REGISTER {magic, version, node, pod, wait ms,
 *                          nonce1, seal with nonce0 (net/seal.h)}
 *   coordinator -> agent   WAIT {agents waiting} every second (liveness)
 *                          ASSIGN {run id, world, rank, world x {address,
 *                          pod, node}, seal with nonce1}
 *                          or REJECT {reason, message}
 *
 * The coordinator admits a REGISTER only from the address of the agent pod
 * the API server shows on that node, for a node that is pending in its
 * pool: membership is what Kubernetes says, the secret (when mounted) proves
 * the sender runs with it. A group is formed only of agents connected at
 * that moment, so every member of a group is there to join it. */
#ifndef PF_COORD_H
#define PF_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../net/seal.h"
#include "../net/wire.h"
#include "../k8s/lease.h"
#include "../k8s/pool.h"
#include "../types/config.h"

#define PF_CO_MAGIC 0x5046434fu       /* "PFCO" */
#define PF_CO_VERSION 2           /* 2: the seal signs its flag (net/seal.h) */
#define PF_CO_NONCE PF_SEAL_NONCE
#define PF_CO_MAC PF_SEAL_MAC

enum pf_co_type {
    PF_CO_CHALLENGE = 1,
    PF_CO_REGISTER,
    PF_CO_WAIT,
    PF_CO_ASSIGN,
    PF_CO_REJECT,
};

struct pf_co_register {
    char node[PF_NAME_MAX];
    char pod[PF_NAME_MAX];
    uint32_t wait_ms;                 /* how long the agent still waits */
    uint8_t nonce[PF_CO_NONCE];
};

struct pf_co_entry {
    char host[64];
    char pod[PF_NAME_MAX];
    char node[PF_NAME_MAX];
};

/* One group as the coordinator assigns it; e has world entries (malloc). */
struct pf_co_assign {
    char run_id[PF_NAME_MAX];
    int world, rank;
    struct pf_co_entry *e;
};

void pf_co_assign_free(struct pf_co_assign *a);

/* Codec (coord_wire.c). Decoders: PF_ERR_PROTOCOL for a malformed frame,
 * PF_ERR_REJECTED for a wrong version or a MAC that does not verify. */
pf_err pf_co_register_encode(const struct pf_co_register *r,
                             const uint8_t *secret, size_t secret_len,
                             const uint8_t challenge[PF_CO_NONCE],
                             struct pf_wbuf *w, char *err);
pf_err pf_co_register_decode(const uint8_t *body, size_t len,
                             const uint8_t *secret, size_t secret_len,
                             const uint8_t challenge[PF_CO_NONCE],
                             struct pf_co_register *r, char *err);
pf_err pf_co_assign_encode(const struct pf_co_assign *a, const uint8_t *secret,
                           size_t secret_len, const uint8_t nonce[PF_CO_NONCE],
                           uint8_t **out, size_t *len, char *err);
pf_err pf_co_assign_decode(const uint8_t *body, size_t len,
                           const uint8_t *secret, size_t secret_len,
                           const uint8_t nonce[PF_CO_NONCE],
                           struct pf_co_assign *a, char *err);

/* What the agent knows of itself and its pool (discover/daemonset.c
 * fills it). */
struct pf_co_pool {
    struct pf_k8s_pool pool;          /* the client, own Node, the pool */
    const struct pf_config *cfg;
    char pod[PF_NAME_MAX];
    char pod_ip[64];                  /* own address, "" = unknown */
    int port;                         /* registration port */
    const uint8_t *secret;
    size_t secret_len;
    int64_t gather_ms;                /* longest wait for stragglers */
    struct pf_progress *progress;     /* lines while the group forms */
};

/* Coordinate while holding l: take registrations until the pool's group
 * can be cut, send every other member its ASSIGN, release the Lease and
 * return our own group (*done = true). *done = false: the Lease was lost
 * (the caller asks it again); members already connected re-register with
 * the next coordinator. */
pf_err pf_co_coordinate(struct pf_co_pool *p, struct pf_lease *l,
                        int64_t wait_until, struct pf_co_assign *out,
                        bool *done, char *err);

/* Register with the coordinator at host:port and wait for our group until
 * wait_until. *done = false: the coordinator is unreachable or went away
 * (ask the Lease again). PF_ERR_REJECTED: it refused us (err says why). */
pf_err pf_co_join(struct pf_co_pool *p, const char *host, int64_t wait_until,
                  struct pf_co_assign *out, bool *done, char *err);

#endif
