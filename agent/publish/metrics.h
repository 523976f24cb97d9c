/* Prometheus metrics of a finished run, exported the way batch jobs on a
 * node do it: a file for node-exporter's textfile collector
 * (--metrics-textfile, written atomically) and a push to a Pushgateway
 * (--pushgateway, grouping key job/instance: pushgateway.h). Names follow Prometheus'
 * rules: the efa_preflight_ prefix, base units as suffixes (seconds,
 * bytes, bytes_per_second), and gauges throughout: every value describes
 * the last run, nothing counts up across runs. docs/reference/metrics.md lists
 * them. */
#ifndef PF_METRICS_H
#define PF_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "../types/run.h"

/* The text exposition format (0.0.4) of a finished run, at now_s (Unix
 * time). Every family's HELP and TYPE lines are written even when it has
 * no sample (a `node` run has no busbw), so the set of names is fixed.
 * Every sample carries the label node (pf_metrics_node).
 * malloc'd; NULL when out of memory. */
char *pf_metrics_text(const struct pf_run *run, double now_s);
/* The same for the verdict v as published (publish.h, pf_publish). */
char *pf_metrics_text_of(const struct pf_run *run, const struct pf_verdict *v,
                         double now_s);

/* The value of the node label on every sample, and of the Pushgateway's
 * instance: --node-name, else the hostname. */
const char *pf_metrics_node(const struct pf_run *run);

/* The family names pf_metrics_text writes, in order; NULL past the last. */
const char *pf_metrics_family(size_t i);

/* A label value escaped per the exposition format (\ " and newline);
 * false when out does not hold it. */
bool pf_metrics_escape(const char *in, char *out, size_t cap);

/* Write text to path atomically (temporary file + rename in the same
 * directory, which node-exporter never reads half-written). */
pf_err pf_metrics_write_textfile(const char *path, const char *text,
                                 char *err);

#endif
