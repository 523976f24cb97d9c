/* efa-preflight: prove a node's EFA fabric works and is fast, then say so.
 *
 *   efa-preflight node      node checks only (no network)
 *   efa-preflight run       node checks + collective with peers
 *   efa-preflight local     N ranks on this machine (the embedded default)
 *   efa-preflight catalog   print the effective instance catalog
 *   efa-preflight reasons   print the table of reasons [--json|--markdown]
 *   efa-preflight history   this node's past runs, newest first
 *   efa-preflight baseline  the fleet's baseline per type and size
 *   efa-preflight webhook   admission webhook that injects the gate
 *   efa-preflight monitor   NIC counters and health between jobs (DaemonSet)
 *   efa-preflight version
 *
 * Exit codes: 0 pass, 1 validation failed, 2 usage/config error,
 * 3 infrastructure error, 4 a peer failed (PF_EXIT_CODES_HELP). Every
 * code but a pass is a class's (pf_class_exit_code): the deciding reason's
 * for a run, pf_err_class's for an error with no verdict to decide it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf.h"
#include "baseline/baseline.h"
#include "baseline/command.h"
#include "collective/collective.h"
#include "config/catalog.h"
#include "config/config.h"
#include "config/run_clock.h"
#include "discover/discover.h"
#include "launch/commands.h"
#include "launch/launch.h"
#include "monitor/monitor.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/version.h"

extern char **environ;

/* What a command needs before it runs: nothing but its config, the
 * catalog (under the run's one deadline), or the pre-run checks first. */
enum prep { PREP_CONFIG, PREP_CATALOG, PREP_RUN };

static const struct {
    const char *name;
    enum pf_command cmd;
    enum prep prep;
    int (*fn)(struct pf_run *run);
    const char *help;
} commands[] = {
    { "node", PF_CMD_NODE, PREP_RUN, pf_node_command,
      "check this node's EFA setup against its instance type" },
    { "run", PF_CMD_RUN, PREP_RUN, pf_run_command,
      "node checks, then an all_reduce with peers (static, mpi, k8s)" },
    { "local", PF_CMD_LOCAL, PREP_RUN, pf_local_command,
      "node checks, then an all_reduce across N local ranks" },
    { "catalog", PF_CMD_CATALOG, PREP_CATALOG, pf_catalog_command,
      "print the effective instance-type catalog "
      "and its floors at 2 to 1024 nodes [--json]" },
    { "version", PF_CMD_VERSION, PREP_CONFIG, pf_version_command,
      "print the version" },
    { "history", PF_CMD_HISTORY, PREP_CONFIG, pf_history_command,
      "this node's past runs from --history-dir, "
      "newest first, with a busbw trend [--json]" },
    { "baseline", PF_CMD_BASELINE, PREP_CONFIG, pf_baseline_command,
      "the fleet's baseline per type and size, from the "
      "ConfigMap, --baseline or --history-dir [--json|--reset]" },
    { "webhook", PF_CMD_WEBHOOK, PREP_CONFIG, pf_webhook_command,
      "mutating admission webhook: injects the gate into "
      "every Pod that requests EFA" },
    { "monitor", PF_CMD_MONITOR, PREP_CATALOG, pf_monitor_command,
      "export every EFA NIC's counters, judge their "
      "health, re-validate idle nodes (until SIGTERM)" },
    /* Handled before the config stage: it reads no option but its format. */
    { "reasons", PF_CMD_VERSION, PREP_CONFIG, NULL,
      "print every reason, its class, exit code "
      "and remedy [--json|--markdown]" },
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: efa-preflight <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'efa-preflight <command> --help' lists a command's options.\n"
                 PF_EXIT_CODES_HELP);
}

/* Everything the run holds on the heap, then the run. */
static void run_free(struct pf_run *run)
{
    pf_coll_free(&run->coll);
    pf_base_free(&run->baseline);
    pf_peers_free(&run->peers);
    pf_catalog_free(&run->catalog);
    pf_config_free(&run->cfg);
    free(run);
}

/* Config loaded: what the command needs first, then the command. */
static int dispatch(struct pf_run *run, size_t c)
{
    char err[PF_ERRLEN] = "";
    int code;

    if (commands[c].prep == PREP_CONFIG)
        return commands[c].fn(run);
    if (commands[c].prep == PREP_RUN &&
        pf_prerun_checks(&run->cfg, err) != PF_OK) {
        pf_say("%s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    /* One deadline for the whole run, probe and publishing included. */
    pf_run_start_clock(run);
    if (pf_catalog_load(&run->catalog, run->cfg.catalog_file, err) != PF_OK) {
        pf_say("%s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    code = commands[c].fn(run);
    if (run->cfg.on_failure == PF_ON_FAILURE_CONTINUE && code == PF_EXIT_FAIL)
        code = PF_EXIT_PASS;
    return code;
}

int main(int argc, char **argv)
{
    char err[PF_ERRLEN] = "";
    struct pf_run *run;
    size_t c = N_COMMANDS;
    bool want_help = false;
    int code;

    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? pf_class_exit_code(PF_CLASS_USAGE) : PF_EXIT_PASS;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("efa-preflight %s\n", PF_VERSION);
        return PF_EXIT_PASS;
    }
    if (!strcmp(argv[1], "reasons"))
        return pf_reasons_command(argc - 1, argv + 1);
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            c = i;
    if (c == N_COMMANDS) {
        pf_say("unknown command '%s'", argv[1]);
        usage(stderr);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }

    run = calloc(1, sizeof(*run));
    if (!run) {
        fprintf(stderr, "efa-preflight: out of memory\n");
        return pf_class_exit_code(PF_CLASS_INFRA);
    }
    pf_rfc3339(run->started_at, 0);
    if (pf_config_load(&run->cfg, commands[c].cmd, argc - 1, argv + 1,
                       environ, &want_help, err) != PF_OK) {
        pf_say("%s", err);
        fprintf(stderr, "try 'efa-preflight %s --help'\n",
                pf_command_name(commands[c].cmd));
        run_free(run);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    if (want_help) {
        pf_config_usage(commands[c].cmd, stdout);
        run_free(run);
        return PF_EXIT_PASS;
    }
    pf_log_set_level(run->cfg.log_level);
    /* Progress lines show at the default level, not when asked for errors
     * only; a terminal gets one live line. */
    pf_progress_init(&run->progress,
                     pf_log_get_level() >= PF_LOG_WARN ? stderr : NULL,
                     isatty(STDERR_FILENO),
                     (int64_t)run->cfg.progress_interval * 1000);
    code = dispatch(run, c);
    run_free(run);
    return code;
}
