/* A TCP connection to host:port, non-blocking and close-on-exec. Shared by
 * the rendezvous and the DaemonSet coordinator, which word their own
 * errors. */
#ifndef PF_NETDIAL_H
#define PF_NETDIAL_H

#include <stddef.h>
#include <stdint.h>

/* Try each address of host in turn, each for at most attempt_ms (and never
 * past deadline, util/clock.h). src, when given, is the address to leave
 * from (a multi-homed pod must leave from the one its peer checks); a src
 * that is not local is ignored and the kernel picks. Returns the socket,
 * or -1 with the last reason in why ("Connection refused", "connect timed
 * out", the resolver's words), without host or port: callers add them. */
int pf_dial_tcp(const char *host, int port, const char *src,
                int64_t deadline, int attempt_ms, char *why, size_t len);

#endif
