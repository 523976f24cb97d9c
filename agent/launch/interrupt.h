/* launch/interrupt: what the pipeline and the signal thread share while a
 * run (node, run, local) goes on; pf_run_stages (pipeline.c) owns it.
 *
 *   RUN          no verdict yet: a signal cancels the API requests, rolls
 *                the Node forward (status=error, Interrupted) and exits.
 *   PUBLISH      the verdict is being written: a signal lets it finish,
 *                within PF_SIGNAL_GRACE_MS, then exits either way.
 *   DONE         written: a signal only ends the DaemonSet's idle wait.
 *   INTERRUPTED  the signal thread owns the Node: the pipeline writes
 *                nothing more and waits to be ended. */
#ifndef PF_LAUNCH_INTERRUPT_H
#define PF_LAUNCH_INTERRUPT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "../publish/publish.h"
#include "../types/run.h"

enum pf_phase { PF_PHASE_RUN, PF_PHASE_PUBLISH, PF_PHASE_DONE,
                PF_PHASE_INTERRUPTED };

struct pf_interrupt {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    enum pf_phase phase;
    int sig;                          /* first signal taken, 0 none */
    bool k8s;                         /* the verdict goes on a Node */
    char node[PF_NAME_MAX];           /* that Node, once known */
    struct pf_k8s_target target;      /* read before the thread starts */
    atomic_int cancel;                /* read by the API client */
    const struct pf_run *run;         /* the signal thread reads cfg only */
};

/* Phase RUN, no signal, the Node's target read when the verdict goes on
 * one (before any thread exists). */
void pf_interrupt_init(struct pf_interrupt *it, const struct pf_run *run);
void pf_interrupt_destroy(struct pf_interrupt *it);
/* The Node the signal thread rolls forward, once the mark named it. */
void pf_interrupt_set_node(struct pf_interrupt *it, const char *node);
/* The exit code of a run a signal stopped (the Interrupted reason's). */
int pf_interrupted_exit_code(void);
/* The signal thread's callback (launch/sigwatch.c); ctx is the
 * struct pf_interrupt. It _exits unless the verdict is already written. */
void pf_interrupt_on_signal(void *ctx, int sig);
/* The pipeline may write the verdict unless a signal took the Node: in
 * that case it waits for the signal thread to end the process. */
void pf_interrupt_enter_publish(struct pf_interrupt *it);
/* The verdict is written; returns the signal taken meanwhile, 0 none. */
int pf_interrupt_leave_publish(struct pf_interrupt *it);

#endif
