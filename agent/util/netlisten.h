/* A listening TCP socket on bind_addr:port ("" = any address, preferring
 * one dual-stack IPv6 socket), non-blocking and close-on-exec. Shared by
 * the rendezvous and the DaemonSet coordinator, which word their own
 * errors. */
#ifndef PF_NETLISTEN_H
#define PF_NETLISTEN_H

/* The socket, or -1 with *saved_errno set (0 and *gai_rc set when the
 * address itself did not resolve). */
int pf_listen_tcp(const char *bind_addr, int port, int backlog,
                  int *saved_errno, int *gai_rc);

#endif
