/* `local`: N rank processes on this machine, rendezvous on loopback. The
 * launcher forks them, waits for them under a deadline, and answers with
 * rank 0's exit code. Each child goes on as one rank of the pipeline. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/log.h"

#define GRACE_S 5             /* beyond cfg.timeout_s before ranks are killed */
#define TERM_MS 2000          /* SIGTERM -> SIGKILL */

pf_err pf_free_port(int *port, char *err)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return pf_fail(err, PF_ERR_SYS, "socket: %s", strerror(errno));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
        getsockname(fd, (struct sockaddr *)&sa, &len)) {
        int e = errno;
        close(fd);
        return pf_fail(err, PF_ERR_SYS, "finding a free port on 127.0.0.1: %s",
                       strerror(e));
    }
    close(fd);
    *port = ntohs(sa.sin_port);
    return PF_OK;
}

/* In a freshly forked rank: become rank i. Only rank 0 writes stdout and
 * the report, so the output is one run's, not N copies. */
static void become_rank(struct pf_run *run, int i, int n)
{
    char tag[32];

    run->cfg.bootstrap = PF_BOOT_LOCAL;
    run->cfg.rank = i;
    run->cfg.ranks = n;
    snprintf(tag, sizeof(tag), "rank %d", i);
    pf_log_set_tag(tag);
    if (i != 0) {
        int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            close(fd);
        }
        run->cfg.report_file[0] = '\0';
    }
}

static int reap(pid_t *pids, int *status, bool *done, int n, int64_t until)
{
    int left = 0;

    for (;;) {
        left = 0;
        for (int i = 0; i < n; i++) {
            if (done[i])
                continue;
            if (waitpid(pids[i], &status[i], WNOHANG) == pids[i])
                done[i] = true;
            else
                left++;
        }
        if (left == 0 || pf_ms_left(until) <= 0)
            return left;
        pf_sleep_ms(20);
    }
}

static void signal_rest(pid_t *pids, const bool *done, int n, int sig)
{
    for (int i = 0; i < n; i++)
        if (!done[i])
            kill(pids[i], sig);
}

/* The per-rank tables, sized by the run. */
struct ranks {
    pid_t *pids;
    int *status;
    bool *done, *stopped;
};

static void ranks_free(struct ranks *t)
{
    free(t->pids);
    free(t->status);
    free(t->done);
    free(t->stopped);
}

static pf_err launch(struct pf_run *run, int n, struct ranks *t,
                     bool *is_child, int *exit_code, char *err);

pf_err pf_local_spawn(struct pf_run *run, bool *is_child, int *exit_code,
                      char *err)
{
    struct sigaction chld_default = { .sa_handler = SIG_DFL }, chld_saved;
    struct ranks t = { 0 };
    int n = 0;
    pf_err rc;

    *is_child = false;
    *exit_code = PF_EXIT_INFRA;
    /* SIGCHLD ignored (inherited through exec from a parent that ignores
     * it) makes the kernel reap children itself, and waitpid would never
     * see their exit codes: take the default while any run. */
    sigaction(SIGCHLD, &chld_default, &chld_saved);
    rc = pf_local_ranks(run, &n, err);
    if (rc == PF_OK && n > 1) {
        t.pids = calloc((size_t)n, sizeof(*t.pids));
        t.status = calloc((size_t)n, sizeof(*t.status));
        t.done = calloc((size_t)n, sizeof(*t.done));
        t.stopped = calloc((size_t)n, sizeof(*t.stopped));
        if (!t.pids || !t.status || !t.done || !t.stopped)
            rc = pf_fail(err, PF_ERR_NOMEM, "local: no memory to track %d "
                         "ranks", n);
    }
    if (rc == PF_OK)
        rc = launch(run, n, &t, is_child, exit_code, err);
    if (!*is_child || n == 1)         /* a rank of its own: as it was */
        sigaction(SIGCHLD, &chld_saved, NULL);
    ranks_free(&t);
    return rc;
}

static pf_err launch(struct pf_run *run, int n, struct ranks *t,
                     bool *is_child, int *exit_code, char *err)
{
    pid_t *pids = t->pids, parent = getpid();
    int *status = t->status, worst = 0, left;
    bool *done = t->done, *stopped = t->stopped, crashed = false;
    int64_t deadline;
    pf_err rc;

    if (n == 1) {
        /* A world of one: no fork, no rendezvous. */
        run->cfg.bootstrap = PF_BOOT_LOCAL;
        run->cfg.rank = 0;
        run->cfg.ranks = 1;
        *is_child = true;
        return PF_OK;
    }
    if (run->cfg.port == 0) {
        rc = pf_free_port(&run->cfg.port, err);
        if (rc != PF_OK)
            return rc;
    }
    pf_info("local: starting %d ranks, rendezvous on 127.0.0.1:%d", n,
            run->cfg.port);
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            int e = errno;
            signal_rest(pids, done, i, SIGKILL);
            reap(pids, status, done, i, pf_deadline_in(TERM_MS));
            return pf_fail(err, PF_ERR_SYS, "fork for rank %d: %s", i,
                           strerror(e));
        }
        if (pid == 0) {
            /* Never outlive the launcher. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(PF_EXIT_INFRA);
            become_rank(run, i, n);
            *is_child = true;
            return PF_OK;
        }
        pids[i] = pid;
    }

    /* Rank 0 may still deliver metrics after its verdict (its own push
     * budget): stopping it then would change the exit code it printed. */
    deadline = pf_deadline_in(((int64_t)run->cfg.timeout_s + GRACE_S) * 1000 +
                              (run->cfg.pushgateway[0] ? PF_PUSH_BUDGET_MS : 0));
    left = reap(pids, status, done, n, deadline);
    if (left > 0) {
        for (int i = 0; i < n; i++)
            stopped[i] = !done[i];
        pf_error("local: %d rank(s) still running %d s after the %d s timeout; "
                 "stopping them", left, GRACE_S, run->cfg.timeout_s);
        signal_rest(pids, done, n, SIGTERM);
        if (reap(pids, status, done, n, pf_deadline_in(TERM_MS)) > 0) {
            signal_rest(pids, done, n, SIGKILL);
            reap(pids, status, done, n, pf_deadline_in(TERM_MS));
        }
    }
    for (int i = 0; i < n; i++) {
        int code;
        if (!done[i] || stopped[i]) {
            pf_error("local: rank %d (pid %d) did not finish within %d s",
                     i, (int)pids[i], run->cfg.timeout_s + GRACE_S);
            code = PF_EXIT_INFRA;
            crashed = true;
        } else if (WIFSIGNALED(status[i])) {
            pf_error("local: rank %d (pid %d) was killed by signal %d (%s)",
                     i, (int)pids[i], WTERMSIG(status[i]),
                     strsignal(WTERMSIG(status[i])));
            code = PF_EXIT_INFRA;
            crashed = true;
        } else {
            code = WEXITSTATUS(status[i]);
            if (i > 0 && done[0] && WIFEXITED(status[0]) &&
                code != WEXITSTATUS(status[0]))
                pf_info("local: rank %d exited with %d, rank 0 with %d", i,
                        code, WEXITSTATUS(status[0]));
        }
        if (code > worst)
            worst = code;
    }
    *exit_code = crashed ? worst : WEXITSTATUS(status[0]);
    return PF_OK;
}
