/* publish: stdout table + summary, JSON report (--json / --report FILE), and
 * in k8s mode the Node's labels, conditions, Event and taint. Publishers
 * only read the finished run. */
#ifndef PF_PUBLISH_H
#define PF_PUBLISH_H

#include <stdio.h>

#include "../pf.h"

/* Writes the Node first (k8s), then stdout and the report, so all three
 * tell the same verdict; *node_written says whether the Node got it. */
pf_err pf_publish(struct pf_run *run, bool *node_written, char *err);

/* Pieces, for tests and for the commands that need only one. */
void pf_publish_table(const struct pf_run *run, FILE *out);
/* Returns a malloc'd JSON document (schema docs/report-schema.md). */
char *pf_report_json(const struct pf_run *run);
/* Write labels/conditions/event/taint to the Node (node.c). */
pf_err pf_publish_node(const struct pf_run *run, char *err);

#endif
