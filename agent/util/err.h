/* One error type for the whole agent.
 *
 * Every function that can fail returns a pf_err and, on failure, writes a
 * one-line message into a caller's buffer of PF_ERRLEN bytes. Messages name
 * what is wrong and where (file:line, key, peer), never a secret. */
#ifndef PF_ERR_H
#define PF_ERR_H

#include <stddef.h>

#define PF_ERRLEN 512

typedef enum {
    PF_OK = 0,
    PF_ERR_USAGE,       /* bad command line / config value: exit 2 */
    PF_ERR_CONFIG,      /* bad config file or catalog: exit 2 */
    PF_ERR_IO,          /* file or socket I/O */
    PF_ERR_SYS,         /* other system call failure */
    PF_ERR_NOMEM,
    PF_ERR_NOTFOUND,    /* a thing that should exist does not */
    PF_ERR_UNSUPPORTED, /* library missing / too old / not built in */
    PF_ERR_TIMEOUT,     /* a deadline passed (PeerTimeout and friends) */
    PF_ERR_REJECTED,    /* peer rejected: wrong secret, run id, membership */
    PF_ERR_LOST,        /* a peer connection dropped mid-run */
    PF_ERR_PROTOCOL,    /* malformed message from a peer or server */
    PF_ERR_DATA,        /* collective produced wrong data */
    PF_ERR_API,         /* Kubernetes API / IMDS failure */
    PF_ERR_FORBIDDEN,   /* API said 403: RBAC */
    PF_ERR_UNAUTHORIZED,/* API said 401: the token itself */
    PF_ERR_ENGINE,      /* NCCL / libfabric / CUDA call failed */
} pf_err;

const char *pf_err_name(pf_err e);

/* Format into msg (PF_ERRLEN bytes) and return code. msg may be NULL. */
pf_err pf_fail(char *msg, pf_err code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepend "prefix: " to an existing message in place. */
void pf_err_prefix(char *msg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
