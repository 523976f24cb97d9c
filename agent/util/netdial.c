#include "netdial.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

/* Leave from src when it is one of this host's addresses. */
static void bind_source(int fd, int family, const char *src)
{
    struct addrinfo hints = { 0 }, *b = NULL;

    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    if (getaddrinfo(src, NULL, &hints, &b) == 0) {
        (void)bind(fd, b->ai_addr, b->ai_addrlen);
        freeaddrinfo(b);
    }
}

/* Wait for a non-blocking connect; 0 when it completed. */
static int wait_connected(int fd, int64_t deadline, int attempt_ms,
                          char *why, size_t len)
{
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int64_t ms = pf_ms_left(deadline);
    socklen_t sl = sizeof(int);
    int soerr = 0;

    if (ms > attempt_ms)
        ms = attempt_ms;
    if (ms <= 0 || poll(&p, 1, (int)ms) <= 0) {
        snprintf(why, len, "connect timed out");
        return -1;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
        snprintf(why, len, "%s", strerror(soerr ? soerr : errno));
        return -1;
    }
    return 0;
}

int pf_dial_tcp(const char *host, int port, const char *src,
                int64_t deadline, int attempt_ms, char *why, size_t len)
{
    struct addrinfo hints = { 0 }, *res = NULL, *ai;
    char portstr[16];
    int rc, fd = -1;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc) {
        snprintf(why, len, "%s", gai_strerror(rc));
        return -1;
    }
    snprintf(why, len, "no usable address");
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
        if (fd < 0) {
            snprintf(why, len, "socket: %s", strerror(errno));
            continue;
        }
        if (src && src[0])
            bind_source(fd, ai->ai_family, src);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno != EINPROGRESS)
            snprintf(why, len, "%s", strerror(errno));
        else if (wait_connected(fd, deadline, attempt_ms, why, len) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}
