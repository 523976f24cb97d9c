/* The signal thread (launch.h). SIGTERM is how Kubernetes ends a pod and
 * SIGINT how a person ends a run: either may come at any stage, while the
 * main thread sits in a socket, a watch or NCCL. A thread that only waits
 * for them (sigtimedwait) lets main's callback act at once, whatever the
 * main thread is doing, without async-signal-safety limits. */
#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static void *watch(void *arg)
{
    struct pf_sigwatch *w = arg;
    struct timespec ts = { 0, 100 * 1000 * 1000 };
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    while (!atomic_load(&w->stop)) {
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT)
            w->fn(w->ctx, sig);
        else if (sig < 0 && errno != EAGAIN && errno != EINTR)
            break;
    }
    return NULL;
}

pf_err pf_sigwatch_start(struct pf_sigwatch *w, void (*fn)(void *ctx, int sig),
                         void *ctx, char *err)
{
    sigset_t set;
    int rc;

    memset(w, 0, sizeof(*w));
    w->fn = fn;
    w->ctx = ctx;
    atomic_init(&w->stop, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc != 0)
        return pf_fail(err, PF_ERR_SYS, "blocking SIGTERM/SIGINT: %s",
                       strerror(rc));
    rc = pthread_create(&w->thread, NULL, watch, w);
    if (rc != 0)
        return pf_fail(err, PF_ERR_SYS, "starting the signal thread: %s",
                       strerror(rc));
    w->running = true;
    return PF_OK;
}

void pf_sigwatch_stop(struct pf_sigwatch *w)
{
    if (!w->running)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    w->running = false;
}
