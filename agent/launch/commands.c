/* The commands main dispatches to, besides the monitor's. */
#include "commands.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "../judge/curves.h"
#include "../publish/history.h"
#include "../reasons.h"
#include "../util/log.h"
#include "../util/version.h"
#include "../webhook/webhook.h"

int pf_reasons_command(int argc, char **argv)
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

int pf_version_command(struct pf_run *run)
{
    (void)run;
    printf("efa-preflight %s (report schema %s)\n", PF_VERSION,
           PF_REPORT_SCHEMA);
    return PF_EXIT_PASS;
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

int pf_history_command(struct pf_run *run)
{
    char err[PF_ERRLEN] = "";
    pf_err rc;

    rc = pf_history_print(run->cfg.history_dir, run->cfg.json,
                          utf8_locale(), stdout, err);
    if (rc != PF_OK)
        pf_say("history: %s", err);
    return pf_class_exit_code(pf_err_class(rc));
}

/* The same binary as the gate it injects: one option table, one log, one
 * version, so the webhook of a release injects that release's gate. */
int pf_webhook_command(struct pf_run *run)
{
    const struct pf_config *cfg = &run->cfg;
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
            .baseline_configmap = cfg->baseline_configmap,
            .dra_claims = cfg->dra_claims,
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

int pf_catalog_command(struct pf_run *run)
{
    char err[PF_ERRLEN] = "";
    pf_err rc;

    if (!run->cfg.json) {
        pf_curves_print(&run->catalog, stdout);
    } else if ((rc = pf_curves_print_json(&run->catalog, stdout,
                                          err)) != PF_OK) {
        fprintf(stderr, "efa-preflight: catalog: %s\n", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    return PF_EXIT_PASS;
}

int pf_node_command(struct pf_run *run)
{
    return pf_run_stages(run, false);
}

int pf_run_command(struct pf_run *run)
{
    return pf_run_stages(run, true);
}

int pf_local_command(struct pf_run *run)
{
    char err[PF_ERRLEN] = "";
    bool is_child = false;
    int code = PF_EXIT_PASS;
    pf_err rc;

    rc = pf_local_spawn(run, &is_child, &code, err);
    if (rc != PF_OK) {
        pf_say("%s", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    if (is_child) {
        /* Rank 0 speaks for the run, progress included. */
        if (run->cfg.rank != 0)
            pf_progress_init(&run->progress, NULL, false, 0);
        code = pf_run_stages(run, true);
    }
    return code;
}
