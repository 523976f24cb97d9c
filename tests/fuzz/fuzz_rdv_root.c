/* libFuzzer target: rank 0 of the rendezvous, talking to a peer that lies
 * after joining. A thread plays rank 1 on loopback: it answers rank 0's
 * CHALLENGE with a proper HELLO, waits for the peer table, then sends
 * the input bytes as they are (DATA, ABORT, BYE frames or garbage) and
 * closes. Rank 0 runs the whole
 * root side: accept, check the HELLO, send the table, then barrier,
 * allgather, a bcast rooted at rank 1 and poll on whatever follows.
 * Invariants: it ends well before the deadline (the stream ends), a
 * failure carries a reason word the verdict knows, and nothing leaks. */
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
#include "discover/discover.h"
#include "launch/launch.h"
#include "util/clock.h"

struct fake_peer {
    int port;
    const uint8_t *data;
    size_t size;
};

static bool recv_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n > 0) {
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        ssize_t r;
        if (poll(&pf, 1, 5000) <= 0)
            return false;
        r = recv(fd, b, n, 0);
        if (r <= 0)
            return false;
        b += r;
        n -= (size_t)r;
    }
    return true;
}

static int dial(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    /* Rank 0 may not listen yet: retry for up to 5 s. */
    for (int i = 0; i < 5000; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
            return fd;
        close(fd);
        pf_sleep_ms(1);
    }
    return -1;
}

static void *play_peer(void *arg)
{
    struct fake_peer *f = arg;
    uint8_t head[5], challenge[4 + 2 + PF_RDV_NONCE], body[2048], sink[4096];
    struct pf_wbuf w = { body + 5, 0, sizeof(body) - 5, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    int fd = dial(f->port);

    if (fd < 0)
        return NULL;
    if (!recv_all(fd, head, sizeof(head)) || head[4] != PF_RDV_CHALLENGE ||
        !recv_all(fd, challenge, sizeof(challenge))) {
        close(fd);
        return NULL;
    }
    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = 1;
    h.world = 2;
    snprintf(h.run_id, sizeof(h.run_id), "run-1");
    snprintf(h.facts.hostname, sizeof(h.facts.hostname), "fuzz-peer");
    if (pf_rdv_hello_encode(&h, NULL, 0, challenge + 6, &w, err) == PF_OK) {
        uint32_t flen = (uint32_t)w.len + 1;
        body[0] = (uint8_t)(flen >> 24);
        body[1] = (uint8_t)(flen >> 16);
        body[2] = (uint8_t)(flen >> 8);
        body[3] = (uint8_t)flen;
        body[4] = PF_RDV_HELLO;
        fuzz_send_all(fd, body, 5 + w.len);
        /* A real peer speaks only after the table (rank 0 counts a peer
         * that closes before it as gone again). */
        if (recv_all(fd, head, sizeof(head)) && head[4] == PF_RDV_WELCOME) {
            uint32_t len = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 |
                           (uint32_t)head[2] << 8 | head[3];
            if (len >= 1 && len - 1 <= sizeof(sink) &&
                recv_all(fd, sink, len - 1))
                fuzz_send_all(fd, f->data, f->size);
        }
    }
    shutdown(fd, SHUT_WR);
    /* Read until rank 0 closes, so its table, DATA and BYE land somewhere. */
    fuzz_drain(fd);
    close(fd);
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int port;
    struct fake_peer f;
    struct fuzz_rank k;
    pthread_t t;
    int64_t start = pf_now_ms();
    pf_err rc;

    if (!port && pf_free_port(&port, k.err) != PF_OK)
        __builtin_trap();
    f = (struct fake_peer){ port, data, size };
    fuzz_rdv_cfg(&k, 0, port, "fuzz-root");
    snprintf(k.cfg.bind_addr, sizeof(k.cfg.bind_addr), "127.0.0.1");
    if (pthread_create(&t, NULL, play_peer, &f))
        return 0;

    rc = pf_rdv_open(&k.cfg, &k.b, NULL, k.err);
    if (rc == PF_OK)
        rc = fuzz_rdv_collectives(k.b, 1, k.cfg.deadline, k.err);
    pthread_join(t, NULL);
    fuzz_rdv_ended_well(&k, start, rc);
    return 0;
}
