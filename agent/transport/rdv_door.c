/* rendezvous, rank 0 after the group formed: the listener stays open
 * until the rendezvous closes, and a thread answers whoever still comes.
 *
 * Every rank is taken by then, so a HELLO that passes the other checks is
 * a rank claimed twice: in static mode an impostor that came first (or a
 * rank restarted after the table) would otherwise leave the real rank
 * dialling a closed port until its deadline and reporting "rank 0 never
 * answered". It is told PeerRejected "rank N is claimed twice" instead,
 * and stops at once. One connection at a time, each bounded by DOOR_MS;
 * the thread never touches the group's state. */
#include "rendezvous.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "../util/tcp.h"
#include "rdv_impl.h"

#define DOOR_MS 2000          /* a late comer must say HELLO within this */
#define DOOR_HELLO_LIMIT 4096 /* as before the table */
#define DOOR_WARN_MS 1000     /* at most one warning per second */

struct rdv_door {
    int lfd, stop_fd;
    pthread_t th;
    int world;
    char run_id[PF_NAME_MAX];
    uint8_t *secret;
    size_t secret_len;
    bool *joined;                     /* every rank: all taken */
    int64_t warned;
};

/* Wait until fd is readable, the door is stopped, or until: 1 readable,
 * 0 timed out, -1 stopped. */
static int wait_in(struct rdv_door *d, int fd, int64_t until)
{
    for (;;) {
        struct pollfd p[2] = { { fd, POLLIN, 0 }, { d->stop_fd, POLLIN, 0 } };
        int64_t left = pf_ms_left(until);
        int n;

        if (until >= 0 && left <= 0)
            return 0;
        n = poll(p, 2, until < 0 ? -1 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || p[1].revents)
            return -1;
        if (n > 0)
            return 1;
    }
}

/* One late comer: challenge, its HELLO, the verdict on it. */
static void answer(struct rdv_door *d, int fd, const char *addr)
{
    uint8_t body[8 + PF_RDV_NONCE], nonce[PF_RDV_NONCE];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    int64_t until = pf_deadline_in(DOOR_MS);
    struct pf_rdv_view v = { d->world, d->run_id, d->secret, d->secret_len,
                             nonce, d->joined, addr, NULL };
    char msg[PF_ERRLEN], full[PF_ERRLEN];
    struct pf_conn c;
    struct pf_hello h;
    struct pf_msg m;
    int got = 0;

    pf_conn_init(&c, fd);
    c.limit = DOOR_HELLO_LIMIT;
    pf_seal_nonce(nonce);
    pf_put_u32(&w, PF_RDV_MAGIC);
    pf_put_u16(&w, PF_RDV_VERSION);
    pf_put_bytes(&w, nonce, PF_RDV_NONCE);
    if (pf_wire_send(&c, PF_RDV_CHALLENGE, body, w.len, until, NULL) != PF_OK)
        goto out;
    while (got == 0 && wait_in(d, fd, until) > 0) {
        if (pf_wire_pump(&c, msg) != PF_OK)
            goto out;                 /* gone, or a frame too large */
        got = pf_wire_take(&c, &m, msg);
    }
    if (got <= 0 || m.type != PF_RDV_HELLO)
        goto out;
    if (pf_rdv_check_hello(&v, m.body, m.len, &h, msg) != PF_ERR_REJECTED)
        goto out;                     /* cannot be: every rank is taken */
    snprintf(full, sizeof(full), "rank 0 rejected a peer from %s: %s (the "
             "group formed without it)", addr, msg);
    rdv_send_reason(&c, PF_RDV_REJECT, pf_reason_name(PF_R_PeerRejected),
                    full, pf_deadline_in(CTRL_MS));
    if (pf_now_ms() - d->warned >= DOOR_WARN_MS) {
        pf_warn("rendezvous: after the group formed, %s: %s", addr, msg);
        d->warned = pf_now_ms();
    }
out:
    pf_conn_close(&c);
}

static void *door_main(void *arg)
{
    struct rdv_door *d = arg;

    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char addr[64];
        int fd, in = wait_in(d, d->lfd, -1);

        if (in < 0)
            break;
        fd = accept4(d->lfd, (struct sockaddr *)&ss, &sl,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            /* Out of descriptors: pause instead of spinning. */
            if ((errno == EMFILE || errno == ENFILE) &&
                wait_in(d, d->stop_fd, pf_deadline_in(100)) != 0)
                break;
            continue;
        }
        pf_tcp_peer_addr(&ss, sl, addr, sizeof(addr));
        answer(d, fd, addr);
    }
    return NULL;
}

pf_err rdv_door_open(int lfd, const struct pf_rdv_cfg *cfg, int world,
                     struct rdv_door **out, char *err)
{
    struct rdv_door *d = calloc(1, sizeof(*d));

    *out = NULL;
    if (!d)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous door");
    d->lfd = lfd;
    d->world = world;
    d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    snprintf(d->run_id, sizeof(d->run_id), "%s", cfg->run_id);
    d->joined = malloc((size_t)world * sizeof(bool));
    if (cfg->secret) {
        d->secret = malloc(cfg->secret_len ? cfg->secret_len : 1);
        if (d->secret)
            memcpy(d->secret, cfg->secret, cfg->secret_len);
        d->secret_len = cfg->secret_len;
    }
    if (d->stop_fd < 0 || !d->joined || (cfg->secret && !d->secret)) {
        if (d->stop_fd >= 0)
            close(d->stop_fd);
        free(d->joined);
        free(d->secret);
        free(d);
        return pf_fail(err, PF_ERR_SYS, "rendezvous door: %s",
                       strerror(errno ? errno : ENOMEM));
    }
    for (int i = 0; i < world; i++)
        d->joined[i] = true;
    errno = pthread_create(&d->th, NULL, door_main, d);
    if (errno) {
        int e = errno;
        close(d->stop_fd);
        free(d->joined);
        free(d->secret);
        free(d);
        return pf_fail(err, PF_ERR_SYS, "rendezvous door: pthread_create: %s",
                       strerror(e));
    }
    *out = d;
    return PF_OK;
}

void rdv_door_close(struct rdv_door *d)
{
    uint64_t one = 1;

    if (!d)
        return;
    if (write(d->stop_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
        pf_debug("rendezvous door: stop: %s", strerror(errno));
    pthread_join(d->th, NULL);
    close(d->stop_fd);
    close(d->lfd);
    if (d->secret)
        memset(d->secret, 0, d->secret_len);
    free(d->secret);
    free(d->joined);
    free(d);
}
