/* names: a configuration value that names something on this host must
 * name something that exists here. A typo in one chart value
 * (--fabric-provider tpc, an address that is not the node's) would
 * otherwise fail the collective and taint every healthy node of the
 * fleet; it is a usage error (ConfigNamesNothing, exit 2) found before
 * anything is written to the cluster. */
#include "probe.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "../reasons.h"
#include "../util/sanitize.h"

/* Providers libfabric has shipped (core and utility, with or without the
 * "ofi_" prefix of the utility ones). A name outside this list is still
 * accepted when this host's libfabric lists it (a provider loaded as a
 * DL plugin). */
static const char *const known_providers[] = {
    "efa", "efa-direct", "tcp", "udp", "shm", "sm2", "sockets", "verbs",
    "psm", "psm2", "psm3", "opx", "cxi", "usnic", "ucx", "lpp", "lnx",
    "linkx", "net", "rxm", "rxd", "mrail", "rstream", "bgq", "gni",
    "netdir", "mlx", "perf", "trace", "hook_debug", "hook_hmem", "hook_noop",
    "dmabuf_peer_mem", "monitor",
};

bool pf_provider_name_known(const char *name, size_t len)
{
    if (len > 4 && !strncasecmp(name, "ofi_", 4)) {
        name += 4;
        len -= 4;
    }
    for (size_t i = 0; i < sizeof(known_providers) / sizeof(known_providers[0]);
         i++)
        if (strlen(known_providers[i]) == len &&
            !strncasecmp(known_providers[i], name, len))
            return true;
    return false;
}

static pf_err check_provider(const struct pf_config *cfg, char *err)
{
    const char *p = cfg->fabric_provider;

    /* "tcp;ofi_rxm": each layer must be a provider. */
    while (*p) {
        size_t len = strcspn(p, ";");
        char one[sizeof(cfg->fabric_provider)];

        snprintf(one, sizeof(one), "%.*s", (int)len, p);
        if (len && !pf_provider_name_known(p, len) &&
            !pf_fabric_lists_provider(cfg, one)) {
            char clean[sizeof(cfg->fabric_provider)];
            pf_sanitize(clean, sizeof(clean), one);
            return pf_fail(err, PF_ERR_USAGE, "%s: fabric_provider '%s' names "
                           "no libfabric provider (known: efa, tcp, shm, "
                           "sockets, verbs, ...; this host's libfabric lists "
                           "none by that name)",
                           pf_reason_name(PF_R_ConfigNamesNothing), clean);
        }
        p += len + (p[len] == ';');
    }
    return PF_OK;
}

/* The wildcard, an address an interface holds, or one in a loopback
 * interface's subnet (Linux answers all of 127.0.0.0/8 on lo). */
static bool addr_on_host(const struct sockaddr *sa, const struct ifaddrs *ifs)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        uint32_t want = a->sin_addr.s_addr;

        if (want == htonl(INADDR_ANY))
            return true;
        for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            uint32_t have, mask;
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
                continue;
            have = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
            if (have == want)
                return true;
            mask = i->ifa_netmask
                       ? ((const struct sockaddr_in *)i->ifa_netmask)
                             ->sin_addr.s_addr
                       : 0xffffffffu;
            if ((i->ifa_flags & IFF_LOOPBACK) && (have & mask) == (want & mask))
                return true;
        }
        return false;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *want =
            &((const struct sockaddr_in6 *)sa)->sin6_addr;

        if (IN6_IS_ADDR_UNSPECIFIED(want))
            return true;
        for (const struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET6)
                continue;
            if (!memcmp(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                        want, sizeof(*want)))
                return true;
        }
    }
    return false;
}

/* One host name or address: it resolves, and to an address of this host. */
static pf_err check_addr(const char *key, int entry, const char *addr,
                         const struct ifaddrs *ifs, char *err)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    char clean[PF_NAME_MAX], at[32] = "";
    bool local = false;
    int gai;

    pf_sanitize(clean, sizeof(clean), addr);
    if (entry > 0)
        snprintf(at, sizeof(at), " entry %d", entry);
    gai = getaddrinfo(addr, NULL, &hints, &res);
    if (gai != 0)
        return pf_fail(err, PF_ERR_USAGE, "%s: %s%s '%s' does not resolve "
                       "(%s)", pf_reason_name(PF_R_ConfigNamesNothing), key,
                       at, clean, gai_strerror(gai));
    for (struct addrinfo *ai = res; ai && !local; ai = ai->ai_next)
        local = addr_on_host(ai->ai_addr, ifs);
    freeaddrinfo(res);
    if (!local)
        return pf_fail(err, PF_ERR_USAGE, "%s: %s%s '%s' is not an address "
                       "of this host (no interface holds it)",
                       pf_reason_name(PF_R_ConfigNamesNothing), key, at,
                       clean);
    return PF_OK;
}

static pf_err check_addrs(const struct pf_config *cfg, char *err)
{
    const char *addrs = cfg->fabric_addrs ? cfg->fabric_addrs : "";
    struct ifaddrs *ifs = NULL;
    pf_err rc = PF_OK;
    int entry = 0;

    if (!cfg->bind_addr[0] && !addrs[0])
        return PF_OK;
    if (getifaddrs(&ifs) != 0)
        /* Nothing to compare with: the engine's own bind will say. */
        return PF_OK;
    if (cfg->bind_addr[0])
        rc = check_addr("bind_addr", 0, cfg->bind_addr, ifs, err);
    for (const char *p = addrs; rc == PF_OK && *p; ) {
        size_t len = strcspn(p, ",");
        char one[PF_NAME_MAX];

        snprintf(one, sizeof(one), "%.*s", (int)len, p);
        rc = check_addr("fabric_addrs", ++entry, one, ifs, err);
        p += len + (p[len] == ',');
    }
    freeifaddrs(ifs);
    return rc;
}

pf_err pf_probe_config_names(const struct pf_config *cfg, char *err)
{
    pf_err rc = PF_OK;

    if (cfg->fabric_provider[0])
        rc = check_provider(cfg, err);
    /* Addresses matter only to a command that opens the fabric. */
    if (rc == PF_OK && cfg->command != PF_CMD_NODE)
        rc = check_addrs(cfg, err);
    return rc;
}
