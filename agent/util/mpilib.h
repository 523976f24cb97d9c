/* The MPI shim libpf-mpi.so, dlopened (agent/mpishim/pf_mpi_shim.h says
 * why the agent never links libmpi): the `mpi` bootstrap's discovery and
 * its pf_boot both use it. */
#ifndef PF_MPILIB_H
#define PF_MPILIB_H

#include <stddef.h>

#include "err.h"
#include "sizes.h"

struct pf_mpi_lib {
    void *dl;
    char path[PF_PATH_MAX];
    int (*abi)(void);
    int (*init)(char *err, size_t errlen);
    int (*rank)(void);
    int (*size)(void);
    int (*allgather)(const void *mine, size_t len, void *all, int timeout_ms);
    int (*bcast)(void *buf, size_t len, int root, int timeout_ms);
    int (*barrier)(int timeout_ms);
    const char *(*last_error)(void);
    int (*finalize)(void);
};

/* dlopen the shim: $EFA_PREFLIGHT_MPI_SHIM, else libpf-mpi.so next to the
 * running binary (/proc/self/exe), else the loader's search path; then
 * MPI_Init (idempotent). A shim that is missing or of another ABI is a
 * setup error (PF_ERR_USAGE, exit 2). The library stays loaded for the
 * process's life: MPI cannot be unloaded once initialised. */
pf_err pf_mpi_load(struct pf_mpi_lib *lib, char *err);

#endif
