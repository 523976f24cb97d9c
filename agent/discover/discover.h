/* discover: who are my peers and what is my rank. Fills run->peers.
 * Bootstraps: local (N ranks on loopback), static (--peers, --rank),
 * mpi (under mpirun), k8s (API server). */
#ifndef PF_DISCOVER_H
#define PF_DISCOVER_H

#include "../types/run.h"

pf_err pf_discover(struct pf_run *run, char *err);
/* The k8s bootstrap (k8s.c): own pod, selector, world size, list+watch. */
pf_err pf_discover_k8s(struct pf_run *run, char *err);
void pf_peers_free(struct pf_peers *p);
/* The roster the collective starts from: a copy of discovery's table
 * (PF_ERR_NOMEM when there is no memory for it). */
pf_err pf_roster_from_peers(struct pf_roster *r, const struct pf_peers *p,
                            char *err);
void pf_roster_free(struct pf_roster *r);
/* The one node identity: the Node name under Kubernetes, else hostname and
 * address together (a hostname alone repeats across network namespaces
 * and pods of one host). */
bool pf_roster_same_node(const struct pf_roster *r, int a, int b);
int pf_roster_count_nodes(const struct pf_roster *r);

/* `local` discovery in one rank process: cfg.ranks ranks on 127.0.0.1. */
pf_err pf_discover_local(struct pf_run *run, char *err);

/* `static` (static.c): cfg.peers "host:port,..." in rank order, cfg.rank.
 * pf_parse_peers validates the list; errors name the bad entry (exit 2). */
pf_err pf_parse_peers(const char *spec, struct pf_peer **out, int *n,
                      char *err);
pf_err pf_discover_static(struct pf_run *run, char *err);

#endif
