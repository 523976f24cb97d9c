/* rendezvous, joining as a rank other than 0: dial rank 0 (retrying until
 * the deadline, since it may start later), prove membership, read the
 * peer table. Rank 0's side is rdv_root.c; the protocol is in
 * rendezvous.h. */
#include "rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/log.h"
#include "../util/progress.h"
#include "../util/tcp.h"
#include "rdv_impl.h"

#define DIAL_MS 3000          /* one connect attempt */
#define BACKOFF_MAX_MS 1000
#define GONE_PER_RANK_MS 10   /* rank 0 asked about less often per rank... */
#define GONE_MAX_MS 15000     /* ...but at least this often */

/* ------------------------------------------------------------- peers */

static pf_err join_fail(struct pf_fault *fault, pf_err code, char *err,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static pf_err join_fail(struct pf_fault *fault, pf_err code, char *err,
                        const char *fmt, ...)
{
    char msg[PF_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    rdv_record(fault, code, msg);
    return pf_fail(err, code, "%s", msg);
}

static pf_err dial(const struct pf_rdv_cfg *cfg, int64_t deadline, int *out,
                   char *msg)
{
    int fd = pf_dial_tcp(cfg->root_host, cfg->root_port, cfg->bind_addr,
                         deadline, DIAL_MS, msg, PF_ERRLEN);

    if (fd < 0)
        return PF_ERR_IO;
    *out = fd;
    return PF_OK;
}

static pf_err read_table(struct rdv *r, const struct pf_rdv_cfg *cfg,
                         const struct pf_msg *m, const uint8_t *nonce,
                         const char *root, char *err)
{
    struct pf_rbuf rb = { m->body, m->len, 0, false };
    struct pf_rdv_facts *f = calloc((size_t)cfg->world, sizeof(*f));
    uint8_t mac[PF_RDV_MAC];
    size_t table_len;
    bool has_mac;
    int world;

    if (!f)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the peer table");
    world = (int)pf_get_u32(&rb);
    for (int i = 0; i < world && i < cfg->world && !rb.bad; i++) {
        pf_get_str(&rb, f[i].addr, sizeof(f[i].addr));
        pf_get_str(&rb, f[i].hostname, sizeof(f[i].hostname));
        pf_get_str(&rb, f[i].instance_type, sizeof(f[i].instance_type));
        f[i].efa_count = (int)pf_get_u32(&rb);
        f[i].gpu_count = (int)pf_get_u32(&rb);
    }
    has_mac = pf_get_u8(&rb) != 0;
    table_len = rb.off;
    if (has_mac)
        pf_get_bytes(&rb, mac, sizeof(mac));
    if (world != cfg->world || rb.bad || rb.off != m->len) {
        free(f);
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "malformed peer "
                         "table from rank 0 at %s", root);
    }
    if (cfg->secret) {
        if (!has_mac || !pf_seal_ok(cfg->secret, cfg->secret_len, m->body,
                                    table_len, nonce, mac)) {
            free(f);
            return join_fail(cfg->fault, PF_ERR_REJECTED, err, "the peer table "
                             "from rank 0 at %s is not signed with this "
                             "rank's secret", root);
        }
    }
    /* Rank 0 does not see its own address; this rank dialled it. */
    if (!f[0].addr[0])
        snprintf(f[0].addr, sizeof(f[0].addr), "%s", cfg->root_host);
    memcpy(r->facts, f, (size_t)world * sizeof(*f));
    free(f);
    return PF_OK;
}

/* Rank 0 dropped this connection to make room before it read the HELLO
 * (strangers were holding its slots): dial again. */
static pf_err busy(char *last, bool *retry)
{
    snprintf(last, PF_ERRLEN, "rank 0 made room for other connections "
             "before reading this rank's HELLO (a flood of connections?)");
    *retry = true;
    return PF_ERR_LOST;
}

/* One HELLO exchange on a fresh connection. *retry asks for another dial
 * (rank 0 closed before its challenge: a previous run shutting down). */
static pf_err hello_exchange(struct rdv *r, const struct pf_rdv_cfg *cfg,
                             const char *root, bool *retry, char *last,
                             char *err)
{
    struct pf_conn *c = &r->conns[0];
    uint8_t body[1024 + 4 * PF_NAME_MAX], challenge[PF_RDV_NONCE];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    struct pf_rbuf rb;
    struct pf_hello h;
    struct pf_msg m;
    char msg[PF_ERRLEN], reason[48];
    pf_err rc;

    *retry = false;
    rc = pf_wire_recv(c, &m, cfg->deadline, msg);
    if (rc == PF_ERR_LOST) {
        snprintf(last, PF_ERRLEN, "rank 0 closed the connection before its "
                 "challenge");
        *retry = true;
        return rc;
    }
    if (rc == PF_ERR_TIMEOUT)
        return join_fail(cfg->fault, PF_ERR_TIMEOUT, err, "connected to %s but "
                         "no rendezvous challenge came before the deadline "
                         "(is something else listening there?)", root);
    if (rc != PF_OK)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "%s: %s", root, msg);
    if (m.type == PF_RDV_BUSY)
        return busy(last, retry);
    rb = (struct pf_rbuf){ m.body, m.len, 0, false };
    if (m.type != PF_RDV_CHALLENGE || pf_get_u32(&rb) != PF_RDV_MAGIC)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "%s does not speak "
                         "the efa-preflight rendezvous", root);
    h.version = pf_get_u16(&rb);
    pf_get_bytes(&rb, challenge, sizeof(challenge));
    if (rb.bad)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "malformed "
                         "challenge from %s", root);
    if (h.version != PF_RDV_VERSION)
        return join_fail(cfg->fault, PF_ERR_REJECTED, err, "rank 0 at %s "
                         "speaks rendezvous protocol version %u, this rank %u",
                         root, h.version, PF_RDV_VERSION);

    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = cfg->rank;
    h.world = cfg->world;
    snprintf(h.run_id, sizeof(h.run_id), "%s", cfg->run_id);
    h.facts = cfg->self;
    pf_seal_nonce(h.nonce);
    rc = pf_rdv_hello_encode(&h, cfg->secret, cfg->secret_len, challenge, &w,
                             err);
    if (rc != PF_OK)
        return rc;
    if (pf_wire_send(c, PF_RDV_HELLO, body, w.len, cfg->deadline, msg) !=
        PF_OK) {
        snprintf(last, PF_ERRLEN, "sending HELLO failed: %s", msg);
        *retry = true;
        return PF_ERR_LOST;
    }

    /* Rank 0 gives up at the same deadline and then tells every member
     * who never came (an ABORT naming them): wait a moment past it for
     * that word, rather than blame rank 0. */
    rc = pf_wire_recv(c, &m, cfg->deadline + CTRL_MS, msg);
    if (rc == PF_ERR_TIMEOUT)
        return join_fail(cfg->fault, PF_ERR_TIMEOUT, err, "rank 0 at %s "
                         "accepted rank %d but did not complete the rendezvous "
                         "before the deadline (another rank never joined)",
                         root, cfg->rank);
    if (rc == PF_ERR_LOST)
        return join_fail(cfg->fault, PF_ERR_LOST, err, "rank 0 at %s closed "
                         "the connection during the rendezvous", root);
    if (rc != PF_OK)
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "%s: %s", root, msg);
    switch (m.type) {
    case PF_RDV_WELCOME:
        return read_table(r, cfg, &m, h.nonce, root, err);
    case PF_RDV_BUSY:
        return busy(last, retry);
    case PF_RDV_REJECT:
        rdv_read_reason(&m, reason, msg);
        return join_fail(cfg->fault, PF_ERR_REJECTED, err, "%s", msg);
    case PF_RDV_ABORT:
        rdv_read_reason(&m, reason, msg);
        return join_fail(cfg->fault, pf_rdv_reason_err(reason), err,
                         "rank 0 at %s gave up: %s", root, msg);
    default:
        return join_fail(cfg->fault, PF_ERR_PROTOCOL, err, "unexpected message "
                         "type %u from rank 0 at %s", m.type, root);
    }
}

/* Every rank but 0 may ask about rank 0 while it does not answer
 * (rendezvous.h, cfg.gone): the group's questions together stay about one
 * every GONE_PER_RANK_MS, so a large group asks each less often. */
static int64_t gone_period(const struct pf_rdv_cfg *cfg)
{
    int64_t base = cfg->gone_ms > 0 ? cfg->gone_ms : PF_RDV_GONE_MS;
    int64_t spread = (int64_t)cfg->world * GONE_PER_RANK_MS;

    if (spread < base)
        return base;
    return spread < GONE_MAX_MS ? spread : GONE_MAX_MS;
}

pf_err rdv_peer_join(struct rdv *r, const struct pf_rdv_cfg *cfg, char *err)
{
    char last[PF_ERRLEN] = "no attempt made", root[PF_NAME_MAX + 16];
    int64_t backoff = 50, start = pf_now_ms();
    int64_t gone_next = start + gone_period(cfg);

    snprintf(root, sizeof(root), "%s:%d", cfg->root_host, cfg->root_port);
    for (;;) {
        int64_t left = pf_ms_left(cfg->deadline);
        bool retry = false;
        int fd = -1;
        pf_err rc;

        if (left <= 0)
            return join_fail(cfg->fault, PF_ERR_TIMEOUT, err, "rank 0 at %s "
                             "never answered within %.0f s (last error: %s)",
                             root, (double)(pf_now_ms() - start) / 1000.0,
                             last);
        if (pf_progress_due(cfg->progress, pf_now_ms()))
            pf_progress_say(cfg->progress, pf_now_ms(), "rank 0 at %s not "
                            "reached yet (%s); %.0f s left", root, last,
                            (double)left / 1000.0);
        if (dial(cfg, cfg->deadline, &fd, last) != PF_OK) {
            /* Nobody listens: rank 0 may not be there yet, or may have
             * stopped before it ever listened. */
            if (cfg->gone && pf_now_ms() >= gone_next) {
                char why[PF_ERRLEN / 2] = "";
                if (cfg->gone(cfg->gone_ctx, 0, why, sizeof(why)))
                    return join_fail(cfg->fault, PF_ERR_LOST, err, "rank 0 at "
                                     "%s stopped before this rank joined: %s",
                                     root, why[0] ? why : "gone");
                gone_next = pf_now_ms() + gone_period(cfg);
                left = pf_ms_left(cfg->deadline);
                if (left <= 0)
                    continue;
            }
            pf_sleep_ms(backoff < left ? backoff : left);
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                                   : backoff * 2;
            continue;
        }
        pf_tcp_keepalive(fd);
        pf_conn_init(&r->conns[0], fd);
        rc = hello_exchange(r, cfg, root, &retry, last, err);
        if (rc == PF_OK) {
            pf_info("rendezvous: rank %d joined rank 0 at %s", cfg->rank, root);
            return PF_OK;
        }
        pf_conn_close(&r->conns[0]);
        if (!retry)
            return rc;
        pf_sleep_ms(backoff < left ? backoff : left);
    }
}

