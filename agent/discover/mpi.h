/* The `mpi` bootstrap: rank and size from MPI under mpirun, through the
 * dlopened shim (util/mpilib.h); transport/boot_mpi.c uses the same loader
 * for the pf_boot operations. */
#ifndef PF_DISCOVER_MPI_H
#define PF_DISCOVER_MPI_H

#include "../types/run.h"

/* Fill run->peers from MPI: rank, size, every rank's host (allgather) and
 * a run id from rank 0 (bcast) unless cfg.run_id is set. */
pf_err pf_discover_mpi(struct pf_run *run, char *err);

#endif
