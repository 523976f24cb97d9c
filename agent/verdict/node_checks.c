#include "verdict.h"

/* Placeholder until the node checks land (issue: Agent foundation). */
void pf_verdict_node(struct pf_run *run) { (void)run; }
