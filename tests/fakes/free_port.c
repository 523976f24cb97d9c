/* A port the kernel hands out (free_port.h). */
#include "free_port.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int pf_test_free_port(void)
{
    struct sockaddr_in6 s6 = { .sin6_family = AF_INET6,
                               .sin6_addr = IN6ADDR_ANY_INIT };
    struct sockaddr_in s4 = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_ANY) };
    struct sockaddr_storage got;
    socklen_t len = sizeof(got);
    int zero = 0, port = 0;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
                    bind(fd, (struct sockaddr *)&s6, sizeof(s6)))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {                     /* no IPv6 here: IPv4 only */
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
        cr_assert_eq(bind(fd, (struct sockaddr *)&s4, sizeof(s4)), 0,
                     "bind to port 0: %s", strerror(errno));
    }
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&got, &len), 0,
                 "getsockname: %s", strerror(errno));
    port = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&got)->sin_port);
    close(fd);
    cr_assert(port > 0 && port < 65536, "the kernel gave port %d", port);
    return port;
}
