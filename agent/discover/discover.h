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

#endif
