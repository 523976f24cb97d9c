/* DaemonSet mode: once the verdict is on the Node, the status label
 * un-selects it and the DaemonSet controller deletes the pod. Until then the
 * agent waits quietly (exiting would make the kubelet restart it and
 * validate again). SIGTERM and SIGINT are taken with sigtimedwait, so no
 * handler or global flag is needed; max_ms bounds the wait in case the pod
 * is never removed, after which the restart is the retry. */
#include "launch.h"

#include <errno.h>
#include <signal.h>

#include "../util/clock.h"
#include "../util/log.h"

void pf_idle_wait(int64_t max_ms)
{
    int64_t deadline = pf_deadline_in(max_ms);
    sigset_t set, old;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, &old) != 0)
        return;
    pf_info("daemonset: verdict published; idling until the pod is removed");
    for (int i = 0; i < 1000000; i++) {
        int64_t left = pf_ms_left(deadline);
        struct timespec ts;
        int sig;

        if (left <= 0) {
            pf_info("daemonset: pod still present after %lld s; exiting",
                    (long long)(max_ms / 1000));
            break;
        }
        if (left > 30000)
            left = 30000;
        ts.tv_sec = left / 1000;
        ts.tv_nsec = (left % 1000) * 1000000;
        sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGTERM || sig == SIGINT) {
            pf_info("daemonset: signal %d, exiting", sig);
            break;
        }
        if (sig < 0 && errno != EAGAIN && errno != EINTR)
            break;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
}
