/* pf_boot over MPI (--bootstrap mpi), through the shim util/mpilib.c loads.
 * MPI collectives take no deadline, so the shim starts them non-blocking
 * and tests until the time left; a timeout leaves the request pending, so
 * this boot is then broken and close() skips MPI_Finalize (mpirun then ends
 * the job, which is what a stuck rank deserves). A dead rank is mpirun's to
 * detect: it tears the whole job down, so poll() has nothing to add. */
#include "bootstrap.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mpishim/pf_mpi_shim.h"
#include "../util/clock.h"
#include "../util/mpilib.h"

struct mpib {
    struct pf_boot boot;
    struct pf_mpi_lib lib;
    pf_err broken;
    char broken_msg[PF_ERRLEN];
    struct pf_fault *fault;
};

static int ms_left(int64_t deadline)
{
    int64_t left = pf_ms_left(deadline);
    if (left < 1)
        return 1;
    return left > INT_MAX ? INT_MAX : (int)left;
}

static pf_err result(struct mpib *m, int rc, const char *what, char *err)
{
    pf_err code;

    if (rc == PF_MPI_OK)
        return PF_OK;
    code = rc == PF_MPI_TIMEOUT ? PF_ERR_TIMEOUT : PF_ERR_LOST;
    snprintf(m->broken_msg, sizeof(m->broken_msg), "MPI %s on rank %d of %d: "
             "%s%s", what, m->boot.rank, m->boot.world, m->lib.last_error(),
             rc == PF_MPI_TIMEOUT ? " (a rank is missing or stuck)" : "");
    m->broken = code;
    pf_fault_set(m->fault, code, pf_reason_for_err(code, PF_STAGE_TRANSPORT),
                 m->broken_msg);
    return pf_fail(err, code, "%s", m->broken_msg);
}

static pf_err usable(struct mpib *m, char *err)
{
    if (m->broken != PF_OK)
        return pf_fail(err, m->broken, "%s", m->broken_msg);
    return PF_OK;
}

static pf_err mpi_allgather(struct pf_boot *b, const void *mine, size_t len,
                            void *all, int64_t deadline, char *err)
{
    struct mpib *m = b->impl;
    pf_err rc = usable(m, err);
    if (rc != PF_OK)
        return rc;
    return result(m, m->lib.allgather(mine, len, all, ms_left(deadline)),
                  "allgather", err);
}

static pf_err mpi_bcast(struct pf_boot *b, void *buf, size_t len, int root,
                        int64_t deadline, char *err)
{
    struct mpib *m = b->impl;
    pf_err rc = usable(m, err);
    if (rc != PF_OK)
        return rc;
    if (root < 0 || root >= b->world)
        return pf_fail(err, PF_ERR_USAGE, "bcast root %d is outside 0..%d",
                       root, b->world - 1);
    return result(m, m->lib.bcast(buf, len, root, ms_left(deadline)), "bcast",
                  err);
}

static pf_err mpi_barrier(struct pf_boot *b, int64_t deadline, char *err)
{
    struct mpib *m = b->impl;
    pf_err rc = usable(m, err);
    if (rc != PF_OK)
        return rc;
    return result(m, m->lib.barrier(ms_left(deadline)), "barrier", err);
}

static pf_err mpi_poll(struct pf_boot *b, char *err)
{
    return usable(b->impl, err);
}

static void mpi_abort(struct pf_boot *b, const char *why)
{
    struct mpib *m = b->impl;

    /* No MPI_Abort: it would kill this rank before it reports. Exiting
     * without MPI_Finalize makes mpirun end the others. */
    if (m->broken == PF_OK) {
        m->broken = PF_ERR_LOST;
        snprintf(m->broken_msg, sizeof(m->broken_msg), "rank %d gave up: %s",
                 b->rank, why);
    }
}

static void mpi_close(struct pf_boot *b)
{
    struct mpib *m = b->impl;

    if (m->broken == PF_OK)
        m->lib.finalize();
    free(m);
}

static const struct pf_boot_ops mpi_ops = {
    .allgather = mpi_allgather,
    .bcast = mpi_bcast,
    .barrier = mpi_barrier,
    .poll = mpi_poll,
    .abort = mpi_abort,
    .close = mpi_close,
};

pf_err pf_boot_open_mpi(const struct pf_boot_args *args, struct pf_boot **out,
                        char *err)
{
    const struct pf_peers *p = args->peers;
    struct mpib *m = calloc(1, sizeof(*m));
    pf_err rc;

    *out = NULL;
    if (!m)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the MPI bootstrap");
    rc = pf_mpi_load(&m->lib, err);
    if (rc != PF_OK) {
        free(m);
        return rc;
    }
    if (m->lib.size() != p->world || m->lib.rank() != p->rank) {
        int mr = m->lib.rank(), ms = m->lib.size();
        free(m);
        return pf_fail(err, PF_ERR_USAGE, "MPI says rank %d of %d, the peer "
                       "table rank %d of %d", mr, ms, p->rank,
                       p->world);
    }
    m->boot.ops = &mpi_ops;
    m->boot.rank = p->rank;
    m->boot.world = p->world;
    m->boot.impl = m;
    m->fault = args->fault;
    *out = &m->boot;
    return PF_OK;
}
