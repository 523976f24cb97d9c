/* launch: process supervision that main drives around the pipeline: the
 * `local` launcher that forks the rank processes, and the DaemonSet's idle
 * wait after the verdict is on the Node. No stage calls into here. */
#ifndef PF_LAUNCH_H
#define PF_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "../pf.h"

/* `local`: fork cfg.ranks rank processes. Returns in each child with
 * *is_child = true and cfg.rank / bootstrap set for it; in the parent
 * waits (bounded by cfg.timeout_s) and sets *exit_code to the run's exit
 * code (rank 0's, or the worst if a rank crashed). */
pf_err pf_local_spawn(struct pf_run *run, bool *is_child, int *exit_code,
                      char *err);
/* A TCP port free on loopback right now (bind port 0, read it back). */
pf_err pf_free_port(int *port, char *err);

/* How long the DaemonSet pod waits to be removed before exiting anyway. */
#define PF_IDLE_MAX_MS (3600 * 1000)
/* DaemonSet mode: after publishing, wait for the pod to be removed:
 * returns on SIGTERM/SIGINT or after max_ms. */
void pf_idle_wait(int64_t max_ms);

#endif
