/* rendezvous group (rdv_impl.h): what every part of the rendezvous asks
 * about the group and how it fails, kept below all of them so none calls
 * back into another for it: how a member is named, which members owe no
 * answer, the REJECT/ABORT frames {reason word, message}, and the group
 * failing for good (recorded, and spread by rank 0 to every member). */
#include "rendezvous.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../util/clock.h"
#include "rdv_impl.h"

/* The wire carries the word; the table turns it back into a reason. */
pf_err pf_rdv_reason_err(const char *reason)
{
    switch (pf_reason_by_name(reason)) {
    case PF_R_PeerTimeout: return PF_ERR_TIMEOUT;
    case PF_R_PeerRejected: return PF_ERR_REJECTED;
    case PF_R_PeerProtocolError: return PF_ERR_PROTOCOL;
    default: return PF_ERR_LOST;
    }
}

/* The first failure a rank detects is the one its report carries. */
pf_err rdv_record(struct pf_fault *fault, pf_err code, const char *msg)
{
    return pf_fault_set(fault, code,
                        pf_reason_for_err(code, PF_STAGE_TRANSPORT), msg);
}

const char *rdv_who(const struct rdv *r, int rank, char *buf)
{
    const struct pf_rdv_facts *f = &r->facts[rank];

    if (f->hostname[0] && f->addr[0] && strcmp(f->hostname, f->addr))
        snprintf(buf, WHO_LEN, "rank %d (%s, %s)", rank, f->hostname, f->addr);
    else if (f->hostname[0] || f->addr[0])
        snprintf(buf, WHO_LEN, "rank %d (%s)", rank,
                 f->addr[0] ? f->addr : f->hostname);
    else
        snprintf(buf, WHO_LEN, "rank %d", rank);
    return buf;
}

pf_err rdv_send_reason(struct pf_conn *c, uint8_t type, const char *reason,
                       const char *msg, int64_t deadline)
{
    uint8_t body[64 + PF_ERRLEN];
    struct pf_wbuf w = { body, 0, sizeof(body), false };

    pf_put_str(&w, reason);
    pf_put_str(&w, msg);
    if (w.overflow)
        return PF_ERR_USAGE;
    return pf_wire_send(c, type, body, w.len, deadline, NULL);
}

void rdv_read_reason(const struct pf_msg *m, char reason[48],
                     char msg[PF_ERRLEN])
{
    struct pf_rbuf rb = { m->body, m->len, 0, false };
    char raw[PF_ERRLEN];

    pf_get_str(&rb, reason, 48);
    pf_get_str(&rb, raw, sizeof(raw));
    if (rb.bad) {
        snprintf(reason, 48, "%s", pf_reason_name(PF_R_PeerLost));
        snprintf(msg, PF_ERRLEN, "(malformed abort message)");
        return;
    }
    rdv_clean(raw, msg, PF_ERRLEN);
}

/* Rank 0: tell every connected peer but skip why the run stops. */
void rdv_spread_abort(struct rdv *r, int skip, const char *reason,
                      const char *msg)
{
    if (r->boot.rank != 0)
        return;
    for (int i = 1; i < r->boot.world; i++)
        if (i != skip && r->conns[i].fd >= 0 && !r->bye[i]) {
            rdv_lock(r, i);
            rdv_send_reason(&r->conns[i], PF_RDV_ABORT, reason, msg,
                            pf_deadline_in(CTRL_MS));
            rdv_unlock(r, i);
        }
}

/* A failure after the join: sticky, recorded, and spread by rank 0 under
 * the wire reason (the code's own unless relaying a peer's). */
static pf_err stop(struct rdv *r, pf_err code, const char *wire, int culprit,
                   char *err)
{
    int64_t frozen = rdv_self_frozen_ms(r);

    if (frozen > 0) {
        /* This process stood still: whatever it now sees of the others
         * (rank 0 gone, an ABORT) follows from its own silence. */
        char seen[PF_ERRLEN], self[WHO_LEN];
        snprintf(seen, sizeof(seen), "%s", r->broken_msg);
        snprintf(r->broken_msg, sizeof(r->broken_msg), "%s was the silent "
                 "one: it stood still for %.1f s (process stopped, or its "
                 "host froze), past the group's %.1f s silence window, so "
                 "the others named it and went on without it; then it saw: "
                 "%s", rdv_who(r, r->boot.rank, self), frozen / 1000.0,
                 r->silent_ms / 1000.0, seen);
        code = PF_ERR_LOST;
        wire = NULL;
        culprit = -1;
    }
    r->broken = code;
    rdv_record(r->fault, code, r->broken_msg);
    if (!wire)
        wire = pf_reason_name(pf_reason_for_err(code, PF_STAGE_TRANSPORT));
    rdv_spread_abort(r, culprit, wire, r->broken_msg);
    return pf_fail(err, code, "%s", r->broken_msg);
}

pf_err rdv_broke(struct rdv *r, pf_err code, int culprit, char *err,
                 const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->broken_msg, sizeof(r->broken_msg), fmt, ap);
    va_end(ap);
    return stop(r, code, NULL, culprit, err);
}

pf_err rdv_from_abort(struct rdv *r, const struct pf_msg *m, int from,
                      char *err)
{
    char reason[48], msg[PF_ERRLEN], name[WHO_LEN];

    rdv_read_reason(m, reason, msg);
    if (r->boot.rank == 0)
        snprintf(r->broken_msg, sizeof(r->broken_msg), "%s gave up: %s",
                 rdv_who(r, from, name), msg);
    else   /* rank 0 relays: keep its words, they name the rank at fault */
        snprintf(r->broken_msg, sizeof(r->broken_msg), "%s", msg);
    return stop(r, pf_rdv_reason_err(reason), reason, from, err);
}

void rdv_missing_list(const struct rdv *r, const bool *joined, char *out,
                      size_t cap)
{
    char name[WHO_LEN];
    size_t len = 0;
    int shown = 0, missing = 0;

    out[0] = '\0';
    for (int i = 1; i < r->boot.world; i++) {
        if (joined[i])
            continue;
        missing++;
        if (shown < 8 && len + 1 < cap) {
            int n = snprintf(out + len, cap - len, "%s%s", shown ? ", " : "",
                             rdv_who(r, i, name));
            if (n > 0)
                len += (size_t)n < cap - len ? (size_t)n : cap - len - 1;
            shown++;
        }
    }
    if (missing > shown && len + 1 < cap)
        snprintf(out + len, cap - len, " and %d more", missing - shown);
}

/* Rank i owes no answer (closed, said BYE, or gave up). */
bool rdv_excused(const struct rdv *r, int i)
{
    struct pf_msg m;

    return r->conns[i].fd < 0 || (r->boot.rank == 0 && r->bye[i]) ||
           pf_wire_has(&r->conns[i], PF_RDV_ABORT, &m) ||
           pf_wire_has(&r->conns[i], PF_RDV_BYE, &m);
}
