/* What the transport produces (transport/bootstrap.h opens it): a connected
 * group of ranks for small control messages, the rendezvous (TCP star
 * around rank 0) or MPI. Engines use it to exchange endpoint addresses and
 * the NCCL unique id; the sweep uses it to agree on results. Every call
 * takes an absolute deadline (util/clock.h) and fails with PF_ERR_TIMEOUT /
 * PF_ERR_LOST naming the rank or host at fault. */
#ifndef PF_TYPES_BOOT_H
#define PF_TYPES_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

struct pf_boot;

struct pf_boot_ops {
    /* all = world * len bytes, rank order */
    pf_err (*allgather)(struct pf_boot *b, const void *mine, size_t len,
                        void *all, int64_t deadline, char *err);
    pf_err (*bcast)(struct pf_boot *b, void *buf, size_t len, int root,
                    int64_t deadline, char *err);
    pf_err (*barrier)(struct pf_boot *b, int64_t deadline, char *err);
    /* Non-blocking: PF_ERR_LOST (naming the rank/host) when a peer's
     * connection dropped or rank 0 announced an abort (PF_ERR_TIMEOUT when
     * rank 0 gave up waiting for a rank). Engines call it
     * while they wait on the fabric, so a dead peer never hangs them. */
    pf_err (*poll)(struct pf_boot *b, char *err);
    /* Tell the others this rank is giving up (best effort). */
    void (*abort)(struct pf_boot *b, const char *why);
    void (*close)(struct pf_boot *b);
};

struct pf_boot {
    const struct pf_boot_ops *ops;
    int rank, world;
    void *impl;
};

static inline pf_err pf_boot_allgather(struct pf_boot *b, const void *mine,
                                       size_t len, void *all,
                                       int64_t deadline, char *err)
{
    return b->ops->allgather(b, mine, len, all, deadline, err);
}
static inline pf_err pf_boot_bcast(struct pf_boot *b, void *buf, size_t len,
                                   int root, int64_t deadline, char *err)
{
    return b->ops->bcast(b, buf, len, root, deadline, err);
}
static inline pf_err pf_boot_barrier(struct pf_boot *b, int64_t deadline,
                                     char *err)
{
    return b->ops->barrier(b, deadline, err);
}
static inline pf_err pf_boot_poll(struct pf_boot *b, char *err)
{
    return b->ops->poll(b, err);
}
static inline void pf_boot_abort(struct pf_boot *b, const char *why)
{
    b->ops->abort(b, why);
}
static inline void pf_boot_close(struct pf_boot *b)
{
    if (b)
        b->ops->close(b);
}

#endif
