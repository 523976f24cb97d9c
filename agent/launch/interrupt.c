#include "interrupt.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../reasons.h"
#include "../util/clock.h"
#include "../util/log.h"

void pf_interrupt_init(struct pf_interrupt *it, const struct pf_run *run)
{
    memset(it, 0, sizeof(*it));
    pthread_mutex_init(&it->lock, NULL);
    pthread_cond_init(&it->changed, NULL);
    it->phase = PF_PHASE_RUN;
    atomic_init(&it->cancel, 0);
    it->run = run;
    it->k8s = pf_publish_to_node(run);
    if (it->k8s)
        pf_publish_target(&run->cfg, &it->target);
}

void pf_interrupt_destroy(struct pf_interrupt *it)
{
    pthread_cond_destroy(&it->changed);
    pthread_mutex_destroy(&it->lock);
}

void pf_interrupt_set_node(struct pf_interrupt *it, const char *node)
{
    pthread_mutex_lock(&it->lock);
    snprintf(it->node, sizeof(it->node), "%s", node);
    pthread_mutex_unlock(&it->lock);
}

int pf_interrupted_exit_code(void)
{
    return pf_class_exit_code(pf_reason_class_of(PF_R_Interrupted));
}

void pf_interrupt_on_signal(void *ctx, int sig)
{
    struct pf_interrupt *it = ctx;
    int64_t until = pf_deadline_in(PF_SIGNAL_GRACE_MS);
    char node[PF_NAME_MAX], err[PF_ERRLEN] = "";

    pthread_mutex_lock(&it->lock);
    if (it->sig) {
        pthread_mutex_unlock(&it->lock);
        pf_error("second signal (%s): exiting now", strsignal(sig));
        _exit(pf_interrupted_exit_code());
    }
    it->sig = sig;
    if (it->phase == PF_PHASE_PUBLISH) {
        pf_warn("%s: finishing the verdict being written (at most %d s)",
                strsignal(sig), PF_SIGNAL_GRACE_MS / 1000);
        for (int i = 0; i < 1000 && it->phase == PF_PHASE_PUBLISH &&
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
        if (it->phase == PF_PHASE_PUBLISH) {
            pthread_mutex_unlock(&it->lock);
            pf_error("the verdict was not written within %d s of %s; "
                     "exiting", PF_SIGNAL_GRACE_MS / 1000, strsignal(sig));
            _exit(pf_interrupted_exit_code());
        }
    }
    if (it->phase == PF_PHASE_DONE) {
        pthread_mutex_unlock(&it->lock);
        return;
    }
    it->phase = PF_PHASE_INTERRUPTED;
    atomic_store(&it->cancel, 1);
    snprintf(node, sizeof(node), "%s", it->node);
    pthread_mutex_unlock(&it->lock);

    pf_error("%s: the run stopped before its verdict (%s)", strsignal(sig),
             pf_reason_name(PF_R_Interrupted));
    if (it->k8s && pf_publish_node_interrupted(&it->run->cfg, &it->target,
                                               node, sig, until,
                                               err) != PF_OK)
        pf_error("publish: %s", err);
    _exit(pf_interrupted_exit_code());
}

void pf_interrupt_enter_publish(struct pf_interrupt *it)
{
    bool ok;

    pthread_mutex_lock(&it->lock);
    ok = it->phase == PF_PHASE_RUN;
    if (ok)
        it->phase = PF_PHASE_PUBLISH;
    pthread_mutex_unlock(&it->lock);
    if (!ok) {
        /* The signal thread is rolling the Node forward and exits. */
        for (int i = 0; i < (PF_SIGNAL_GRACE_MS + 2000) / 100; i++)
            pf_sleep_ms(100);
        _exit(pf_interrupted_exit_code());
    }
}

int pf_interrupt_leave_publish(struct pf_interrupt *it)
{
    int sig;

    pthread_mutex_lock(&it->lock);
    it->phase = PF_PHASE_DONE;
    sig = it->sig;
    pthread_cond_broadcast(&it->changed);
    pthread_mutex_unlock(&it->lock);
    return sig;
}
