/* What the discover stage produces (discover/discover.h): the peer table,
 * every rank and where the rendezvous reaches it, released by
 * pf_peers_free. And what the transport makes of it once the group is
 * connected: the roster, every rank named. */
#ifndef PF_TYPES_PEERS_H
#define PF_TYPES_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "../reasons.h"
#include "../util/sizes.h"

/* How the peers are found: the bootstrap option's choices, in order
 * ("auto|local|static|mpi|k8s"); the config stage resolves auto, discover
 * keeps the one it used in pf_peers.bootstrap. */
enum pf_bootstrap { PF_BOOT_AUTO, PF_BOOT_LOCAL, PF_BOOT_STATIC, PF_BOOT_MPI,
                    PF_BOOT_K8S };

struct pf_peer {
    int rank;
    char host[PF_NAME_MAX];           /* address the rendezvous reaches */
    int port;
    char pod[PF_NAME_MAX];            /* k8s only */
    char node[PF_NAME_MAX];           /* k8s / hello facts */
};

struct pf_peers {
    enum pf_bootstrap bootstrap;      /* the one discover used */
    char run_id[PF_NAME_MAX];
    int world;                        /* number of ranks (processes) */
    int rank;                         /* own rank */
    struct pf_peer *list;             /* world entries, rank order */
    char owner[PF_NAME_MAX];          /* k8s: "Kind/uid" every member shares
                                         (keys the rendezvous HMAC), or "" */
    int64_t deadline_ms;              /* the run deadline (util/clock.h) */
    struct pf_fault fault;            /* why the peers could not be found */
    /* DaemonSet: no group though the pool has partners; the node keeps
     * status=pending and the agent exits to be started again. */
    bool stay_pending;
};

/* Who every rank turned out to be once the group connected: discovery's
 * table with the names only the rendezvous' WELCOME told (a k8s rank other
 * than 0 discovers just rank 0 and itself). The collective makes it from
 * the peers (pf_roster_from_peers), the transport fills its blanks, and the
 * engines, the verdict and the report read it; pf_coll_free releases it.
 * Discovery's own table stays as discovery left it. */
struct pf_roster {
    enum pf_bootstrap bootstrap;      /* decides what a node is */
    int world;
    struct pf_peer *list;             /* world entries, rank order, heap */
};

#endif
