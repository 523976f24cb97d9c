#include "tcp.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

int pf_listen_tcp(const char *bind_addr, int port, int backlog,
                  int *saved_errno, int *gai_rc)
{
    struct addrinfo hints = { 0 }, *res = NULL, *ai;
    char portstr[16];
    int fd = -1, saved = 0;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    *saved_errno = 0;
    *gai_rc = getaddrinfo(bind_addr[0] ? bind_addr : NULL, portstr, &hints,
                          &res);
    if (*gai_rc)
        return -1;
    /* Any address: prefer a dual-stack IPv6 socket (first pass). */
    for (int pass = 0; pass < 2 && fd < 0; pass++) {
        for (ai = res; ai && fd < 0; ai = ai->ai_next) {
            int one = 1, zero = 0;
            if (!bind_addr[0] && (pass == 0) != (ai->ai_family == AF_INET6))
                continue;
            if (bind_addr[0] && pass == 1)
                break;
            fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                saved = errno;
                continue;
            }
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            if (ai->ai_family == AF_INET6)
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
            /* the kernel caps the backlog at net.core.somaxconn */
            if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, backlog)) {
                saved = errno;
                close(fd);
                fd = -1;
            }
        }
    }
    freeaddrinfo(res);
    *saved_errno = saved;
    return fd;
}

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

void pf_tcp_keepalive(int fd)
{
    int one = 1, idle = 5, intvl = 2, cnt = 3;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

void pf_tcp_peer_addr(const void *sa, unsigned len, char *out, size_t cap)
{
    char host[NI_MAXHOST];

    if (getnameinfo(sa, (socklen_t)len, host, sizeof(host), NULL, 0,
                    NI_NUMERICHOST)) {
        snprintf(out, cap, "?");
        return;
    }
    /* IPv4 peers of a dual-stack listener show up as ::ffff:a.b.c.d. */
    snprintf(out, cap, "%s", strncmp(host, "::ffff:", 7) ? host : host + 7);
}
