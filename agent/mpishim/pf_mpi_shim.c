/* libpf-mpi.so (see pf_mpi_shim.h). Built with mpicc, never linked into the
 * agent. MPI itself is process-global state, so the little state kept here
 * (the last error) is too. */
#include "pf_mpi_shim.h"

#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

static char last_error[256];

static int mpi_failed(const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof(text), "MPI error %d", code);
    snprintf(last_error, sizeof(last_error), "%s: %s", what, text);
    return PF_MPI_ERROR;
}

/* Test a started request until done or timeout_ms. */
static int wait_for(MPI_Request *req, const char *what, int timeout_ms)
{
    struct timespec start, now, nap = { 0, 100000 };
    int done = 0, rc;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_failed(what, rc);
        if (done)
            return PF_MPI_OK;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000 +
                (now.tv_nsec - start.tv_nsec) / 1000000 >= timeout_ms) {
            snprintf(last_error, sizeof(last_error), "%s did not complete "
                     "within %d ms", what, timeout_ms);
            return PF_MPI_TIMEOUT;
        }
        nanosleep(&nap, NULL);
    }
}

int pf_mpi_abi(void) { return PF_MPI_SHIM_ABI; }

int pf_mpi_init(char *err, size_t errlen)
{
    int inited = 0, rc;

    MPI_Initialized(&inited);
    if (!inited) {
        rc = MPI_Init(NULL, NULL);
        if (rc != MPI_SUCCESS) {
            mpi_failed("MPI_Init", rc);
            snprintf(err, errlen, "%s", last_error);
            return PF_MPI_ERROR;
        }
    }
    /* Errors come back as codes so the agent can report them. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return PF_MPI_OK;
}

int pf_mpi_rank(void)
{
    int r = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int pf_mpi_size(void)
{
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

/* A started nonblocking call: its failure to start, or its wait. */
static int started(int rc, MPI_Request *req, const char *what, int timeout_ms)
{
    if (rc != MPI_SUCCESS)
        return mpi_failed(what, rc);
    return wait_for(req, what, timeout_ms);
}

/* MPI counts are ints. */
static bool too_large(const char *what, size_t len)
{
    if (len <= INT_MAX)
        return false;
    snprintf(last_error, sizeof(last_error), "%s of %zu bytes is too large",
             what, len);
    return true;
}

int pf_mpi_allgather(const void *mine, size_t len, void *all, int timeout_ms)
{
    MPI_Request req;

    if (too_large("allgather", len))
        return PF_MPI_ERROR;
    return started(MPI_Iallgather(mine, (int)len, MPI_BYTE, all, (int)len,
                                  MPI_BYTE, MPI_COMM_WORLD, &req),
                   &req, "MPI_Iallgather", timeout_ms);
}

int pf_mpi_bcast(void *buf, size_t len, int root, int timeout_ms)
{
    MPI_Request req;

    if (too_large("bcast", len))
        return PF_MPI_ERROR;
    return started(MPI_Ibcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD,
                              &req),
                   &req, "MPI_Ibcast", timeout_ms);
}

int pf_mpi_barrier(int timeout_ms)
{
    MPI_Request req;

    return started(MPI_Ibarrier(MPI_COMM_WORLD, &req), &req, "MPI_Ibarrier",
                   timeout_ms);
}

const char *pf_mpi_last_error(void) { return last_error; }

int pf_mpi_finalize(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
    return PF_MPI_OK;
}
