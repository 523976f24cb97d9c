/* rendezvous goodbye: the orderly close after the last group call.
 *
 * Rank 0 finishes a collective call as soon as it has sent its last
 * message, while a rank on a slow link may still be reading it. Closing
 * then is not harmless: a socket closed with bytes unread (a BEAT that
 * arrived meanwhile) sends a reset, and the reset throws away what the
 * peer has not read yet, so a healthy rank ended PeerLost ("rank 0 closed
 * its connection during allgather #19") because rank 0 was done first.
 *
 * So nobody leaves before everybody has what it needs:
 *   member   after its last call: BYE, then shutdown(SHUT_WR), then reads
 *            (and drops) until rank 0 closes, at most the silence window;
 *   rank 0   BYE to every member, then keeps beating and reading until
 *            each member's BYE and end of stream arrived (the member had
 *            read everything by then: its BYE follows its last read), or
 *            the member closed, or stayed silent for the window, or the
 *            run's deadline came; each connection is closed as it is done.
 * A member never waits for the others: rank 0 closes its connection as
 * soon as its own BYE is in. */
#include "rendezvous.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "rdv_impl.h"

#define BYE_SLICE_MS 200

static void close_conn(struct rdv *r, int i)
{
    rdv_lock(r, i);
    pf_conn_close(&r->conns[i]);
    rdv_unlock(r, i);
}

/* Take (and drop) every whole frame buffered, noting a BYE or an ABORT
 * in *bye; a partial frame stays for the next read. False when the
 * stream is malformed: nothing more can be read from it. */
static bool drop_frames(struct pf_conn *c, bool *bye)
{
    struct pf_msg m;
    int t;

    while ((t = pf_wire_take(c, &m, NULL)) == 1)
        if (bye && (m.type == PF_RDV_BYE || m.type == PF_RDV_ABORT))
            *bye = true;
    return t == 0;
}

/* Member: say BYE, stop sending, and read until rank 0 closes. */
static void member_bye(struct rdv *r)
{
    struct pf_conn *c = &r->conns[0];
    int64_t until = pf_deadline_in(r->silent_ms);

    if (until > r->deadline)
        until = r->deadline;
    rdv_beat_stop(r);                 /* nothing after the BYE */
    if (pf_wire_send(c, PF_RDV_BYE, NULL, 0, pf_deadline_in(CTRL_MS),
                     NULL) != PF_OK)
        return;
    shutdown(c->fd, SHUT_WR);
    while (pf_ms_left(until) > 0) {
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        int64_t left = pf_ms_left(until);

        if (poll(&p, 1, left < BYE_SLICE_MS ? (int)left : BYE_SLICE_MS) < 0 &&
            errno != EINTR)
            break;
        if (p.revents && pf_wire_pump(c, NULL) != PF_OK)
            break;                    /* rank 0 closed: all done */
        if (!drop_frames(c, NULL))
            break;
    }
}

/* Rank 0: is member i done? Reads what arrived; closes it when it is. */
static bool member_done(struct rdv *r, int i, int64_t now)
{
    struct pf_conn *c = &r->conns[i];
    bool eof;

    if (c->fd < 0)
        return true;
    eof = pf_wire_pump(c, NULL) != PF_OK;
    if (!drop_frames(c, &r->bye[i]))
        eof = true;
    /* Its BYE followed its last read; the end of stream follows its BYE.
     * A member gone without either has nothing left to read from us. */
    if (eof || (!r->bye[i] && now - c->heard_ms >= r->silent_ms)) {
        if (!r->bye[i] && !eof)
            pf_warn("rendezvous: rank %d said no goodbye within %.1f s; "
                    "closing its connection", i, r->silent_ms / 1000.0);
        close_conn(r, i);
        return true;
    }
    return false;
}

static void root_bye(struct rdv *r)
{
    int world = r->boot.world, left = 0;
    struct pollfd *pfds = calloc((size_t)world, sizeof(*pfds));

    for (int i = 1; i < world; i++) {
        if (r->conns[i].fd < 0)
            continue;
        rdv_lock(r, i);
        pf_wire_send(&r->conns[i], PF_RDV_BYE, NULL, 0,
                     pf_deadline_in(CTRL_MS), NULL);
        rdv_unlock(r, i);
    }
    while (pfds && pf_ms_left(r->deadline) > 0) {
        int64_t now = pf_now_ms();
        int n = 0;

        left = 0;
        for (int i = 1; i < world; i++)
            if (!member_done(r, i, now)) {
                left++;
                pfds[n++] = (struct pollfd){ .fd = r->conns[i].fd,
                                             .events = POLLIN };
            }
        if (left == 0)
            break;
        if (poll(pfds, (nfds_t)n, BYE_SLICE_MS) < 0 && errno != EINTR)
            break;
    }
    if (left > 0)
        pf_warn("rendezvous: %d member(s) still reading at the deadline",
                left);
    free(pfds);
    rdv_beat_stop(r);
}

void rdv_goodbye(struct rdv *r)
{
    if (r->boot.world < 2)
        return;
    if (r->boot.rank == 0)
        root_bye(r);
    else if (r->conns[0].fd >= 0)
        member_bye(r);
}
