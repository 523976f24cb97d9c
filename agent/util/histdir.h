/* The history directory (--history-dir): one JSON report per run, named
 * by its time so that names sort by time. The publisher writes it
 * (publish/history.h), the fleet baseline and `efa-preflight history` read
 * it; this is the part they share. */
#ifndef PF_HISTDIR_H
#define PF_HISTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "err.h"

/* Length of a history file name, "20260122T010203.123456Z.json" + NUL. */
#define PF_HISTORY_NAME 32

/* The file name of a report written at t (UTC, microseconds). */
void pf_history_name(const struct timespec *t, char out[PF_HISTORY_NAME]);
/* Whether name is one of ours (only those are ever read or removed). */
bool pf_history_is_name(const char *name);

/* Our file names in dir, newest first (pf_history_names_free them);
 * PF_ERR_USAGE when dir is missing. */
pf_err pf_history_list(const char *dir, char ***out, size_t *n, char *err);
void pf_history_names_free(char **names, size_t n);

#endif
