/* rdv_sim: the rendezvous at scale on one machine.
 *
 *   rdv_sim root WORLD PORT [SECRET]
 *       rank 0, the agent's own code (pf_rdv_open) on 127.0.0.1:PORT for a
 *       group of WORLD ranks; when every peer has its table it prints
 *       "root world=W join_ms=J cpu_ms=C maxrss_kib=R" (getrusage of the
 *       whole process) and exits 0.
 *   rdv_sim peers FIRST COUNT WORLD PORT [SECRET]
 *       COUNT simulated ranks FIRST..FIRST+COUNT-1 in one process, each a
 *       non-blocking socket in one epoll set, speaking the wire protocol:
 *       read the CHALLENGE, send a (signed) HELLO, read the WELCOME. The
 *       table's bytes are counted and dropped, so a simulated rank costs a
 *       socket and a few dozen bytes. Prints "peers start_ms=S done_ms=D
 *       ok=K failed=F" (CLOCK_MONOTONIC, comparable across processes) and
 *       exits with the number of failures (at most 100).
 *
 * bench/scale_rendezvous.sh runs one root and a few peer processes. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/rendezvous.h"
#include "util/clock.h"

#define DEADLINE_MS 60000
#define RETRY_MS 20

enum { DIALING, CHALLENGED, HELLOED, DONE, FAILED };

struct sim {
    int fd, state, rank;
    uint8_t head[64];                 /* CHALLENGE, or the WELCOME's head */
    size_t have;
    uint64_t left;                    /* WELCOME bytes still to drop */
    int64_t retry_at;
};

struct ctx {
    int ep, world, port, ok, failed, pending;
    const char *secret;
    struct sockaddr_in to;
    int64_t done_ms;
};

static void raise_nofile(long need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= (rlim_t)need)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (rl.rlim_max < (rlim_t)need || setrlimit(RLIMIT_NOFILE, &rl))
        fprintf(stderr, "rdv_sim: RLIMIT_NOFILE %llu is below the %ld "
                "sockets needed\n", (unsigned long long)rl.rlim_max, need);
}

static int run_root(int world, int port, const char *secret)
{
    struct pf_rdv_cfg cfg;
    struct pf_fault fault;
    struct pf_boot *b = NULL;
    struct rusage ru;
    char err[PF_ERRLEN];
    int64_t t0 = pf_now_ms();

    memset(&cfg, 0, sizeof(cfg));
    memset(&fault, 0, sizeof(fault));
    cfg.rank = 0;
    cfg.world = world;
    snprintf(cfg.root_host, sizeof(cfg.root_host), "127.0.0.1");
    snprintf(cfg.bind_addr, sizeof(cfg.bind_addr), "127.0.0.1");
    cfg.root_port = port;
    snprintf(cfg.run_id, sizeof(cfg.run_id), "bench");
    cfg.secret = (const uint8_t *)secret;
    cfg.secret_len = secret ? strlen(secret) : 0;
    snprintf(cfg.self.hostname, sizeof(cfg.self.hostname), "sim-root");
    snprintf(cfg.self.instance_type, sizeof(cfg.self.instance_type),
             "p5.48xlarge");
    cfg.deadline = pf_deadline_in(DEADLINE_MS);
    cfg.fault = &fault;
    if (pf_rdv_open(&cfg, &b, NULL, err) != PF_OK) {
        fprintf(stderr, "rdv_sim root: %s\n", err);
        return 1;
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("root world=%d join_ms=%lld cpu_ms=%lld maxrss_kib=%ld\n", world,
           (long long)(pf_now_ms() - t0),
           (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
               (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000,
           ru.ru_maxrss);
    fflush(stdout);
    pf_boot_close(b);
    return 0;
}

static void finish(struct ctx *c, struct sim *s, int state)
{
    if (s->fd >= 0)
        close(s->fd);             /* leaves the epoll set */
    s->fd = -1;
    s->state = state;
    c->pending--;
    if (state == DONE) {
        c->ok++;
        c->done_ms = pf_now_ms();
    } else {
        c->failed++;
    }
}

static void dial(struct ctx *c, struct sim *s, int idx)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT,
                              .data.u32 = (uint32_t)idx };

    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    s->state = DIALING;
    s->have = 0;
    if (s->fd < 0 || (connect(s->fd, (struct sockaddr *)&c->to,
                              sizeof(c->to)) && errno != EINPROGRESS) ||
        epoll_ctl(c->ep, EPOLL_CTL_ADD, s->fd, &ev)) {
        if (s->fd >= 0)
            close(s->fd);
        s->fd = -1;
        s->retry_at = pf_now_ms() + RETRY_MS;   /* rank 0 not up yet */
    }
}

static bool send_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;             /* a HELLO fits an empty buffer */
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static void say_hello(struct ctx *c, struct sim *s)
{
    uint8_t body[1024], frame[1100];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    struct pf_hello h;
    char err[PF_ERRLEN];

    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = s->rank;
    h.world = c->world;
    snprintf(h.run_id, sizeof(h.run_id), "bench");
    snprintf(h.facts.hostname, sizeof(h.facts.hostname),
             "ip-10-0-%d-%d.ec2.internal", s->rank / 256, s->rank % 256);
    snprintf(h.facts.instance_type, sizeof(h.facts.instance_type),
             "p5.48xlarge");
    h.facts.efa_count = 32;
    h.facts.gpu_count = 8;
    memcpy(h.nonce, &s->rank, sizeof(s->rank));
    if (pf_rdv_hello_encode(&h, (const uint8_t *)c->secret,
                            c->secret ? strlen(c->secret) : 0,
                            s->head + 5 + 6, &w, err) != PF_OK) {
        finish(c, s, FAILED);
        return;
    }
    frame[0] = (uint8_t)((w.len + 1) >> 24);
    frame[1] = (uint8_t)((w.len + 1) >> 16);
    frame[2] = (uint8_t)((w.len + 1) >> 8);
    frame[3] = (uint8_t)(w.len + 1);
    frame[4] = PF_RDV_HELLO;
    memcpy(frame + 5, body, w.len);
    if (!send_all(s->fd, frame, w.len + 5)) {
        finish(c, s, FAILED);
        return;
    }
    s->state = HELLOED;
    s->have = 0;
}

/* Read what arrived: the CHALLENGE (27 bytes), then the WELCOME, whose
 * head is checked and whose body is counted and dropped. */
static void on_readable(struct ctx *c, struct sim *s)
{
    uint8_t sink[65536];

    for (;;) {
        ssize_t n;
        if (s->state == CHALLENGED || (s->state == HELLOED && s->have < 9)) {
            size_t want = s->state == CHALLENGED ? 5 + 6 + PF_RDV_NONCE : 9;
            n = recv(s->fd, s->head + s->have, want - s->have, 0);
            if (n <= 0)
                break;
            s->have += (size_t)n;
            if (s->have < want)
                continue;
            if (s->state == CHALLENGED) {
                if (s->head[4] != PF_RDV_CHALLENGE) {
                    finish(c, s, FAILED);
                    return;
                }
                say_hello(c, s);
                if (s->state != HELLOED)
                    return;
                continue;
            }
            /* [len][type][u32 world]: a WELCOME for this group. */
            if (s->head[4] != PF_RDV_WELCOME ||
                (int)((uint32_t)s->head[5] << 24 | (uint32_t)s->head[6] << 16 |
                      (uint32_t)s->head[7] << 8 | s->head[8]) != c->world) {
                finish(c, s, FAILED);
                return;
            }
            s->left = ((uint64_t)s->head[0] << 24 | (uint64_t)s->head[1] << 16 |
                       (uint64_t)s->head[2] << 8 | s->head[3]) - 5;
        } else if (s->state == HELLOED) {
            n = recv(s->fd, sink, s->left < sizeof(sink) ? s->left
                                                          : sizeof(sink), 0);
            if (n <= 0)
                break;
            s->left -= (uint64_t)n;
        } else {
            return;
        }
        if (s->state == HELLOED && s->have >= 9 && s->left == 0) {
            finish(c, s, DONE);
            return;
        }
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        finish(c, s, FAILED);
    else if (s->fd >= 0 && recv(s->fd, sink, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
        finish(c, s, FAILED);         /* closed before the table */
}

static int run_peers(int first, int count, int world, int port,
                     const char *secret)
{
    struct ctx c = { .world = world, .port = port, .secret = secret,
                     .pending = count };
    struct sim *sims = calloc((size_t)count, sizeof(*sims));
    struct epoll_event evs[256];
    int64_t start = pf_now_ms(), until = start + DEADLINE_MS;

    raise_nofile(count + 64L);
    c.ep = epoll_create1(EPOLL_CLOEXEC);
    if (!sims || c.ep < 0)
        return 100;
    c.to.sin_family = AF_INET;
    c.to.sin_port = htons((uint16_t)port);
    c.to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < count; i++) {
        sims[i].rank = first + i;
        dial(&c, &sims[i], i);
    }
    while (c.pending > 0 && pf_now_ms() < until) {
        int n = epoll_wait(c.ep, evs, 256, RETRY_MS);
        int64_t now = pf_now_ms();
        for (int k = 0; k < n; k++) {
            struct sim *s = &sims[evs[k].data.u32];
            if (s->fd < 0)
                continue;
            if (s->state == DIALING) {
                int soerr = 0;
                socklen_t sl = sizeof(soerr);
                struct epoll_event ev = { .events = EPOLLIN,
                                          .data.u32 = evs[k].data.u32 };
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                if (soerr) {          /* refused: rank 0 not listening yet */
                    close(s->fd);
                    s->fd = -1;
                    s->retry_at = now + RETRY_MS;
                    continue;
                }
                epoll_ctl(c.ep, EPOLL_CTL_MOD, s->fd, &ev);
                s->state = CHALLENGED;
            }
            on_readable(&c, s);
        }
        for (int i = 0; i < count; i++)
            if (sims[i].fd < 0 && sims[i].state == DIALING &&
                sims[i].retry_at <= now)
                dial(&c, &sims[i], i);
    }
    printf("peers start_ms=%lld done_ms=%lld ok=%d failed=%d\n",
           (long long)start, (long long)c.done_ms, c.ok,
           c.failed + c.pending);
    for (int i = 0; i < count; i++)
        if (sims[i].fd >= 0)
            close(sims[i].fd);
    free(sims);
    close(c.ep);
    return c.failed + c.pending > 100 ? 100 : c.failed + c.pending;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "root"))
        return run_root(atoi(argv[2]), atoi(argv[3]),
                        argc > 4 ? argv[4] : NULL);
    if (argc >= 6 && !strcmp(argv[1], "peers"))
        return run_peers(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                         atoi(argv[5]), argc > 6 ? argv[6] : NULL);
    fprintf(stderr, "usage: rdv_sim root WORLD PORT [SECRET]\n"
                    "       rdv_sim peers FIRST COUNT WORLD PORT [SECRET]\n");
    return 2;
}
