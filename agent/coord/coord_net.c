/* Sockets of the DaemonSet coordinator: listen, accept with the peer's
 * address, dial with a deadline (coord_net.h). */
#include "coord_net.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "../util/tcp.h"

pf_err pf_co_listen(const char *bind_addr, int port, int *out, char *err)
{
    int saved, gai, fd = pf_listen_tcp(bind_addr, port, 512, &saved, &gai);

    if (fd < 0 && gai)
        return pf_fail(err, PF_ERR_USAGE, "coordinator address %s:%d: %s",
                       bind_addr[0] ? bind_addr : "*", port, gai_strerror(gai));
    if (fd < 0)
        return pf_fail(err, saved == EADDRINUSE ? PF_ERR_USAGE : PF_ERR_IO,
                       "the coordinator cannot listen on port %d (--port + "
                       "1): %s", port, strerror(saved));
    *out = fd;
    return PF_OK;
}

int pf_co_accept(int lfd, char *addr, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);

    if (fd < 0)
        return -1;
    pf_tcp_keepalive(fd);
    pf_tcp_peer_addr(&ss, sl, addr, cap);
    return fd;
}

pf_err pf_co_dial(const char *host, int port, const char *src,
                  int64_t deadline, int *out, char *err)
{
    char why[PF_ERRLEN / 2];
    /* Leave from our own pod address, the one the coordinator checks. */
    int fd = pf_dial_tcp(host, port, src, deadline, 60000, why, sizeof(why));

    if (fd < 0)
        return pf_fail(err, PF_ERR_IO, "connect %s:%d: %s", host, port, why);
    pf_tcp_keepalive(fd);
    *out = fd;
    return PF_OK;
}
