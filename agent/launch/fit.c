/* `local` fits the host: how many ranks to start when --ranks is not given
 * (one per GPU where the NCCL engine will run, else 2), and how many this
 * host can hold at all. No fixed cap: the limits are the host's own -
 * memory, the per-user process limit and open files - and the error names
 * the one that binds. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../collective/sweep.h"
#include "../config/run_clock.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/gpulib.h"
#include "../util/log.h"

/* What one rank process costs besides its two message buffers (measured:
 * a host-engine rank over tcp peaks at ~114 MiB RSS, at -e 64K as at
 * -e 1M). */
#define RANK_BASE_BYTES ((uint64_t)128 << 20)
/* Tasks one rank may run (RLIMIT_NPROC counts threads): a host-engine rank
 * over tcp runs 1; NCCL and the EFA provider start progress threads. */
#define RANK_TASKS 4
/* Descriptors rank 0 keeps besides one connection per rank: listener,
 * connections that have yet to say HELLO, libraries' own. */
#define ROOT_SPARE_FDS 128
#define GPU_PROBE_MS 60000            /* CUDA init on 8 GPUs takes seconds */

static void limit_to(int *max, long long v, char *why, size_t len,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void limit_to(int *max, long long v, char *why, size_t len,
                     const char *fmt, ...)
{
    va_list ap;

    if (v < 0)
        v = 0;
    if (v >= *max)
        return;
    *max = (int)v;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

int pf_local_room(const struct pf_host_room *h, uint64_t max_bytes,
                  char *why, size_t len)
{
    int max = INT_MAX;
    uint64_t per_rank = RANK_BASE_BYTES + 2 * max_bytes;

    snprintf(why, len, "no host limit applies");
    if (h->mem_avail > 0)
        limit_to(&max, (long long)(h->mem_avail / per_rank), why, len,
                 "memory: %llu MiB available, about %llu MiB per rank for "
                 "messages up to %llu bytes (two buffers and the process)",
                 (unsigned long long)(h->mem_avail >> 20),
                 (unsigned long long)(per_rank >> 20),
                 (unsigned long long)max_bytes);
    if (h->nproc > 0)
        limit_to(&max, (long long)(h->nproc / RANK_TASKS), why, len,
                 "RLIMIT_NPROC (ulimit -u) %llu: each rank may run up to %d "
                 "tasks", (unsigned long long)h->nproc, RANK_TASKS);
    if (h->nofile > 0)
        limit_to(&max, (long long)h->nofile - ROOT_SPARE_FDS, why, len,
                 "RLIMIT_NOFILE (ulimit -n) %llu: rank 0 keeps a connection "
                 "to every rank plus %d spare descriptors",
                 (unsigned long long)h->nofile, ROOT_SPARE_FDS);
    return max;
}

static uint64_t mem_available(void)
{
    char *text = NULL, err[PF_ERRLEN];
    unsigned long long kb = 0;
    const char *p;

    if (pf_read_file("/proc/meminfo", 1 << 16, &text, NULL, err) != PF_OK)
        return 0;
    p = strstr(text, "MemAvailable:");
    if (!p || sscanf(p, "MemAvailable: %llu kB", &kb) != 1)
        kb = 0;
    free(text);
    return (uint64_t)kb << 10;
}

void pf_host_room_read(struct pf_host_room *h)
{
    struct rlimit rl;

    memset(h, 0, sizeof(*h));
    h->mem_avail = mem_available();
    /* The kernel does not hold root to RLIMIT_NPROC. */
    if (geteuid() != 0 && getrlimit(RLIMIT_NPROC, &rl) == 0 &&
        rl.rlim_cur != RLIM_INFINITY)
        h->nproc = rl.rlim_cur;
    /* Take the hard limit the ranks may use; they inherit it. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            struct rlimit up = { rl.rlim_max, rl.rlim_max };
            if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                rl.rlim_cur = rl.rlim_max;
        }
        if (rl.rlim_cur != RLIM_INFINITY)
            h->nofile = rl.rlim_cur;
    }
}

/* GPUs the ranks will see, counted in a child: a CUDA runtime initialised
 * here would not survive the fork of the ranks. 0 when the engine will not
 * be NCCL (no GPU, NCCL missing under --engine auto, --engine host). */
static int gpus_for_ranks(const struct pf_config *cfg, int64_t deadline)
{
    struct { int gpus, nccl; } ans = { 0, 0 };
    int fds[2], status;
    pid_t pid;

    if (cfg->engine == PF_ENGINE_HOST || pipe2(fds, O_CLOEXEC) != 0)
        return 0;
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        struct pf_cudart c;
        struct pf_nccl n;
        char err[PF_ERRLEN];

        memset(&c, 0, sizeof(c));
        memset(&n, 0, sizeof(n));
        close(fds[0]);
        if (pf_cudart_load(&c, err) != PF_OK ||
            pf_cuda_device_count(&c, &ans.gpus, err) != PF_OK)
            ans.gpus = 0;
        ans.nccl = pf_nccl_load(&n, err) == PF_OK;
        if (write(fds[1], &ans, sizeof(ans)) != (ssize_t)sizeof(ans))
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    {
        struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
        int64_t left = pf_ms_left(deadline);
        if (left > GPU_PROBE_MS)
            left = GPU_PROBE_MS;
        if (left < 0 || poll(&pfd, 1, (int)left) != 1 ||
            read(fds[0], &ans, sizeof(ans)) != (ssize_t)sizeof(ans)) {
            pf_warn("local: counting GPUs took too long or failed; "
                    "starting ranks as for a host without GPUs");
            memset(&ans, 0, sizeof(ans));
            kill(pid, SIGKILL);
        }
    }
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (ans.gpus <= 0 || (!ans.nccl && cfg->engine != PF_ENGINE_NCCL))
        return 0;
    return ans.gpus;
}

pf_err pf_local_ranks(struct pf_run *run, int *n, char *err)
{
    struct pf_host_room room;
    char why[256];
    int gpus = 0, room_n;
    bool picked = run->cfg.ranks <= 0;

    if (picked) {
        gpus = gpus_for_ranks(&run->cfg, pf_run_deadline(run));
        *n = gpus > 0 ? gpus : 2;
        pf_info("local: %d rank(s): %s", *n,
                gpus > 0 ? "one per GPU" : "no GPU for the NCCL engine, "
                                           "2 host-engine ranks");
    } else {
        *n = run->cfg.ranks;
    }
    pf_host_room_read(&room);
    /* The instance, and so its floor's size, is known only in the ranks
     * (each plans its sweep in the collective): size by -e or the default
     * sweep. */
    room_n = pf_local_room(&room, pf_sweep_max_bytes(&run->cfg, NULL),
                           why, sizeof(why));
    if (*n > room_n)
        return pf_fail(err, PF_ERR_USAGE, "%s %d local ranks: this host holds "
                       "at most %d (%s)", picked ? "one per GPU would be"
                                                 : "--ranks asks for",
                       *n, room_n, why);
    return PF_OK;
}
