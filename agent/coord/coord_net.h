/* Sockets for the DaemonSet coordinator (coord.c). Every fd is
 * non-blocking, as net/wire.h expects. */
#ifndef PF_COORD_NET_H
#define PF_COORD_NET_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* Listen on bind_addr ("" = any, dual stack) : port. */
pf_err pf_co_listen(const char *bind_addr, int port, int *out, char *err);
/* Accept one connection (-1: none waiting); addr receives the peer's
 * numeric address, IPv4-mapped IPv6 shown as IPv4. */
int pf_co_accept(int lfd, char *addr, size_t cap);
/* Connect to host:port from src ("" = any) before deadline. */
pf_err pf_co_dial(const char *host, int port, const char *src,
                  int64_t deadline, int *out, char *err);

#endif
