/* Private to the rendezvous (rendezvous.c: group operations, rdv_join.c:
 * joining); everyone else uses rendezvous.h and bootstrap.h. */
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
};

/* Record a failure in fault (first one wins) under its reason. */
pf_err rdv_record(struct pf_fault *fault, pf_err code, const char *msg);
/* "rank 2 (node-c, 10.0.1.9)" into buf (WHO_LEN bytes). */
const char *rdv_who(const struct rdv *r, int rank, char *buf);
/* REJECT / ABORT frames: {reason word, message}. */
pf_err rdv_send_reason(struct pf_conn *c, uint8_t type, const char *reason,
                       const char *msg);
void rdv_read_reason(const struct pf_msg *m, char reason[48],
                     char msg[PF_ERRLEN]);
/* Fail the group for good: recorded, and spread by rank 0 to every rank
 * but culprit (-1: all). */
pf_err rdv_broke(struct rdv *r, pf_err code, int culprit, char *err,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* "rank 2 (...), rank 3 (...)" for the ranks not in done[]. */
void rdv_missing_list(const struct rdv *r, const bool *done, char *out,
                      size_t cap);

pf_err rdv_root_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err);
pf_err rdv_peer_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err);

#endif
