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
#include "../util/histdir.h"

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
