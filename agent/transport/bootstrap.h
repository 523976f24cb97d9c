/* Connecting a group of ranks: the rendezvous (TCP star around rank 0) or
 * MPI. What it returns, struct pf_boot and its calls, is in types/boot.h,
 * where the engines and the harness reach it without the transport. */
#ifndef PF_BOOTSTRAP_H
#define PF_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "../types/boot.h"
#include "../types/peers.h"

struct pf_progress;

/* What connecting a group needs, and nothing more: the collective fills it
 * from the run, so the transport never sees the run or its results. */
struct pf_boot_args {
    const struct pf_peers *peers;     /* the group discovery found */
    struct pf_roster *roster;         /* a copy of its table: a rank that
                                         knew only rank 0 and itself gets
                                         the others' names filled in here */
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
/* The implementation pf_boot_open picks when peers->bootstrap is mpi
 * (boot_mpi.c); every other bootstrap uses the rendezvous. */
pf_err pf_boot_open_mpi(const struct pf_boot_args *args, struct pf_boot **out,
                        char *err);

#endif
