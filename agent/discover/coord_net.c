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
#include "../util/netlisten.h"

static void addr_string(const struct sockaddr *sa, socklen_t len, char *out,
                        size_t cap)
{
    char host[NI_MAXHOST];

    if (getnameinfo(sa, len, host, sizeof(host), NULL, 0, NI_NUMERICHOST)) {
        snprintf(out, cap, "?");
        return;
    }
    /* IPv4 peers of a dual-stack listener show up as ::ffff:a.b.c.d. */
    snprintf(out, cap, "%s", strncmp(host, "::ffff:", 7) ? host : host + 7);
}

static void tune(int fd)
{
    int one = 1, idle = 5, intvl = 2, cnt = 3;

    /* Keepalive notices a peer whose host vanished (no FIN). */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

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
    tune(fd);
    addr_string((struct sockaddr *)&ss, sl, addr, cap);
    return fd;
}

pf_err pf_co_dial(const char *host, int port, const char *src,
                  int64_t deadline, int *out, char *err)
{
    struct addrinfo hints = { 0 }, *res = NULL, *ai;
    char portstr[16];
    int rc, fd = -1;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc)
        return pf_fail(err, PF_ERR_IO, "%s: %s", host, gai_strerror(rc));
    pf_fail(err, PF_ERR_IO, "no usable address for %s", host);
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        struct pollfd p;
        socklen_t sl = sizeof(int);
        int soerr = 0;
        int64_t ms;

        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
        if (fd < 0) {
            pf_fail(err, PF_ERR_IO, "socket: %s", strerror(errno));
            continue;
        }
        /* Leave from our own pod address, the one the coordinator checks
         * (a host with several interfaces might pick another). */
        if (src && *src) {
            struct addrinfo bh = { 0 }, *b = NULL;
            bh.ai_family = ai->ai_family;
            bh.ai_socktype = SOCK_STREAM;
            bh.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
            if (getaddrinfo(src, NULL, &bh, &b) == 0) {
                /* Not a local address: let the kernel pick. */
                if (bind(fd, b->ai_addr, b->ai_addrlen))
                    pf_debug("coordinator: cannot leave from %s: %s", src,
                             strerror(errno));
                freeaddrinfo(b);
            }
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno != EINPROGRESS) {
            pf_fail(err, PF_ERR_IO, "connect %s:%d: %s", host, port,
                    strerror(errno));
            close(fd);
            fd = -1;
            continue;
        }
        ms = pf_ms_left(deadline);
        p = (struct pollfd){ .fd = fd, .events = POLLOUT };
        if (ms <= 0 || poll(&p, 1, (int)(ms > 60000 ? 60000 : ms)) <= 0) {
            pf_fail(err, PF_ERR_IO, "connect %s:%d timed out", host, port);
            soerr = -1;
        } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
            pf_fail(err, PF_ERR_IO, "connect %s:%d: %s", host, port,
                    strerror(soerr ? soerr : errno));
            soerr = -1;
        }
        if (soerr) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return PF_ERR_IO;
    tune(fd);
    *out = fd;
    return PF_OK;
}
