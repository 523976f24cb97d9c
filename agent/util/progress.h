/* Progress lines during long phases (waiting for peers, pods, NCCL init,
 * the sweep, the pairwise re-test), at most one per interval, so a pod
 * that waits minutes says so in `kubectl logs`.
 *
 * Not a terminal (kubectl logs, a file): one plain line each, prefixed like
 * the log. A terminal: one live line rewritten in place with '\r', given
 * its newline when the phase ends. The state is a struct the run carries
 * and passes down; there are no globals here. */
#ifndef PF_PROGRESS_H
#define PF_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct pf_progress {
    FILE *out;                        /* NULL = silent */
    bool live;                        /* out is a terminal */
    int64_t interval_ms;              /* at most one line per interval */
    char phase[48];                   /* "" = no phase under way */
    int64_t last_ms;                  /* phase start, then the last line */
    bool open;                        /* a live line without its newline */
};

/* out NULL or interval_ms <= 0: never prints. */
void pf_progress_init(struct pf_progress *p, FILE *out, bool live,
                      int64_t interval_ms);
/* A phase starts at now_ms (monotonic); its first line is due one
 * interval later, so a phase that ends sooner prints nothing. */
void pf_progress_begin(struct pf_progress *p, const char *phase,
                       int64_t now_ms);
/* Whether a line is due: cheap, so callers build the text only then.
 * False for p NULL. */
bool pf_progress_due(const struct pf_progress *p, int64_t now_ms);
/* Print "phase: text" when due (checked again) and restart the interval. */
void pf_progress_say(struct pf_progress *p, int64_t now_ms, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));
/* The phase is over: a live line gets its newline. */
void pf_progress_end(struct pf_progress *p);

#endif
