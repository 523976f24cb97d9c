/* Private to the rendezvous (rendezvous.c: group operations, and the
 * files below it, listed there); everyone else uses rendezvous.h and
 * bootstrap.h. */
#ifndef PF_RDV_IMPL_H
#define PF_RDV_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "rendezvous.h"

#define CTRL_MS 2000          /* small control sends: challenge, reject, abort */
#define WHO_LEN 600

struct rdv {
    struct pf_boot boot;
    struct pf_conn *conns;            /* rank 0: by rank; others: [0] */
    bool *bye;                        /* rank 0: peer closed in order */
    struct pf_rdv_facts *facts;       /* world entries */
    uint32_t seq;                     /* collective calls so far */
    pf_err broken;                    /* sticky failure */
    char broken_msg[PF_ERRLEN];
    struct pf_fault *fault;           /* first failure, for the verdict */
    uint8_t *scratch;
    size_t scratch_cap;
    /* PING/PONG (rendezvous.h, rdv_census.c): who still answers. */
    bool census_on;                   /* rank 0: one is running */
    uint32_t census;                  /* rank 0: its id; others: last PING */
    int64_t census_until;             /* rank 0: when it names the silent */
    bool *alive;                      /* rank 0: answered it (world) */
    bool *asked;                      /* rank 0: wants PONG {0} (world) */
    uint32_t asked_seq;               /* others: PINGs sent to rank 0 */
    bool settled;                     /* others: rank 0 answered PONG {0} */
    /* Heartbeat (rdv_beat.c); NULL until joined and for a world of one. */
    struct rdv_beat *beat;
    int64_t silent_ms;                /* the silence window */
    uint32_t *stall;                  /* by connection: last stall reported */
    struct rdv_door *door;            /* rank 0: the listener after the table */
    int64_t deadline;                 /* the run's: bounds the goodbye */
};

/* Declarations by the file that defines them, lowest first: each file
 * calls only what is declared above its own section, so no two call back
 * into each other (tests/integration/test_layout.sh). */

/* ---- rdv_hello.c ---- */
/* Peer-controlled text for a message: printable ASCII, cut to cap - 1
 * bytes (marked "..."), so a hostname cannot forge a log line. */
void rdv_clean(const char *in, char *out, size_t cap);

/* ---- rdv_beat.c: the heartbeat thread (rendezvous.h) ---- */
pf_err rdv_beat_start(struct rdv *r, int beat_ms, char *err);
void rdv_beat_stop(struct rdv *r);
/* The main thread's sends on connection i exclude the beat thread's. */
void rdv_lock(struct rdv *r, int i);
void rdv_unlock(struct rdv *r, int i);
/* The main thread is in a group call: waiting = an engine's wait on the
 * fabric (pf_boot_poll), whose silence then counts as a stall. */
void rdv_touch(struct rdv *r, bool waiting);
/* A BEAT from connection i. */
void rdv_beat_in(struct rdv *r, int i, const uint8_t *body, size_t len);
/* How long this process itself was frozen (stopped, or its host froze)
 * past the silence window, in ms; 0 when never. */
int64_t rdv_self_frozen_ms(const struct rdv *r);

/* ---- rdv_group.c: names, who owes no answer, failing for good ---- */
/* Record a failure in fault (first one wins) under its reason. */
pf_err rdv_record(struct pf_fault *fault, pf_err code, const char *msg);
/* "rank 2 (node-c, 10.0.1.9)" into buf (WHO_LEN bytes). */
const char *rdv_who(const struct rdv *r, int rank, char *buf);
/* "rank 2 (...), rank 3 (...)" for the ranks not in done[]. */
void rdv_missing_list(const struct rdv *r, const bool *done, char *out,
                      size_t cap);
/* Rank i owes no answer (closed, said BYE, or gave up). */
bool rdv_excused(const struct rdv *r, int i);
/* REJECT / ABORT frames: {reason word, message}, sent by deadline. */
pf_err rdv_send_reason(struct pf_conn *c, uint8_t type, const char *reason,
                       const char *msg, int64_t deadline);
void rdv_read_reason(const struct pf_msg *m, char reason[48],
                     char msg[PF_ERRLEN]);
/* Rank 0: ABORT {reason, msg} to every member still connected but skip
 * (-1: none). */
void rdv_spread_abort(struct rdv *r, int skip, const char *reason,
                      const char *msg);
/* Fail the group for good: recorded, and spread by rank 0 to every rank
 * but culprit (-1: all). */
pf_err rdv_broke(struct rdv *r, pf_err code, int culprit, char *err,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* An ABORT m arrived from rank from: the group fails with its reason
 * (rank 0 names the sender; the others keep rank 0's words). */
pf_err rdv_from_abort(struct rdv *r, const struct pf_msg *m, int from,
                      char *err);

/* ---- rdv_census.c: who still answers (rendezvous.h) ---- */
/* PING/PONG {u32} to rank `to`, under its send lock. */
void rdv_send_u32(struct rdv *r, int to, uint8_t type, uint32_t v);
/* Rank 0: start a census (one at a time; askers join the running one). */
void rdv_census_start(struct rdv *r);
/* One PING, PONG or BEAT that a wait took from connection `from`. */
void rdv_control(struct rdv *r, int from, uint8_t type, const uint8_t *b,
                 size_t len);
/* Every PING, PONG and BEAT buffered on connection i, wherever it sits. */
void rdv_control_in(struct rdv *r, int i);
/* Rank 0: end the census when all answered (PONG {0} to the askers), or
 * name the silent ones at its end. */
pf_err rdv_census_step(struct rdv *r, char *err);
/* Name (PeerLost, spread by rank 0) a peer silent or stalled for the
 * window. Call after reading what has arrived. */
pf_err rdv_check_silent(struct rdv *r, char *err);

/* ---- rdv_door.c: rank 0 keeps listening on lfd (taken over) once the
 * group formed, and tells whoever still claims a rank that it is claimed
 * twice; rdv_door_close stops the thread and closes the listener. ---- */
struct rdv_door;
pf_err rdv_door_open(int lfd, const struct pf_rdv_cfg *cfg, int world,
                     struct rdv_door **out, char *err);
void rdv_door_close(struct rdv_door *d);

/* ---- rdv_root.c: rank 0 joining; rdv_join.c: the others ---- */
/* File descriptors rank 0 holds at most for a group of world ranks. */
long rdv_root_fds(int world);
pf_err rdv_root_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err);
pf_err rdv_peer_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err);

/* ---- rdv_bye.c: the orderly close: nobody leaves before everybody has
 * what it needs. Stops the heartbeat. ---- */
void rdv_goodbye(struct rdv *r);

#endif
