/* NCCL's own INFO log, captured to learn which network and transports it
 * really chose (the plugin may be missing and NCCL silently falls back to
 * TCP sockets).
 *
 * pf_nccl_log_arm runs before the process's first NCCL call that logs
 * (NCCL reads these variables once): NCCL_DEBUG=INFO unless already INFO
 * or TRACE, NCCL_DEBUG_SUBSYS=INIT,NET unless set, and NCCL_DEBUG_FILE
 * pointing at a private file in a fresh temp folder - unless the user set
 * NCCL_DEBUG_FILE, in which case their file (with %h and %p expanded as
 * NCCL does) is read instead and left in place. Setting the environment is
 * the one interface NCCL offers for this. pf_nccl_log_disarm restores the
 * variables it changed and removes the private file.
 *
 * Inter-node: NCCL connects a pair of ranks over NET only when it cannot
 * use P2P or SHM, i.e. when it treats the peer as remote (another host, or
 * on one host another process with P2P/SHM disabled or unusable). So any
 * channel via NET/Socket counts as inter-node traffic over TCP: that is how
 * two "pods" on one test host with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
 * are reported as SocketFallback, as they would be across nodes. */
#ifndef PF_NCCL_LOG_H
#define PF_NCCL_LOG_H

#include <stdbool.h>

#include "../engine.h"

struct pf_nccl_facts {
    char version[48];            /* "2.28.9+cuda13.0", "" when not seen */
    bool plugin_loaded;          /* an external net plugin loaded */
    bool plugin_missing;         /* "NET/Plugin: Could not find" seen */
    char plugin[64];             /* name of the loaded plugin, if given */
    char network[32];            /* "Using network X" */
    int channels;                /* channel connection lines */
    int net_channels;            /* via NET/... (any network) */
    int socket_channels;         /* via NET/Socket */
    int gdr_channels;            /* via NET/.../GDRDMA */
    int p2p_channels, shm_channels;
    char transports[128];        /* distinct, NET first: "NET/Socket,P2P/CUMEM/read" */
};

struct pf_nccl_log {
    char path[PF_PATH_MAX];      /* the file NCCL writes, expanded */
    char dir[PF_PATH_MAX];       /* private temp folder, "" for the user's file */
    bool users_file;
    bool set_debug, set_subsys, set_file; /* what disarm must undo */
    char old_debug[32];          /* the user's NCCL_DEBUG, "" when unset */
};

pf_err pf_nccl_log_arm(struct pf_nccl_log *l, char *err);
/* Read and parse the log written so far. A missing file is PF_ERR_NOTFOUND
 * (NCCL never logged: an old NCCL or a failure before init). */
pf_err pf_nccl_log_read(const struct pf_nccl_log *l, struct pf_nccl_facts *f,
                        char *err);
void pf_nccl_log_disarm(struct pf_nccl_log *l);

/* Parse NCCL INFO text (any number of lines, any ranks). */
void pf_nccl_log_parse(const char *text, struct pf_nccl_facts *f);

/* Copy what the verdict needs into the engine's facts: transport,
 * nccl_network, net_plugin_loaded, net_gdr, inter_node_socket. */
void pf_nccl_facts_apply(const struct pf_nccl_facts *f,
                         struct pf_fabric_facts *e);

/* Expand NCCL's %h (host name up to the first '.') and %p (pid) in a
 * NCCL_DEBUG_FILE value, as NCCL does. */
pf_err pf_nccl_log_expand(const char *pattern, const char *host, long pid,
                          char *out, size_t len, char *err);

#endif
