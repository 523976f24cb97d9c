/* libpf-mpi.so: the tiny C API through which the agent uses MPI.
 *
 * The agent binary never links libmpi: it must start on machines without
 * MPI, and each MPI ships its own ABI (mpi.h types differ between OpenMPI
 * and MPICH). So this shim is built with the site's own mpicc
 * (mk/mpi.mk -> build/libpf-mpi.so) and the agent dlopens it only for
 * `--bootstrap mpi` (discover/mpi.c). Only plain C types cross this line.
 *
 * Collectives are started non-blocking and tested until timeout_ms, so a
 * missing or stuck rank ends in PF_MPI_TIMEOUT instead of a hang. */
#ifndef PF_MPI_SHIM_H
#define PF_MPI_SHIM_H

#include <stddef.h>

#define PF_MPI_SHIM_ABI 1

enum { PF_MPI_OK = 0, PF_MPI_ERROR = -1, PF_MPI_TIMEOUT = -2 };

int pf_mpi_abi(void);                 /* PF_MPI_SHIM_ABI */
/* MPI_Init unless already initialised; errors are returned, not fatal. */
int pf_mpi_init(char *err, size_t errlen);
int pf_mpi_rank(void);
int pf_mpi_size(void);
/* all = size * len bytes in rank order. */
int pf_mpi_allgather(const void *mine, size_t len, void *all, int timeout_ms);
int pf_mpi_bcast(void *buf, size_t len, int root, int timeout_ms);
int pf_mpi_barrier(int timeout_ms);
/* Text of the last error this shim saw. */
const char *pf_mpi_last_error(void);
int pf_mpi_finalize(void);

#endif
