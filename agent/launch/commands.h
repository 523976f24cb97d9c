/* launch/commands: the commands main dispatches to that are not the run's
 * pipeline (pf_run_stages) nor the monitor (monitor/monitor.h). Each
 * returns the process's exit code. */
#ifndef PF_LAUNCH_COMMANDS_H
#define PF_LAUNCH_COMMANDS_H

#include "../types/run.h"

/* `efa-preflight reasons [--json|--markdown]`, before any config: argv[0]
 * is "reasons". */
int pf_reasons_command(int argc, char **argv);
/* `efa-preflight version` (with the report schema). */
int pf_version_command(struct pf_run *run);
/* `efa-preflight history`: this node's past runs, newest first. */
int pf_history_command(struct pf_run *run);
/* `efa-preflight webhook`: serve until SIGTERM/SIGINT. The config becomes
 * the webhook's pf_webhook_opts here: webhook/ never sees the config. */
int pf_webhook_command(struct pf_run *run);
/* `efa-preflight catalog [--json]`: the loaded catalog. */
int pf_catalog_command(struct pf_run *run);
/* `efa-preflight node` and `run`: the pipeline with or without peers. */
int pf_node_command(struct pf_run *run);
int pf_run_command(struct pf_run *run);
/* `efa-preflight local`: fork the ranks; each runs the pipeline. */
int pf_local_command(struct pf_run *run);

#endif
