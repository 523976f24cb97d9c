/* rendezvous census (rdv_impl.h): who still answers. A member can stop
 * answering while its connection stays open (SIGSTOP, a hung process, a
 * frozen host); two things name it:
 *   - the PING/PONG census: a rank about to give up asks rank 0, which
 *     pings every member and names those that do not PONG in time;
 *   - the heartbeat's silence check: nothing heard from a member for the
 *     silence window (rdv_beat.c beats, pf_conn.heard_ms), or its engine
 *     stalled that long inside one call, as its own BEATs say.
 * Both fail the group through rdv_group.c; rendezvous.c's waits feed the
 * control frames (PING, PONG, BEAT) in through rdv_control. */
#include "rendezvous.h"

#include "../util/clock.h"
#include "rdv_impl.h"

/* A PING or PONG {u32}: census id (rank 0) or ask number (the others). */
void rdv_send_u32(struct rdv *r, int to, uint8_t type, uint32_t v)
{
    uint8_t body[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16),
                        (uint8_t)(v >> 8), (uint8_t)v };

    if (r->conns[to].fd >= 0) {
        rdv_lock(r, to);
        pf_wire_send(&r->conns[to], type, body, sizeof(body),
                     pf_deadline_in(CTRL_MS), NULL);
        rdv_unlock(r, to);
    }
}

/* Rank 0: ask every member whether it is there. One census at a time;
 * askers join the running one. */
void rdv_census_start(struct rdv *r)
{
    if (r->boot.rank != 0 || r->census_on)
        return;
    r->census_on = true;
    r->census++;
    r->census_until = pf_now_ms() + PF_RDV_CENSUS_MS;
    for (int i = 1; i < r->boot.world; i++) {
        r->alive[i] = rdv_excused(r, i);
        if (!r->alive[i])
            rdv_send_u32(r, i, PF_RDV_PING, r->census);
    }
}

/* One PING, PONG or BEAT from rank i (rank 0) or from rank 0 (the
 * others). */
void rdv_control(struct rdv *r, int from, uint8_t type, const uint8_t *b,
                 size_t len)
{
    uint32_t id = len >= 4 ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
                             (uint32_t)b[2] << 8 | b[3] : 0;

    if (type == PF_RDV_BEAT) {
        rdv_beat_in(r, from, b, len);
        return;
    }
    if (r->boot.rank == 0) {
        if (type == PF_RDV_PING) {        /* a member about to give up */
            r->asked[from] = true;
            rdv_census_start(r);
            r->alive[from] = true;
        } else if (r->census_on && id == r->census) {
            r->alive[from] = true;
        }
        return;
    }
    if (type == PF_RDV_PING) {
        r->census = id;
        rdv_send_u32(r, 0, PF_RDV_PONG, id);
    } else {
        r->settled = true;                /* everyone answered rank 0 */
    }
}

/* Take the PINGs and PONGs buffered on rank i's connection, wherever they
 * sit: a rank busy in its engine must still answer. */
void rdv_control_in(struct rdv *r, int i)
{
    uint8_t b[8];
    size_t n;

    while (pf_wire_extract(&r->conns[i], PF_RDV_PING, b, sizeof(b), &n))
        rdv_control(r, i, PF_RDV_PING, b, n);
    while (pf_wire_extract(&r->conns[i], PF_RDV_PONG, b, sizeof(b), &n))
        rdv_control(r, i, PF_RDV_PONG, b, n);
    while (pf_wire_extract(&r->conns[i], PF_RDV_BEAT, b, sizeof(b), &n))
        rdv_beat_in(r, i, b, n);
}

/* Rank 0: once every member answered, PONG {0} to those who asked; at the
 * end of the census, PeerTimeout naming those who did not (their
 * connection is open, so nothing else would ever name them). */
pf_err rdv_census_step(struct rdv *r, char *err)
{
    char silent[PF_ERRLEN - 160];
    bool all = true;

    if (r->boot.rank != 0 || !r->census_on)
        return PF_OK;
    for (int i = 1; i < r->boot.world && all; i++)
        all = r->alive[i] || rdv_excused(r, i);
    if (all) {
        r->census_on = false;
        for (int i = 1; i < r->boot.world; i++) {
            if (r->asked[i])
                rdv_send_u32(r, i, PF_RDV_PONG, 0);
            r->asked[i] = false;
        }
        return PF_OK;
    }
    if (pf_now_ms() < r->census_until)
        return PF_OK;
    r->census_on = false;
    for (int i = 1; i < r->boot.world; i++)
        r->alive[i] = r->alive[i] || rdv_excused(r, i);
    rdv_missing_list(r, r->alive, silent, sizeof(silent));
    return rdv_broke(r, PF_ERR_TIMEOUT, -1, err, "%s stopped answering: no "
                     "reply within %.1f s although its connection is open "
                     "(process stopped or hung, or its host froze)", silent,
                     PF_RDV_CENSUS_MS / 1000.0);
}

/* A peer silent, or stalled in its engine, for the window: PeerLost. */
pf_err rdv_check_silent(struct rdv *r, char *err)
{
    int first = r->boot.rank == 0 ? 1 : 0;
    int last = r->boot.rank == 0 ? r->boot.world : 1;
    int64_t now = pf_now_ms();
    char name[WHO_LEN];

    if (!r->beat || r->broken != PF_OK)
        return PF_OK;
    for (int i = first; i < last; i++) {
        int64_t quiet = now - r->conns[i].heard_ms;

        if (rdv_excused(r, i))
            continue;
        if (quiet >= r->silent_ms)
            return rdv_broke(r, PF_ERR_LOST, i, err, "%s stopped answering: "
                             "nothing heard from it for %.1f s although its "
                             "connection is open (process stopped or hung, "
                             "or its host froze)", rdv_who(r, i, name),
                             (double)quiet / 1000.0);
        if (r->stall[i] >= (uint32_t)r->silent_ms)
            return rdv_broke(r, PF_ERR_LOST, i, err, "%s stopped making "
                             "progress: its engine has been inside one "
                             "fabric or GPU call for %.1f s (a stuck driver "
                             "call or a hung device)", rdv_who(r, i, name),
                             r->stall[i] / 1000.0);
    }
    return PF_OK;
}
