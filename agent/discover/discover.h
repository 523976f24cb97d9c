/* discover: who are my peers and what is my rank. Fills run->peers.
 * Bootstraps: local (N ranks on loopback), static (--peers, --rank),
 * mpi (under mpirun), k8s (API server). */
#ifndef PF_DISCOVER_H
#define PF_DISCOVER_H

#include "../pf.h"

pf_err pf_discover(struct pf_run *run, char *err);
/* The k8s bootstrap (k8s.c): own pod, selector, world size, list+watch. */
pf_err pf_discover_k8s(struct pf_run *run, char *err);
void pf_peers_free(struct pf_peers *p);

/* `local`: fork cfg.ranks rank processes. Returns in each child with
 * *is_child = true and cfg.rank / bootstrap set for it; in the parent
 * waits (bounded by cfg.timeout_s) and sets *exit_code to the run's exit
 * code (rank 0's, or the worst if a rank crashed). */
pf_err pf_local_spawn(struct pf_run *run, bool *is_child, int *exit_code,
                      char *err);

/* `local` discovery in one rank process: cfg.ranks ranks on 127.0.0.1. */
pf_err pf_discover_local(struct pf_run *run, char *err);
/* A TCP port free on loopback right now (bind port 0, read it back). */
pf_err pf_free_port(int *port, char *err);

/* `static` (static.c): cfg.peers "host:port,..." in rank order, cfg.rank.
 * pf_parse_peers validates the list; errors name the bad entry (exit 2). */
pf_err pf_parse_peers(const char *spec, struct pf_peer **out, int *n,
                      char *err);
pf_err pf_discover_static(struct pf_run *run, char *err);

#endif
