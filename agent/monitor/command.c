/* `efa-preflight monitor`: what main calls; the loop is loop.c. */
#include "monitor.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "../launch/interrupt.h"
#include "../launch/launch.h"
#include "../reasons.h"
#include "../util/fsutil.h"
#include "../util/log.h"

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

int pf_monitor_command(struct pf_run *run)
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
