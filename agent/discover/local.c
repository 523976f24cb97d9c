/* `local` discovery in one rank process: cfg.ranks ranks on 127.0.0.1,
 * started by the launcher (launch/local.c), which sized the run to the
 * host. */
#include "discover.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Start time of a process in clock ticks since boot (/proc/PID/stat field
 * 22), 0 if unknown: with the pid it names one launcher uniquely. */
static unsigned long long start_ticks(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long t = 0;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')');        /* the command name may hold spaces */
    if (!p)
        return 0;
    /* After ')': state is field 3, starttime field 22. */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
               "%*d %*d %*d %*d %*d %*d %llu", &t) != 1)
        return 0;
    return t;
}

pf_err pf_discover_local(struct pf_run *run, char *err)
{
    struct pf_peers *p = &run->peers;
    int world = run->cfg.ranks > 0 ? run->cfg.ranks : 2;
    int rank = run->cfg.rank;

    if (rank < 0 && world == 1)
        rank = 0;
    if (rank < 0 || rank >= world)
        return pf_fail(err, PF_ERR_USAGE, "--bootstrap local: rank %d is "
                       "outside 0..%d (efa-preflight local sets it)", rank,
                       world - 1);
    if (world > 1 && run->cfg.port <= 0)
        return pf_fail(err, PF_ERR_USAGE, "--bootstrap local with %d ranks "
                       "needs a rendezvous --port", world);
    p->list = calloc((size_t)world, sizeof(*p->list));
    if (!p->list)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for %d peers", world);
    for (int i = 0; i < world; i++) {
        p->list[i].rank = i;
        snprintf(p->list[i].host, sizeof(p->list[i].host), "127.0.0.1");
        p->list[i].port = run->cfg.port;
    }
    p->world = world;
    p->rank = rank;
    if (run->cfg.run_id[0]) {
        snprintf(p->run_id, sizeof(p->run_id), "%s", run->cfg.run_id);
    } else {
        /* The launcher (our parent; ourselves for one rank): its pid and
         * start time are the same for every rank it started. */
        pid_t launcher = world == 1 ? getpid() : getppid();
        snprintf(p->run_id, sizeof(p->run_id), "local-%d-%llu", (int)launcher,
                 start_ticks(launcher));
    }
    return PF_OK;
}

