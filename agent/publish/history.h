/* History on the node: every run leaves its JSON report in a directory
 * (--history-dir, a hostPath in Kubernetes) under a name that sorts by
 * time, the newest history_keep kept; `efa-preflight history` reads them
 * back, newest first, with a small trend of busbw. */
#ifndef PF_HISTORY_H
#define PF_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "../util/err.h"

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

/* Write json atomically as DIR/<name of t> (the directory is created if
 * only its last part is missing), then remove the oldest of ours beyond
 * keep. */
pf_err pf_history_append(const char *dir, int keep, const char *json,
                         const struct timespec *t, char *err);

/* `efa-preflight history`: the runs in dir, newest first, as a table with
 * a busbw trend, or (json) an array of one summary per run. utf8 picks
 * the trend's block characters over ASCII ones. PF_ERR_USAGE when dir
 * cannot be read. */
pf_err pf_history_print(const char *dir, bool json, bool utf8, FILE *out,
                        char *err);

/* The trend of n values (NaN = no value) into out: one character each,
 * scaled between their min and max. */
void pf_history_sparkline(const double *v, int n, bool utf8, char *out,
                          size_t cap);

#endif
