/* rendezvous: the TCP star around rank 0 that implements pf_boot.
 *
 * Rank 0 listens; every other rank connects (retrying with backoff until the
 * deadline, since rank 0 may start later) and the two talk:
 *
 *   rank 0 -> peer   CHALLENGE {magic, version, nonce0}
 *   peer -> rank 0   HELLO {magic, version, rank, world, run id, hostname,
 *                    instance type, efa count, gpu count, nonce1,
 *                    [HMAC-SHA256(secret, hello bytes || nonce0)]}
 *   rank 0 -> peer   WELCOME {peer table, [HMAC(secret, table || nonce1)]}
 *                    or REJECT {reason, message}
 *
 * The nonces make every HMAC fresh, so a captured HELLO cannot be replayed
 * into a later run, and the peer learns that rank 0 holds the secret too.
 * With a secret the MAC is the HELLO's last 32 bytes and is checked before
 * anything the HELLO claims, version included. A HELLO that fails a check
 * is answered with REJECT and its connection closed; the rendezvous goes
 * on, so a stranger can neither join nor stop the run (a member that
 * never gets in shows up as PeerTimeout, with the rejections counted).
 * Rank 0 sends BUSY {} to a connection it drops to make room for another
 * before that connection's HELLO was read (a flood of strangers holding
 * its slots): a member dials again, so a stranger can only slow the join.
 * Rank 0 replies only when every rank has joined, so the WELCOME doubles as
 * the first barrier. Afterwards DATA frames carry allgather / bcast /
 * barrier through rank 0, ABORT spreads a failure to every rank and BYE
 * marks an orderly close, so only a connection that drops without one counts
 * as PeerLost. PING/PONG find a member that stopped answering while its
 * connection stays open (SIGSTOP, a hung process): a rank about to give up
 * sends PING {n} to rank 0, which pings every member and names the ones
 * that do not PONG within PF_RDV_CENSUS_MS, or answers PONG {0} when all
 * did.
 *
 * Heartbeat (rdv_beat.c): once joined, a thread of every rank sends BEAT
 * {u32 stalled ms} every PF_RDV_BEAT_MS on each control connection (rank 0
 * to every member, the others to rank 0), whatever the engine is doing. A
 * process that stops (SIGSTOP, a frozen host) stops beating, and a rank
 * whose engine is stuck inside one driver or fabric call beats with a
 * growing stall (the time since its engine last asked pf_boot_poll while
 * waiting). Whoever waits on the group (every pf_boot call) names a peer
 * from whom nothing arrived for PF_RDV_SILENT_MS, or whose stall reached
 * it, as PeerLost (rdv_census.c, beside the PING/PONG census), and rank 0 spreads that to every rank: a hung member is
 * named within seconds, whatever the run's deadline.
 *
 * Gone before joining: a rank stopped (SIGTERM) before it ever dialled
 * leaves no connection to drop. Where discovery can see such a stop (k8s:
 * the stopped agent marks its Node Interrupted, naming its pod), the one
 * who waits asks about every PF_RDV_GONE_MS (cfg.gone): rank 0 about each
 * rank still missing, the others about rank 0 while it does not answer.
 * A rank known gone is PeerLost at once, spread by rank 0 as an ABORT,
 * instead of a PeerTimeout at the deadline. */
#ifndef PF_RENDEZVOUS_H
#define PF_RENDEZVOUS_H

#include <stdbool.h>
#include <stdint.h>

#include "../reasons.h"
#include "../types/boot.h"
#include "../types/peers.h"
#include "../util/sizes.h"
#include "bootstrap.h"
#include "../net/seal.h"
#include "../net/wire.h"

#define PF_RDV_MAGIC 0x50465256u      /* "PFRV" */
/* 2: PING/PONG, 3: BEAT, 4: BUSY, 5: the host engine's tcp eager limit
 * (host_ep.c), which rxm requires every peer to share, 6: the goodbye
 * (rdv_bye.c) and the sweep's per-size record with rank 0's plan clock */
#define PF_RDV_VERSION 6
#define PF_RDV_NONCE PF_SEAL_NONCE
#define PF_RDV_MAC PF_SEAL_MAC
#define PF_RDV_CENSUS_MS 1000     /* a live member answers a PING by then */
#define PF_RDV_BEAT_MS 1000       /* heartbeat period */
#define PF_RDV_SILENT_MS 10000    /* silent (or stalled) this long: hung */
#define PF_RDV_GONE_MS 2000       /* a missing rank is asked about this often */

enum pf_rdv_type {
    PF_RDV_CHALLENGE = 1,
    PF_RDV_HELLO,
    PF_RDV_WELCOME,
    PF_RDV_REJECT,
    PF_RDV_DATA,
    PF_RDV_ABORT,
    PF_RDV_BYE,
    PF_RDV_PING,
    PF_RDV_PONG,
    PF_RDV_BEAT,
    PF_RDV_BUSY,
};

/* What a rank says about itself in HELLO (and reads back in the table). */
struct pf_rdv_facts {
    char hostname[PF_NAME_MAX];
    char instance_type[64];
    int efa_count;
    int gpu_count;
    char addr[64];                    /* address rank 0 saw (table only) */
};

struct pf_rdv_cfg {
    int rank, world;
    char root_host[PF_NAME_MAX];      /* where rank 0 listens */
    int root_port;
    char bind_addr[PF_NAME_MAX];      /* "" = any */
    char run_id[PF_NAME_MAX];
    const uint8_t *secret;            /* NULL = no HMAC */
    size_t secret_len;
    struct pf_rdv_facts self;
    const struct pf_peer *expected;   /* world entries (for naming), or NULL */
    /* Rank 0: a HELLO for rank r must come from expected[r].host where
     * that is an IP address (k8s: the pod IP the API server reports), so
     * nobody else on the network can take the rank, secret or not. */
    bool bind_source;
    int64_t deadline;                 /* everyone must have joined by then */
    struct pf_fault *fault;           /* failures recorded here, or NULL */
    struct pf_progress *progress;     /* lines while waiting, or NULL */
    /* Heartbeat period and silence window; 0 = PF_RDV_BEAT_MS /
     * PF_RDV_SILENT_MS (the unit tests shorten them). */
    int beat_ms, silent_ms;
    /* Whether rank `rank` is known to have stopped for good (its agent
     * said so where discovery sees it), with why; NULL: never asked.
     * Called on this thread while that rank is awaited, first gone_ms
     * after the wait began, then every gone_ms (0 = PF_RDV_GONE_MS; rank
     * 0 asks about a few missing ranks a round, the others about rank 0
     * only, less often in a large group); it must bound its own time. */
    bool (*gone)(void *ctx, int rank, char *why, size_t len);
    void *gone_ctx;
    int gone_ms;
};

/* Join the group. On success *out is a pf_boot; table (world entries, or
 * NULL) receives every rank's facts. Failures are recorded in cfg->fault
 * (reason PeerTimeout / PeerRejected / PeerLost) and returned as
 * PF_ERR_TIMEOUT / PF_ERR_REJECTED / PF_ERR_LOST. Rank 0 needs a file
 * descriptor per rank: it raises its soft RLIMIT_NOFILE as far as the hard
 * limit allows and fails with PF_ERR_USAGE when that is not enough. */
pf_err pf_rdv_open(const struct pf_rdv_cfg *cfg, struct pf_boot **out,
                   struct pf_rdv_facts *table, char *err);

/* ---- pieces, exposed for the unit tests ---- */

struct pf_hello {
    uint32_t magic;
    uint16_t version;
    int rank, world;
    char run_id[PF_NAME_MAX];
    struct pf_rdv_facts facts;
    uint8_t nonce[PF_RDV_NONCE];
    bool has_mac;
    uint8_t mac[PF_RDV_MAC];
    bool taken;                       /* check: refused only because the
                                         rank is held already */
};

/* Encode a HELLO, with a MAC over (body || challenge) when secret != NULL. */
pf_err pf_rdv_hello_encode(const struct pf_hello *h, const uint8_t *secret,
                           size_t secret_len,
                           const uint8_t challenge[PF_RDV_NONCE],
                           struct pf_wbuf *w, char *err);

/* Rank 0's view of the group, against which a HELLO is checked. */
struct pf_rdv_view {
    int world;
    const char *run_id;
    const uint8_t *secret;
    size_t secret_len;
    const uint8_t *challenge;         /* PF_RDV_NONCE bytes sent to this peer */
    const bool *joined;               /* world entries */
    const char *from;                 /* the peer's address, or NULL */
    const struct pf_peer *bind;       /* world entries: bind_source, or NULL */
};

/* Decode and check one HELLO: the MAC first (when rank 0 has a secret),
 * then version, run id, world size, rank, source address, a rank held
 * already. PF_OK: member. PF_ERR_REJECTED: an efa-preflight peer that does
 * not belong; err says why (what it claims is named as a claim).
 * PF_ERR_PROTOCOL: not an efa-preflight HELLO at all. Either way rank 0
 * drops the connection and goes on. */
pf_err pf_rdv_check_hello(const struct pf_rdv_view *v, const uint8_t *body,
                          size_t len, struct pf_hello *h, char *err);

/* Reason word of an ABORT frame -> the error code this rank reports (the
 * reason it is reported under: pf_reason_for_err, PF_STAGE_TRANSPORT). */
pf_err pf_rdv_reason_err(const char *reason);

#endif
