/* efa-preflight: prove a node's EFA fabric works and is fast, then say so.
 *
 *   efa-preflight node      node checks only (no network)
 *   efa-preflight run       node checks + collective with peers
 *   efa-preflight local     N ranks on this machine (the embedded default)
 *   efa-preflight catalog   print the effective instance catalog
 *   efa-preflight reasons   print the table of reasons [--json|--markdown]
 *   efa-preflight history   this node's past runs, newest first
 *   efa-preflight webhook   admission webhook that injects the gate
 *   efa-preflight monitor   NIC counters and health between jobs (DaemonSet)
 *   efa-preflight version
 *
 * Exit codes: 0 pass, 1 validation failed, 2 usage/config error,
 * 3 infrastructure error, 4 a peer failed (PF_EXIT_CODES_HELP). Every
 * code but a pass is a class's (pf_class_exit_code): the deciding reason's
 * for a run, pf_err_class's for an error with no verdict to decide it. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf.h"
#include "collective/collective.h"
#include "config/catalog.h"
#include "config/config.h"
#include "discover/discover.h"
#include "launch/interrupt.h"
#include "launch/launch.h"
#include "monitor/monitor.h"
#include "probe/probe.h"
#include "publish/history.h"
#include "publish/publish.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/kubeapi.h"
#include "util/log.h"
#include "util/sanitize.h"
#include "verdict/verdict.h"
#include "webhook/webhook.h"

extern char **environ;

static const struct {
    const char *name;
    enum pf_command cmd;
    const char *help;
} commands[] = {
    { "node", PF_CMD_NODE, "check this node's EFA setup against its instance type" },
    { "run", PF_CMD_RUN, "node checks, then an all_reduce with peers (static, mpi, k8s)" },
    { "local", PF_CMD_LOCAL, "node checks, then an all_reduce across N local ranks" },
    { "catalog", PF_CMD_CATALOG, "print the effective instance-type catalog "
                                 "and its floors at 2 to 1024 nodes [--json]" },
    { "version", PF_CMD_VERSION, "print the version" },
    { "history", PF_CMD_HISTORY, "this node's past runs from --history-dir, "
                                 "newest first, with a busbw trend [--json]" },
    { "webhook", PF_CMD_WEBHOOK, "mutating admission webhook: injects the gate into "
                                 "every Pod that requests EFA" },
    { "monitor", PF_CMD_MONITOR, "export every EFA NIC's counters, judge their "
                                 "health, re-validate idle nodes (until SIGTERM)" },
    /* Handled before the config stage: it reads no option but its format. */
    { "reasons", PF_CMD_VERSION, "print every reason, its class, exit code "
                                 "and remedy [--json|--markdown]" },
};

static void usage(FILE *out)
{
    fprintf(out, "usage: efa-preflight <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(out, "\n'efa-preflight <command> --help' lists a command's options.\n"
                 PF_EXIT_CODES_HELP);
}

/* `efa-preflight reasons [--json|--markdown]` */
static int reasons_command(int argc, char **argv)
{
    const char *format = "text";

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            format = "json";
        else if (!strcmp(argv[i], "--markdown"))
            format = "markdown";
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: efa-preflight reasons [--json|--markdown]\n");
            return PF_EXIT_PASS;
        } else {
            pf_say("reasons: unknown option '%s' (expected --json or "
                "--markdown)", argv[i]);
            return pf_class_exit_code(PF_CLASS_USAGE);
        }
    }
    pf_reasons_print(stdout, format);
    return PF_EXIT_PASS;
}

/* `efa-preflight webhook`: serve until SIGTERM/SIGINT. The same binary as
 * the gate it injects: one option table, one log, one version, so the
 * webhook of a release injects that release's gate. */
static int webhook_command(const struct pf_config *cfg)
{
    char err[PF_ERRLEN] = "";
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    /* Blocked before the server's threads exist, so they inherit it and
     * the signal is taken here alone. */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    const char *own_ns = cfg->namespace_[0] ? cfg->namespace_ : getenv("POD_NAMESPACE");
    struct pf_webhook_opts o = {
        .bind_addr = cfg->webhook_addr,
        .port = cfg->webhook_port,
        .tls_cert = cfg->tls_cert_file,
        .tls_key = cfg->tls_key_file,
        .max_body = (size_t)cfg->webhook_max_body,
        .threads = (unsigned)cfg->webhook_threads,
        .own_namespace = own_ns ? own_ns : "",
        .gate = {
            .agent_image = cfg->agent_image,
            .prefix = cfg->label_prefix,
            .timeout_s = cfg->timeout_s,
            .port = cfg->port,
            .taint_on_failure = cfg->taint_on_failure,
            .valid_hours = cfg->valid_hours,
            .taint_budget = cfg->taint_budget,
        },
    };
    struct pf_webhook *w;
    pf_err rc = pf_webhook_start(&o, &w, err);
    if (rc != PF_OK) {
        pf_say("%s", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    /* The line tests and people wait for: the port is known from here. */
    printf("efa-preflight webhook: serving https on port %d (namespace %s left alone)\n",
           pf_webhook_port(w), o.own_namespace[0] ? o.own_namespace : "-");
    fflush(stdout);
    int sig = 0;
    while (sigwait(&set, &sig) != 0)
        ;
    pf_info("webhook: %s: stopping", strsignal(sig));
    pf_webhook_stop(w);
    return PF_EXIT_PASS;
}

/* Everything the run holds on the heap, then the run. */
static void run_free(struct pf_run *run)
{
    pf_coll_free(&run->coll);
    pf_peers_free(&run->peers);
    pf_catalog_free(&run->catalog);
    pf_config_free(&run->cfg);
    free(run);
}

/* Whether the terminal shows UTF-8 (the history trend's block
 * characters), by the locale variables in their order of precedence. */
static bool utf8_locale(void)
{
    const char *vars[] = { "LC_ALL", "LC_CTYPE", "LANG" };

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
    }
    return false;
}

/* The monitor's signal callback: end the loop (SIGTERM is how the
 * DaemonSet's pod ends); a second signal ends the process at once. */
static void on_monitor_signal(void *ctx, int sig)
{
    struct pf_mon_ctl *ctl = ctx;

    if (atomic_load(&ctl->stop)) {
        pf_error("second signal (%s): exiting now", strsignal(sig));
        _exit(pf_interrupted_exit_code());
    }
    pf_info("%s: the monitor stops", strsignal(sig));
    pf_mon_ctl_stop(ctl);
}

/* `efa-preflight monitor`: a clean exit 0 on SIGTERM. */
static int monitor_command(struct pf_run *run)
{
    struct pf_mon_ctl ctl;
    struct pf_sigwatch watch;
    char err[PF_ERRLEN] = "";
    int code;
    pf_err rc;

    if (run->cfg.metrics_textfile[0] &&
        pf_check_writable_path(run->cfg.metrics_textfile, err) != PF_OK) {
        pf_say("--metrics-textfile: %s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    rc = pf_mon_ctl_init(&ctl, err);
    if (rc != PF_OK) {
        pf_say("%s", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    /* libcurl's global state (and OpenSSL's, some 3 MiB of touched
     * pages) only where the monitor writes to a Node: pf_monitor_run
     * starts it before any thread of its own. */
    if (pf_sigwatch_start(&watch, on_monitor_signal, &ctl, err) != PF_OK)
        pf_warn("%s: SIGTERM ends the monitor without a word", err);
    code = pf_monitor_run(run, &ctl);
    pf_sigwatch_stop(&watch);
    pf_mon_ctl_destroy(&ctl);
    return code;
}

int main(int argc, char **argv)
{
    char err[PF_ERRLEN] = "";
    struct pf_run *run;
    enum pf_command cmd = PF_CMD_VERSION;
    bool found = false, want_help = false;
    int code;
    pf_err rc;

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
        return reasons_command(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            cmd = commands[i].cmd;
            found = true;
        }
    }
    if (!found) {
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
    rc = pf_config_load(&run->cfg, cmd, argc - 1, argv + 1, environ,
                        &want_help, err);
    if (rc != PF_OK) {
        pf_say("%s", err);
        fprintf(stderr, "try 'efa-preflight %s --help'\n",
                pf_command_name(cmd));
        run_free(run);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    if (want_help) {
        pf_config_usage(cmd, stdout);
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

    if (cmd == PF_CMD_HISTORY) {
        rc = pf_history_print(run->cfg.history_dir, run->cfg.json,
                              utf8_locale(), stdout, err);
        if (rc != PF_OK)
            pf_say("history: %s", err);
        run_free(run);
        return pf_class_exit_code(pf_err_class(rc));
    }
    if (cmd == PF_CMD_WEBHOOK) {
        code = webhook_command(&run->cfg);
        run_free(run);
        return code;
    }
    if (cmd == PF_CMD_VERSION) {
        printf("efa-preflight %s (report schema %s)\n", PF_VERSION,
               PF_REPORT_SCHEMA);
        run_free(run);
        return PF_EXIT_PASS;
    }

    if ((cmd == PF_CMD_NODE || cmd == PF_CMD_RUN || cmd == PF_CMD_LOCAL) &&
        pf_prerun_checks(&run->cfg, err) != PF_OK) {
        pf_say("%s", err);
        run_free(run);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }

    /* One deadline for the whole run, probe and publishing included. */
    pf_run_start_clock(run);
    rc = pf_catalog_load(&run->catalog, run->cfg.catalog_file, err);
    if (rc != PF_OK) {
        pf_say("%s", err);
        run_free(run);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }

    switch (cmd) {
    case PF_CMD_CATALOG:
        code = PF_EXIT_PASS;
        if (!run->cfg.json) {
            pf_catalog_print(&run->catalog, stdout);
        } else if ((rc = pf_catalog_print_json(&run->catalog, stdout,
                                               err)) != PF_OK) {
            fprintf(stderr, "efa-preflight: catalog: %s\n", err);
            code = pf_class_exit_code(pf_err_class(rc));
        }
        break;
    case PF_CMD_NODE:
        code = pf_run_stages(run, false);
        break;
    case PF_CMD_RUN:
        code = pf_run_stages(run, true);
        break;
    case PF_CMD_MONITOR:
        code = monitor_command(run);
        break;
    case PF_CMD_LOCAL: {
        bool is_child = false;
        rc = pf_local_spawn(run, &is_child, &code, err);
        if (rc != PF_OK) {
            pf_say("%s", err);
            code = pf_class_exit_code(pf_err_class(rc));
        } else if (is_child) {
            /* Rank 0 speaks for the run, progress included. */
            if (run->cfg.rank != 0)
                pf_progress_init(&run->progress, NULL, false, 0);
            code = pf_run_stages(run, true);
        }
        break;
    }
    default:
        code = pf_class_exit_code(PF_CLASS_USAGE);
        break;
    }

    if (run->cfg.on_failure == PF_ON_FAILURE_CONTINUE && code == PF_EXIT_FAIL)
        code = PF_EXIT_PASS;
    run_free(run);
    return code;
}
