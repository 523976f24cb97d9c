#include "netlisten.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

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
