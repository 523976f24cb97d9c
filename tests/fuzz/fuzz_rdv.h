/* What the rendezvous fuzz targets (fuzz_rdv_peer.c, fuzz_rdv_root.c)
 * share: the side a thread plays on loopback writes and drains its
 * socket, and the side under test runs every collective of the boot on
 * whatever follows the join and ends with a reason the verdict knows. */
#ifndef PF_FUZZ_RDV_H
#define PF_FUZZ_RDV_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/rendezvous.h"
#include "util/clock.h"

static inline void fuzz_send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        b += w;
        n -= (size_t)w;
    }
}

/* Read until the other side closes, so what it sends lands somewhere. */
static inline void fuzz_drain(int fd)
{
    uint8_t sink[4096];

    for (int i = 0; i < 1000; i++) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5000) <= 0 || recv(fd, sink, sizeof(sink), 0) <= 0)
            break;
    }
}

/* The rank under test: its settings, what its verdict would read, its
 * boot once joined. */
struct fuzz_rank {
    struct pf_rdv_cfg cfg;
    struct pf_fault coll;
    struct pf_boot *b;
    char err[PF_ERRLEN];
};

/* Rank `rank` of 2 whose rank 0 is 127.0.0.1:port, run-1, 8 s. */
static inline void fuzz_rdv_cfg(struct fuzz_rank *k, int rank, int port,
                                const char *hostname)
{
    struct pf_rdv_cfg *cfg = &k->cfg;

    memset(k, 0, sizeof(*k));
    cfg->rank = rank;
    cfg->world = 2;
    snprintf(cfg->root_host, sizeof(cfg->root_host), "127.0.0.1");
    cfg->root_port = port;
    snprintf(cfg->run_id, sizeof(cfg->run_id), "run-1");
    snprintf(cfg->self.hostname, sizeof(cfg->self.hostname), "%s", hostname);
    cfg->deadline = pf_deadline_in(8000);
    cfg->fault = &k->coll;
}

/* Barrier, allgather, a bcast from root and poll on b, then closes it. */
static inline pf_err fuzz_rdv_collectives(struct pf_boot *b, int root,
                                          int64_t deadline, char *err)
{
    uint8_t mine[8] = { 0 }, all[16], buf[16] = { 0 };
    pf_err rc = pf_boot_barrier(b, deadline, err);

    if (rc == PF_OK)
        rc = pf_boot_allgather(b, mine, sizeof(mine), all, deadline, err);
    if (rc == PF_OK)
        rc = pf_boot_bcast(b, buf, sizeof(buf), root, deadline, err);
    if (rc == PF_OK)
        rc = pf_boot_poll(b, err);
    pf_boot_close(b);
    return rc;
}

/* The reasons a broken rendezvous may end with. */
static inline bool fuzz_rdv_known_reason(enum pf_reason r)
{
    return r == PF_R_PeerTimeout || r == PF_R_PeerLost ||
           r == PF_R_PeerRejected || r == PF_R_PeerProtocolError;
}

/* The rank ended well before its deadline (the stream ended: no waiting)
 * and, failed, with a reason the verdict knows. */
static inline void fuzz_rdv_ended_well(const struct fuzz_rank *k,
                                       int64_t start, pf_err rc)
{
    if (pf_now_ms() - start > 5000)
        __builtin_trap();
    if (rc != PF_OK && !fuzz_rdv_known_reason(k->coll.reason))
        __builtin_trap();
}

#endif
