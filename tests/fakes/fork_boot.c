#include "fork_boot.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/clock.h"

#define MAX_WORLD 16

struct star {
    int fd[MAX_WORLD];                /* rank 0: one per peer; else fd[0] */
};

static pf_err read_full(int fd, void *buf, size_t len, int64_t deadline,
                        char *err)
{
    char *p = buf;
    while (len > 0) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        int64_t left = pf_ms_left(deadline);
        ssize_t n;
        if (left <= 0)
            return pf_fail(err, PF_ERR_TIMEOUT, "fork boot: read timed out");
        if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
            continue;
        n = read(fd, p, len);
        if (n == 0)
            return pf_fail(err, PF_ERR_LOST, "fork boot: peer closed");
        if (n < 0 && errno != EINTR)
            return pf_fail(err, PF_ERR_LOST, "fork boot: %s", strerror(errno));
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        }
    }
    return PF_OK;
}

static pf_err write_full(int fd, const void *buf, size_t len, char *err)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return pf_fail(err, PF_ERR_LOST, "fork boot: write failed");
        p += n;
        len -= (size_t)n;
    }
    return PF_OK;
}

static pf_err star_allgather(struct pf_boot *b, const void *mine, size_t len,
                             void *all, int64_t deadline, char *err)
{
    struct star *s = b->impl;
    char *out = all;
    pf_err rc = PF_OK;

    if (b->rank != 0) {
        rc = write_full(s->fd[0], mine, len, err);
        if (rc == PF_OK)
            rc = read_full(s->fd[0], all, len * (size_t)b->world, deadline,
                           err);
        return rc;
    }
    memcpy(out, mine, len);
    for (int r = 1; r < b->world && rc == PF_OK; r++)
        rc = read_full(s->fd[r], out + (size_t)r * len, len, deadline, err);
    for (int r = 1; r < b->world && rc == PF_OK; r++)
        rc = write_full(s->fd[r], all, len * (size_t)b->world, err);
    return rc;
}

static pf_err star_bcast(struct pf_boot *b, void *buf, size_t len, int root,
                         int64_t deadline, char *err)
{
    char *all = malloc(len * (size_t)b->world);
    pf_err rc;

    if (!all)
        return pf_fail(err, PF_ERR_NOMEM, "fork boot: bcast");
    rc = star_allgather(b, buf, len, all, deadline, err);
    if (rc == PF_OK)
        memcpy(buf, all + (size_t)root * len, len);
    free(all);
    return rc;
}

static pf_err star_barrier(struct pf_boot *b, int64_t deadline, char *err)
{
    char one = 1, all[MAX_WORLD];
    return star_allgather(b, &one, 1, all, deadline, err);
}

static bool closed(int fd)
{
    char c;
    return fd >= 0 && recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static pf_err star_poll(struct pf_boot *b, char *err)
{
    struct star *s = b->impl;
    int first = b->rank == 0 ? 1 : 0, last = b->rank == 0 ? b->world : 1;

    for (int i = first; i < last; i++)
        if (closed(s->fd[i]))
            return pf_fail(err, PF_ERR_LOST, "fork boot: rank %d went away",
                           b->rank == 0 ? i : 0);
    return PF_OK;
}

static void star_abort(struct pf_boot *b, const char *why)
{
    (void)b;
    (void)why;
}

static void star_close(struct pf_boot *b)
{
    struct star *s = b->impl;
    for (int i = 0; i < MAX_WORLD; i++)
        if (s->fd[i] >= 0)
            close(s->fd[i]);
}

static const struct pf_boot_ops star_ops = {
    .allgather = star_allgather, .bcast = star_bcast,
    .barrier = star_barrier, .poll = star_poll,
    .abort = star_abort, .close = star_close,
};

void *pf_test_shared(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int pf_test_fork_ranks(int world, int (*fn)(struct pf_boot *b, void *arg),
                       void *arg, int timeout_s, int *codes)
{
    int pairs[MAX_WORLD][2];
    pid_t pids[MAX_WORLD];
    int64_t deadline = pf_deadline_in((int64_t)timeout_s * 1000);
    int bad = 0;

    if (world < 1 || world > MAX_WORLD)
        return world;
    for (int r = 1; r < world; r++)
        socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[r]);
    for (int r = 0; r < world; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            struct star s;
            struct pf_boot b = { .ops = &star_ops, .rank = r, .world = world,
                                 .impl = &s };
            for (int i = 0; i < MAX_WORLD; i++)
                s.fd[i] = -1;
            for (int i = 1; i < world; i++) {
                if (r == 0) {
                    s.fd[i] = pairs[i][0];
                    close(pairs[i][1]);
                } else if (i == r) {
                    s.fd[0] = pairs[i][1];
                    close(pairs[i][0]);
                } else {
                    close(pairs[i][0]);
                    close(pairs[i][1]);
                }
            }
            int code = fn(&b, arg);
            star_close(&b);
            _exit(code);
        }
    }
    for (int r = 1; r < world; r++) {
        close(pairs[r][0]);
        close(pairs[r][1]);
    }
    for (int r = 0; r < world; r++) {
        int st = 0;
        pid_t got;
        while ((got = waitpid(pids[r], &st, WNOHANG)) == 0 &&
               pf_ms_left(deadline) > 0)
            pf_sleep_ms(20);
        if (got == 0) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], &st, 0);
            codes[r] = 255;
        } else {
            codes[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        bad += codes[r] != 0;
    }
    return bad;
}
