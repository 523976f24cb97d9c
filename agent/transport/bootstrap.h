/* A connected group of ranks for small control messages: the rendezvous
 * (TCP star around rank 0) or MPI. Engines use it to exchange endpoint
 * addresses and the NCCL unique id; the sweep uses it to agree on results.
 * Every call takes an absolute deadline (util/clock.h) and fails with
 * PF_ERR_TIMEOUT / PF_ERR_LOST naming the rank or host at fault. */
#ifndef PF_BOOTSTRAP_H
#define PF_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "../pf.h"

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

struct pf_progress;

/* What connecting a group needs, and nothing more: the collective fills it
 * from the run, so the transport never sees the run or its results. */
struct pf_boot_args {
    struct pf_peers *peers;           /* the group discovery found; a rank
                                         that knew only rank 0 and itself
                                         gets the others' names filled in */
    const char *secret_file;          /* --secret-file, "" for none */
    const char *bind_addr;            /* --bind-addr, "" to choose */
    int port;                         /* rank 0's port when the table has none */
    int timeout_s;                    /* the run's, for rank 0's margin */
    int64_t deadline;                 /* the run's, absolute */
    /* what this rank tells the others about its node */
    const char *hostname, *instance_type;
    int efa_count, gpu_count;
    struct pf_progress *progress;     /* "waiting for peers" lines */
    struct pf_fault *fault;           /* where a failure is recorded */
    /* Whether an awaited rank is known to have stopped before joining
     * (rendezvous.h, pf_rdv_cfg.gone); NULL: never asked. */
    bool (*gone)(void *ctx, int rank, char *why, size_t len);
    void *gone_ctx;
};

/* Connect the group (rendezvous or MPI). A failure is also recorded in
 * args->fault (reason PeerTimeout, PeerRejected, PeerLost) and so is any
 * later one the returned pf_boot detects; args->fault must outlive it. */
pf_err pf_boot_open(const struct pf_boot_args *args, struct pf_boot **out,
                    char *err);
/* The implementation pf_boot_open picks when peers->bootstrap is "mpi"
 * (boot_mpi.c); every other bootstrap uses the rendezvous. */
pf_err pf_boot_open_mpi(const struct pf_boot_args *args, struct pf_boot **out,
                        char *err);

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
