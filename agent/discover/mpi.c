#include "mpi.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../mpishim/pf_mpi_shim.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/mpilib.h"
#include "../util/crypto.h"

static int ms_left(int64_t deadline)
{
    int64_t left = pf_ms_left(deadline);
    if (left < 1)
        return 1;
    return left > INT_MAX ? INT_MAX : (int)left;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

/* The address other ranks reach this one on: --bind-addr; else what the
 * hostname resolves to unless that is loopback (Debian maps the hostname
 * to 127.0.1.1); else the first interface that is up and not loopback;
 * else "" and the fabric picks. */
static void own_address(const struct pf_run *run, const char *hostname,
                        char *out, size_t cap)
{
    struct addrinfo hints = { 0 }, *res = NULL;
    struct ifaddrs *ifs = NULL;

    out[0] = '\0';
    if (run->cfg.bind_addr[0]) {
        snprintf(out, cap, "%s", run->cfg.bind_addr);
        return;
    }
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(hostname, NULL, &hints, &res) == 0 && res) {
        if (!is_loopback(res->ai_addr))
            getnameinfo(res->ai_addr, res->ai_addrlen, out, (socklen_t)cap,
                        NULL, 0, NI_NUMERICHOST);
        freeaddrinfo(res);
        if (out[0])
            return;
    }
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
            !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
            continue;
        getnameinfo(i->ifa_addr, sizeof(struct sockaddr_in), out,
                    (socklen_t)cap, NULL, 0, NI_NUMERICHOST);
        break;
    }
    freeifaddrs(ifs);
}

struct mpi_card {
    char addr[64];
    char hostname[PF_NAME_MAX];
};

pf_err pf_discover_mpi(struct pf_run *run, char *err)
{
    struct pf_peers *p = &run->peers;
    struct pf_mpi_lib lib;
    struct mpi_card mine, *all;
    char run_id[PF_NAME_MAX];
    int rank, size, rc;
    pf_err e;

    e = pf_mpi_load(&lib, err);
    if (e != PF_OK)
        return e;
    rank = lib.rank();
    size = lib.size();
    if (size < 1 || rank < 0 || rank >= size)
        return pf_fail(err, PF_ERR_USAGE, "MPI reports rank %d of %d: not a "
                       "rank of a world of at least 1", rank, size);
    if (run->cfg.world_size > 0 && run->cfg.world_size != size)
        return pf_fail(err, PF_ERR_USAGE, "--world-size %d but mpirun started "
                       "%d ranks", run->cfg.world_size, size);

    memset(&mine, 0, sizeof(mine));
    if (run->node.hostname[0])
        snprintf(mine.hostname, sizeof(mine.hostname), "%s", run->node.hostname);
    else
        gethostname(mine.hostname, sizeof(mine.hostname) - 1);
    own_address(run, mine.hostname, mine.addr, sizeof(mine.addr));
    all = calloc((size_t)size, sizeof(*all));
    if (!all)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for %d MPI ranks", size);
    rc = lib.allgather(&mine, sizeof(mine), all, ms_left(p->deadline_ms));
    if (rc == PF_MPI_OK) {
        memset(run_id, 0, sizeof(run_id));
        if (run->cfg.run_id[0]) {
            snprintf(run_id, sizeof(run_id), "%s", run->cfg.run_id);
        } else if (rank == 0) {
            /* Rank 0 names the run: its host, pid and start time. */
            struct { char host[PF_NAME_MAX]; pid_t pid; double t; } seed;
            uint8_t d[PF_SHA256_LEN];
            char hex[2 * PF_SHA256_LEN + 1];
            memset(&seed, 0, sizeof(seed));
            snprintf(seed.host, sizeof(seed.host), "%s", mine.hostname);
            seed.pid = getpid();
            seed.t = pf_now_s();
            pf_sha256(&seed, sizeof(seed), d);
            pf_hex(d, 8, hex);
            snprintf(run_id, sizeof(run_id), "mpi-%s", hex);
        }
        if (!run->cfg.run_id[0])
            rc = lib.bcast(run_id, sizeof(run_id), 0, ms_left(p->deadline_ms));
    }
    if (rc != PF_MPI_OK) {
        free(all);
        pf_err code = rc == PF_MPI_TIMEOUT ? PF_ERR_TIMEOUT : PF_ERR_LOST;
        pf_fail(err, code, "MPI rank %d of %d: exchanging hosts failed: %s",
                rank, size, lib.last_error());
        return pf_fault_set(&run->peers.fault, code,
                            pf_reason_for_err(code, PF_STAGE_TRANSPORT), err);
    }

    p->list = calloc((size_t)size, sizeof(*p->list));
    if (!p->list) {
        free(all);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for %d peers", size);
    }
    for (int i = 0; i < size; i++) {
        all[i].addr[sizeof(all[i].addr) - 1] = '\0';
        all[i].hostname[sizeof(all[i].hostname) - 1] = '\0';
        p->list[i].rank = i;
        snprintf(p->list[i].host, sizeof(p->list[i].host), "%s", all[i].addr);
        snprintf(p->list[i].node, sizeof(p->list[i].node), "%s",
                 all[i].hostname);
    }
    free(all);
    run_id[sizeof(run_id) - 1] = '\0';
    snprintf(p->run_id, sizeof(p->run_id), "%s", run_id);
    p->world = size;
    p->rank = rank;
    pf_info("mpi: rank %d of %d on %s (shim %s, run %s)", rank, size,
            p->list[rank].node, lib.path, p->run_id);
    return PF_OK;
}
