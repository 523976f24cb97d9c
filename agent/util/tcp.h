/* TCP sockets for the rendezvous and the DaemonSet coordinator, which
 * word their own errors: a listening socket, a dial with a deadline, and
 * the keepalive both want. Non-blocking and close-on-exec throughout. */
#ifndef PF_TCP_H
#define PF_TCP_H

#include <stddef.h>
#include <stdint.h>

/* A listening socket on bind_addr:port ("" = any address, preferring one
 * dual-stack IPv6 socket). The socket, or -1 with *saved_errno set (0 and
 * *gai_rc set when the address itself did not resolve). */
int pf_listen_tcp(const char *bind_addr, int port, int backlog,
                  int *saved_errno, int *gai_rc);

/* Try each address of host in turn, each for at most attempt_ms (and never
 * past deadline, util/clock.h). src, when given, is the address to leave
 * from (a multi-homed pod must leave from the one its peer checks); a src
 * that is not local is ignored and the kernel picks. Returns the socket,
 * or -1 with the last reason in why ("Connection refused", "connect timed
 * out", the resolver's words), without host or port: callers add them. */
int pf_dial_tcp(const char *host, int port, const char *src,
                int64_t deadline, int attempt_ms, char *why, size_t len);

/* The numeric address of an accepted peer (sa, len from accept), an
 * IPv4 peer of a dual-stack listener shown as IPv4; "?" if unreadable. */
void pf_tcp_peer_addr(const void *sa, unsigned len, char *out, size_t cap);

/* No Nagle, and keepalive probes that find a peer whose host vanished
 * (no FIN) in about 11 s. */
void pf_tcp_keepalive(int fd);

#endif
