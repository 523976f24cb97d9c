#include "mpilib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../mpishim/pf_mpi_shim.h"

static void *try_open(const char *path, char *tried, size_t cap)
{
    /* RTLD_GLOBAL: OpenMPI's own plugins resolve libmpi symbols globally. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    size_t n = strlen(tried);

    if (!dl && n + 1 < cap)
        snprintf(tried + n, cap - n, "%s%s (%s)", n ? "; " : "", path,
                 dlerror());
    return dl;
}

pf_err pf_mpi_load(struct pf_mpi_lib *lib, char *err)
{
    const char *env = getenv("EFA_PREFLIGHT_MPI_SHIM");
    char exe[PF_PATH_MAX], tried[PF_ERRLEN - 96] = "", ierr[256] = "";
    ssize_t n;

    memset(lib, 0, sizeof(*lib));
    if (env && *env) {
        snprintf(lib->path, sizeof(lib->path), "%s", env);
        lib->dl = try_open(lib->path, tried, sizeof(tried));
    } else {
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0) {
            char *slash;
            exe[n] = '\0';
            slash = strrchr(exe, '/');
            if (slash)
                *slash = '\0';
            snprintf(lib->path, sizeof(lib->path), "%s/libpf-mpi.so", exe);
            lib->dl = try_open(lib->path, tried, sizeof(tried));
        }
        if (!lib->dl) {
            snprintf(lib->path, sizeof(lib->path), "libpf-mpi.so");
            lib->dl = try_open(lib->path, tried, sizeof(tried));
        }
    }
    if (!lib->dl)
        return pf_fail(err, PF_ERR_USAGE, "--bootstrap mpi needs the MPI "
                       "shim (make builds build/libpf-mpi.so when mpicc "
                       "exists): tried %s", tried);

#define SYM(field, name)                                                    \
    do {                                                                    \
        *(void **)&lib->field = dlsym(lib->dl, name);                       \
        if (!lib->field)                                                    \
            return pf_fail(err, PF_ERR_USAGE, "%s lacks %s",                \
                           lib->path, name);                                \
    } while (0)
    SYM(abi, "pf_mpi_abi");
    SYM(init, "pf_mpi_init");
    SYM(rank, "pf_mpi_rank");
    SYM(size, "pf_mpi_size");
    SYM(allgather, "pf_mpi_allgather");
    SYM(bcast, "pf_mpi_bcast");
    SYM(barrier, "pf_mpi_barrier");
    SYM(last_error, "pf_mpi_last_error");
    SYM(finalize, "pf_mpi_finalize");
#undef SYM
    if (lib->abi() != PF_MPI_SHIM_ABI)
        return pf_fail(err, PF_ERR_USAGE, "%s has shim ABI %d, this "
                       "agent needs %d (rebuild it)", lib->path, lib->abi(),
                       PF_MPI_SHIM_ABI);
    if (lib->init(ierr, sizeof(ierr)) != PF_MPI_OK)
        return pf_fail(err, PF_ERR_UNSUPPORTED, "%s (is this running under "
                       "mpirun?)", ierr);
    return PF_OK;
}
