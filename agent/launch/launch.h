/* launch: the run's stage order (pipeline.c) and the process supervision
 * around it: the signal state (interrupt.h), the `local` launcher that
 * forks the rank processes, and the DaemonSet's idle wait after the
 * verdict is on the Node. main calls into here; no stage does. */
#ifndef PF_LAUNCH_H
#define PF_LAUNCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../types/run.h"

/* node, run, local after config: signals taken, the Node marked (k8s),
 * probe -> [discover -> collective] -> verdict -> publish, then the
 * DaemonSet's idle wait. Returns the exit code. */
int pf_run_stages(struct pf_run *run, bool collective);
/* What would be found only after the whole run, or would make a healthy
 * node fail, is checked before anything runs or is written: the output
 * paths (a file that is regular or missing, a directory) and the values
 * that name something on this host. */
pf_err pf_prerun_checks(const struct pf_config *cfg, char *err);

/* `local`: fork cfg.ranks rank processes. Returns in each child with
 * *is_child = true and cfg.rank / bootstrap set for it; in the parent
 * waits (bounded by cfg.timeout_s) and sets *exit_code to the run's exit
 * code (rank 0's, or the worst if a rank crashed). */
pf_err pf_local_spawn(struct pf_run *run, bool *is_child, int *exit_code,
                      char *err);
/* How many ranks `local` starts (launch/fit.c): cfg.ranks when given, else
 * one per GPU the NCCL engine would drive (counted in a child process),
 * else 2; a usage error naming the binding limit when the host cannot
 * hold that many. */
pf_err pf_local_ranks(struct pf_run *run, int *n, char *err);

/* What the host offers rank processes; 0 = no limit known. */
struct pf_host_room {
    uint64_t mem_avail;               /* bytes, /proc/meminfo MemAvailable */
    uint64_t nproc;                   /* RLIMIT_NPROC soft (not for root) */
    uint64_t nofile;                  /* RLIMIT_NOFILE soft, raised to hard */
};
void pf_host_room_read(struct pf_host_room *h);
/* The most local ranks h holds at --max-bytes max_bytes; why names the
 * limit that binds. */
int pf_local_room(const struct pf_host_room *h, uint64_t max_bytes,
                  char *why, size_t len);

/* A TCP port free on loopback right now (bind port 0, read it back). */
pf_err pf_free_port(int *port, char *err);

/* SIGTERM and SIGINT, taken by one thread for the whole process: they are
 * blocked in the caller before the thread starts, so every thread created
 * later (libcurl, NCCL, libfabric) inherits the block and no library's
 * handler ever runs. fn runs on that thread, once per signal; it may
 * _exit. No handler, no global flag: the state fn needs is ctx, owned by
 * the caller (launch/interrupt.h, monitor/command.c). */
struct pf_sigwatch {
    pthread_t thread;
    bool running;
    atomic_int stop;
    void (*fn)(void *ctx, int sig);
    void *ctx;
};

pf_err pf_sigwatch_start(struct pf_sigwatch *w, void (*fn)(void *ctx, int sig),
                         void *ctx, char *err);
/* Ends the thread (within 100 ms) and joins it; the signals stay blocked,
 * for pf_idle_wait to take. */
void pf_sigwatch_stop(struct pf_sigwatch *w);

/* How long the DaemonSet pod waits to be removed before exiting anyway. */
#define PF_IDLE_MAX_MS (3600 * 1000)
/* DaemonSet mode: after publishing, wait for the pod to be removed:
 * returns on SIGTERM/SIGINT or after max_ms. */
void pf_idle_wait(int64_t max_ms);

#endif
