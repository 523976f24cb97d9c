/* libFuzzer target: a rank joining the rendezvous, talking to a rank 0
 * that lies. A thread plays rank 0 on loopback: it sends a proper
 * CHALLENGE, then the input bytes as they are (WELCOME, REJECT, ABORT,
 * DATA frames or garbage), then closes. The rank under test runs the whole
 * peer side: HELLO exchange, peer table, then barrier, allgather, bcast
 * and poll on whatever follows. Invariants: it ends well before the
 * deadline (the stream ends), a failure carries a reason word the verdict knows,
 * and nothing leaks. The first input byte turns on a secret, so the
 * signed-table path is exercised too. */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_rdv.h"
#include "transport/rendezvous.h"
#include "util/clock.h"

struct fake_root {
    int lfd;
    int done;                         /* readable once the rank is finished */
    const uint8_t *data;
    size_t size;
};

/* One connection: the CHALLENGE, then body (the input, or nothing), then
 * the rank's bytes read until it closes, so its HELLO and BYE land
 * somewhere. */
static void serve(int fd, const uint8_t *body, size_t len)
{
    uint8_t ch[5 + 4 + 2 + PF_RDV_NONCE] = { 0, 0, 0, 23, PF_RDV_CHALLENGE,
                                             0x50, 0x46, 0x52, 0x56, 0,
                                             PF_RDV_VERSION };

    fuzz_send_all(fd, ch, sizeof(ch));
    fuzz_send_all(fd, body, len);
    shutdown(fd, SHUT_WR);
    fuzz_drain(fd);
    close(fd);
}

static void *play_root(void *arg)
{
    struct fake_root *f = arg;
    struct pollfd p[2] = { { f->lfd, POLLIN, 0 }, { f->done, POLLIN, 0 } };
    int fd = accept(f->lfd, NULL, NULL);

    if (fd < 0)
        return NULL;
    serve(fd, f->data, f->size);
    /* A BUSY in the input sends the rank to dial again: that second
     * connection gets a CHALLENGE and a close, so it ends at once. A rank
     * that finished instead says so through done. */
    if (poll(p, 2, 5000) > 0 && !p[1].revents &&
        (fd = accept(f->lfd, NULL, NULL)) >= 0)
        serve(fd, NULL, 0);
    return NULL;
}

static int listener(int *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
        listen(fd, 16) || getsockname(fd, (struct sockaddr *)&a, &len))
        __builtin_trap();
    *port = ntohs(a.sin_port);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t secret[] = "fuzz-secret";
    static int lfd = -1, port, done[2] = { -1, -1 };
    struct fake_root f;
    uint8_t drain[16];
    struct fuzz_rank k;
    struct pf_rdv_facts table[2];
    pthread_t t;
    int64_t start = pf_now_ms();
    pf_err rc;

    if (size < 1)
        return 0;
    if (lfd < 0)
        lfd = listener(&port);
    if (done[0] < 0 && pipe2(done, O_NONBLOCK | O_CLOEXEC))
        __builtin_trap();
    f = (struct fake_root){ lfd, done[0], data + 1, size - 1 };
    fuzz_rdv_cfg(&k, 1, port, "fuzz-host");
    if (data[0] & 1) {
        k.cfg.secret = secret;
        k.cfg.secret_len = sizeof(secret) - 1;
    }
    if (pthread_create(&t, NULL, play_root, &f))
        return 0;

    rc = pf_rdv_open(&k.cfg, &k.b, table, k.err);
    if (rc == PF_OK) {
        if (strnlen(table[0].hostname, sizeof(table[0].hostname)) ==
            sizeof(table[0].hostname))
            __builtin_trap();
        rc = fuzz_rdv_collectives(k.b, 0, k.cfg.deadline, k.err);
    }
    if (write(done[1], "", 1) != 1)
        __builtin_trap();
    pthread_join(t, NULL);
    while (read(done[0], drain, sizeof(drain)) > 0)
        ;
    /* err may be empty when rank 0's REJECT or ABORT carried no words;
     * the verdict then falls back to the error code's name. */
    fuzz_rdv_ended_well(&k, start, rc);
    return 0;
}
