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

/* "efa-preflight: <message>" on stderr. Messages quote what the operator
 * gave (flags, env, files), which may hold control bytes: they go through
 * the sanitiser as peer input does. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[2 * PF_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pf_sanitize_inplace(line, sizeof(line));
    fprintf(stderr, "efa-preflight: %s\n", line);
}

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
            say("reasons: unknown option '%s' (expected --json or "
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
        say("%s", err);
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

/* What the pipeline and the signal thread share; main owns it.
 *
 *   RUN          no verdict yet: a signal cancels the API requests, rolls
 *                the Node forward (status=error, Interrupted) and exits.
 *   PUBLISH      the verdict is being written: a signal lets it finish,
 *                within PF_SIGNAL_GRACE_MS, then exits either way.
 *   DONE         written: a signal only ends the DaemonSet's idle wait.
 *   INTERRUPTED  the signal thread owns the Node: the pipeline writes
 *                nothing more and waits to be ended. */
enum phase { PHASE_RUN, PHASE_PUBLISH, PHASE_DONE, PHASE_INTERRUPTED };

struct interrupt {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    enum phase phase;
    int sig;                          /* first signal taken, 0 none */
    bool k8s;                         /* the verdict goes on a Node */
    char node[PF_NAME_MAX];           /* that Node, once known */
    struct pf_node_target target;     /* read before the thread starts */
    atomic_int cancel;                /* read by the API client */
    const struct pf_run *run;         /* the signal thread reads cfg only */
};

static int interrupted_exit_code(void)
{
    return pf_class_exit_code(pf_reason_class_of(PF_R_Interrupted));
}

/* The signal thread (launch/sigwatch.c). */
static void on_signal(void *ctx, int sig)
{
    struct interrupt *it = ctx;
    int64_t until = pf_deadline_in(PF_SIGNAL_GRACE_MS);
    char node[PF_NAME_MAX], err[PF_ERRLEN] = "";

    pthread_mutex_lock(&it->lock);
    if (it->sig) {
        pthread_mutex_unlock(&it->lock);
        pf_error("second signal (%s): exiting now", strsignal(sig));
        _exit(interrupted_exit_code());
    }
    it->sig = sig;
    if (it->phase == PHASE_PUBLISH) {
        pf_warn("%s: finishing the verdict being written (at most %d s)",
                strsignal(sig), PF_SIGNAL_GRACE_MS / 1000);
        for (int i = 0; i < 1000 && it->phase == PHASE_PUBLISH &&
                        pf_ms_left(until) > 0; i++) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&it->changed, &it->lock, &ts);
        }
        if (it->phase == PHASE_PUBLISH) {
            pthread_mutex_unlock(&it->lock);
            pf_error("the verdict was not written within %d s of %s; "
                     "exiting", PF_SIGNAL_GRACE_MS / 1000, strsignal(sig));
            _exit(interrupted_exit_code());
        }
    }
    if (it->phase == PHASE_DONE) {
        pthread_mutex_unlock(&it->lock);
        return;
    }
    it->phase = PHASE_INTERRUPTED;
    atomic_store(&it->cancel, 1);
    snprintf(node, sizeof(node), "%s", it->node);
    pthread_mutex_unlock(&it->lock);

    pf_error("%s: the run stopped before its verdict (%s)", strsignal(sig),
             pf_reason_name(PF_R_Interrupted));
    if (it->k8s && pf_publish_node_interrupted(&it->run->cfg, &it->target,
                                               node, sig, until,
                                               err) != PF_OK)
        pf_error("publish: %s", err);
    _exit(interrupted_exit_code());
}

/* The pipeline may write the verdict unless a signal took the Node. */
static bool enter_publish(struct interrupt *it)
{
    bool ok;

    pthread_mutex_lock(&it->lock);
    ok = it->phase == PHASE_RUN;
    if (ok)
        it->phase = PHASE_PUBLISH;
    pthread_mutex_unlock(&it->lock);
    if (!ok) {
        /* The signal thread is rolling the Node forward and exits. */
        for (int i = 0; i < (PF_SIGNAL_GRACE_MS + 2000) / 100; i++)
            pf_sleep_ms(100);
        _exit(interrupted_exit_code());
    }
    return ok;
}

static int leave_publish(struct interrupt *it)
{
    int sig;

    pthread_mutex_lock(&it->lock);
    it->phase = PHASE_DONE;
    sig = it->sig;
    pthread_cond_broadcast(&it->changed);
    pthread_mutex_unlock(&it->lock);
    return sig;
}

/* Bad input found after the Node was marked: exit 2 and put back what
 * the mark changed (a usage error writes nothing to the cluster). */
static int usage_exit(struct pf_run *run, struct interrupt *it,
                      const char *msg)
{
    char err[PF_ERRLEN];

    say("%s", msg);
    if (run->mark.marked) {
        enter_publish(it);
        if (pf_publish_node_undo(run, err) != PF_OK)
            pf_warn("node %s: could not put back the state found before "
                    "the run: %s", run->mark.node, err);
        leave_publish(it);
    }
    return pf_class_exit_code(PF_CLASS_USAGE);
}

/* probe -> [discover -> collective] -> verdict -> publish. Returns the
 * exit code. */
static int pipeline(struct pf_run *run, bool collective, struct interrupt *it,
                    bool *node_written)
{
    char err[PF_ERRLEN] = "";
    pf_err rc;

    rc = pf_probe(run, err);
    if (rc != PF_OK)
        /* The probe fails only on bad flags (--sysfs-root). */
        return usage_exit(run, it, err);
    if (collective) {
        bool discovered;

        rc = pf_discover(run, err);
        discovered = rc == PF_OK;
        if (discovered)
            rc = pf_collective(run, err);
        else
            /* No collective: the floor that would have applied, for the
             * report and the metrics. */
            pf_coll_judge(run);
        /* Bad input stops here; a deployment error the collective named
         * (RendezvousPortInUse) goes on to the verdict, whose usage class
         * writes nothing to the cluster but still reports. */
        if (pf_err_class(rc) == PF_CLASS_USAGE &&
            run->coll.fault.reason == PF_R_None)
            return usage_exit(run, it, err);
        if (!discovered)
            /* Discovery failed in a way it did not name (a reason it did
             * name was recorded first and stays). */
            pf_fault_set(&run->peers.fault, rc,
                         pf_reason_for_err(rc, PF_STAGE_DISCOVER), err);
    }
    /* Node checks run after discovery: in k8s mode the instance type may
     * come from the Node's label. A node that fails them still joins the
     * collective, so its peers see a result rather than a timeout. */
    pf_verdict_node(run);
    if (collective)
        pf_verdict_fabric(run);
    pf_verdict_finish(run);

    enter_publish(it);
    rc = pf_publish(run, node_written, err);
    leave_publish(it);
    if (rc != PF_OK) {
        say("publish: %s", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    /* A failed report or Node write is a check: the exit code the table
     * and the report show is this one. */
    return run->verdict.exit_code;
}

/* The run after config: signals taken, the Node marked (k8s), the
 * pipeline, then the DaemonSet's idle wait. Returns the exit code. */
static int run_stages(struct pf_run *run, bool collective)
{
    struct interrupt it = { .phase = PHASE_RUN };
    struct pf_sigwatch watch;
    char err[PF_ERRLEN] = "";
    bool node_written = false;
    int code;
    pf_err rc;

    /* Signals first, before any thread exists, then the Node: from here
     * on no stale pass survives whatever happens. */
    pthread_mutex_init(&it.lock, NULL);
    pthread_cond_init(&it.changed, NULL);
    atomic_init(&it.cancel, 0);
    it.run = run;
    it.k8s = pf_publish_to_node(run);
    if (it.k8s)
        pf_publish_target(&run->cfg, &it.target);
    run->cancel = &it.cancel;
    /* A peer stopped before it joined marks its Node as this agent does
     * (on_signal): the rendezvous reads that mark instead of waiting for
     * the peer until the deadline. */
    if (it.k8s)
        run->peer_gone = pf_publish_peer_interrupted;
    pf_kube_global_init();
    if (pf_sigwatch_start(&watch, on_signal, &it, err) != PF_OK)
        pf_warn("%s: SIGTERM ends the run without a word", err);
    if (it.k8s) {
        rc = pf_publish_begin(run, err);
        if (rc != PF_OK)
            pf_warn("node: could not mark the Node as being validated: %s",
                    err);
        pthread_mutex_lock(&it.lock);
        snprintf(it.node, sizeof(it.node), "%s", run->mark.node);
        pthread_mutex_unlock(&it.lock);
    }
    code = pipeline(run, collective, &it, &node_written);
    pf_sigwatch_stop(&watch);
    pf_publish_mark_free(run);
    run->cancel = NULL;
    run->peer_gone = NULL;
    /* DaemonSet: the status label un-selects the node; wait to be removed
     * rather than exit and be restarted into a second validation. A
     * signal taken while publishing already asked for the end. */
    if (node_written && !it.sig && run->cfg.mode == PF_MODE_DAEMONSET &&
        run->cfg.command == PF_CMD_RUN && !run->peers.stay_pending)
        pf_idle_wait(PF_IDLE_MAX_MS);
    /* Still pending (no group though partners were there): exit, and the
     * kubelet starts the agent again after its back-off. */
    pthread_cond_destroy(&it.changed);
    pthread_mutex_destroy(&it.lock);
    return code;
}

/* The monitor's signal callback: end the loop (SIGTERM is how the
 * DaemonSet's pod ends); a second signal ends the process at once. */
static void on_monitor_signal(void *ctx, int sig)
{
    struct pf_mon_ctl *ctl = ctx;

    if (atomic_load(&ctl->stop)) {
        pf_error("second signal (%s): exiting now", strsignal(sig));
        _exit(interrupted_exit_code());
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
        say("--metrics-textfile: %s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    rc = pf_mon_ctl_init(&ctl, err);
    if (rc != PF_OK) {
        say("%s", err);
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

/* What would be found only after the whole run, or would make a healthy
 * node fail, is checked before anything runs or is written: the output
 * paths (a file that is regular or missing, a directory) and the values
 * that name something on this host. */
static pf_err prerun_checks(const struct pf_config *cfg, char *err)
{
    static const char *const flags[] = { "--report", "--metrics-textfile",
                                         "--history-dir" };
    const char *paths[] = { cfg->report_file, cfg->metrics_textfile,
                            cfg->history_dir };

    for (int i = 0; i < 3; i++) {
        pf_err rc;
        if (!paths[i][0])
            continue;
        rc = i == 2 ? pf_check_dir_path(paths[i], err)
                    : pf_check_writable_path(paths[i], err);
        if (rc != PF_OK) {
            pf_err_prefix(err, "%s", flags[i]);
            return PF_ERR_USAGE;
        }
    }
    return pf_probe_config_names(cfg, err);
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
        say("unknown command '%s'", argv[1]);
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
        say("%s", err);
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
            say("history: %s", err);
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
        prerun_checks(&run->cfg, err) != PF_OK) {
        say("%s", err);
        run_free(run);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }

    /* One deadline for the whole run, probe and publishing included. */
    pf_run_start_clock(run);
    rc = pf_catalog_load(&run->catalog, run->cfg.catalog_file, err);
    if (rc != PF_OK) {
        say("%s", err);
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
        code = run_stages(run, false);
        break;
    case PF_CMD_RUN:
        code = run_stages(run, true);
        break;
    case PF_CMD_MONITOR:
        code = monitor_command(run);
        break;
    case PF_CMD_LOCAL: {
        bool is_child = false;
        rc = pf_local_spawn(run, &is_child, &code, err);
        if (rc != PF_OK) {
            say("%s", err);
            code = pf_class_exit_code(pf_err_class(rc));
        } else if (is_child) {
            /* Rank 0 speaks for the run, progress included. */
            if (run->cfg.rank != 0)
                pf_progress_init(&run->progress, NULL, false, 0);
            code = run_stages(run, true);
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
