#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../util/clock.h"

#define HEADER 4

static uint32_t limit_of(const struct pf_conn *c)
{
    return c->limit && c->limit < PF_WIRE_MAX_FRAME ? c->limit
                                                    : PF_WIRE_MAX_FRAME;
}

void pf_conn_init(struct pf_conn *c, int fd)
{
    memset(c, 0, sizeof(*c));
    c->fd = fd;
}

void pf_conn_close(struct pf_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

static int poll_ms(int64_t deadline)
{
    int64_t left = pf_ms_left(deadline);
    if (left <= 0)
        return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

pf_err pf_wire_send(struct pf_conn *c, uint8_t type, const void *body,
                    size_t len, int64_t deadline, char *err)
{
    uint8_t head[HEADER + 1];
    uint32_t flen;
    size_t total, sent = 0;

    if (len + 1 > PF_WIRE_MAX_FRAME)
        return pf_fail(err, PF_ERR_USAGE, "message of %zu bytes exceeds the "
                       "frame limit of %u bytes", len, PF_WIRE_MAX_FRAME);
    flen = (uint32_t)(len + 1);
    head[0] = (uint8_t)(flen >> 24);
    head[1] = (uint8_t)(flen >> 16);
    head[2] = (uint8_t)(flen >> 8);
    head[3] = (uint8_t)flen;
    head[4] = type;
    total = sizeof(head) + len;
    while (sent < total) {
        struct iovec iov[2];
        struct msghdr mh = { 0 };
        int n = 0;
        ssize_t w;

        if (sent < sizeof(head)) {
            iov[n].iov_base = head + sent;
            iov[n++].iov_len = sizeof(head) - sent;
            if (len) {
                iov[n].iov_base = (void *)body;
                iov[n++].iov_len = len;
            }
        } else {
            iov[n].iov_base = (uint8_t *)body + (sent - sizeof(head));
            iov[n++].iov_len = total - sent;
        }
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)n;
        w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            sent += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = { .fd = c->fd, .events = POLLOUT };
            int ms = poll_ms(deadline);
            if (ms == 0)
                return pf_fail(err, PF_ERR_TIMEOUT, "send of %zu bytes did "
                               "not finish before the deadline", total);
            if (poll(&p, 1, ms) < 0 && errno != EINTR)
                return pf_fail(err, PF_ERR_SYS, "poll: %s", strerror(errno));
            continue;
        }
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            return pf_fail(err, PF_ERR_LOST, "connection closed by the peer "
                           "(%s)", strerror(errno));
        return pf_fail(err, PF_ERR_IO, "send: %s",
                       w < 0 ? strerror(errno) : "wrote nothing");
    }
    return PF_OK;
}

pf_err pf_wire_pump(struct pf_conn *c, char *err)
{
    for (;;) {
        ssize_t n;

        if (c->off > 0) {
            memmove(c->buf, c->buf + c->off, c->have - c->off);
            c->have -= c->off;
            c->off = 0;
        }
        if (c->have == c->cap) {
            /* Grow to hold the frame being read, never past the limit. */
            size_t want = c->cap ? c->cap * 2 : 4096;
            if (c->have >= HEADER) {
                uint32_t flen = (uint32_t)c->buf[0] << 24 |
                                (uint32_t)c->buf[1] << 16 |
                                (uint32_t)c->buf[2] << 8 | c->buf[3];
                if (flen > limit_of(c))
                    return PF_OK; /* pf_wire_take reports it */
                if (want < HEADER + (size_t)flen)
                    want = HEADER + (size_t)flen;
            }
            if (want > HEADER + (size_t)limit_of(c))
                want = HEADER + (size_t)limit_of(c);
            if (want <= c->cap)
                return PF_OK;
            uint8_t *nb = realloc(c->buf, want);
            if (!nb)
                return pf_fail(err, PF_ERR_NOMEM, "no memory for a %zu-byte "
                               "receive buffer", want);
            c->buf = nb;
            c->cap = want;
        }
        n = recv(c->fd, c->buf + c->have, c->cap - c->have, MSG_DONTWAIT);
        if (n > 0) {
            c->have += (size_t)n;
            c->heard_ms = pf_now_ms();
            continue;
        }
        if (n == 0)
            return pf_fail(err, PF_ERR_LOST, "connection closed by the peer");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return PF_OK;
        if (errno == ECONNRESET || errno == ETIMEDOUT || errno == EHOSTUNREACH)
            return pf_fail(err, PF_ERR_LOST, "connection to the peer broke "
                           "(%s)", strerror(errno));
        return pf_fail(err, PF_ERR_IO, "recv: %s", strerror(errno));
    }
}

/* Length of the frame at offset off in the buffer, or 0 if incomplete. */
static int frame_at(const struct pf_conn *c, size_t off, uint32_t *flen,
                    char *err)
{
    const uint8_t *p;

    /* Before the first pump buf is NULL: no pointer arithmetic on it. */
    if (c->have - off < HEADER)
        return 0;
    p = c->buf + off;
    *flen = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
            (uint32_t)p[2] << 8 | p[3];
    if (*flen == 0 || *flen > limit_of(c)) {
        pf_fail(err, PF_ERR_PROTOCOL, "frame length %u is outside 1..%u "
                "(not an efa-preflight peer?)", *flen, limit_of(c));
        return -1;
    }
    return c->have - off - HEADER >= *flen ? 1 : 0;
}

int pf_wire_take(struct pf_conn *c, struct pf_msg *m, char *err)
{
    uint32_t flen = 0;
    int rc = frame_at(c, c->off, &flen, err);

    if (rc <= 0)
        return rc;
    m->type = c->buf[c->off + HEADER];
    m->body = c->buf + c->off + HEADER + 1;
    m->len = flen - 1;
    c->off += HEADER + flen;
    return 1;
}

bool pf_wire_has(const struct pf_conn *c, uint8_t type, struct pf_msg *m)
{
    size_t off = c->off;
    uint32_t flen = 0;

    while (frame_at(c, off, &flen, NULL) == 1) {
        if (c->buf[off + HEADER] == type) {
            m->type = type;
            m->body = c->buf + off + HEADER + 1;
            m->len = flen - 1;
            return true;
        }
        off += HEADER + flen;
    }
    return false;
}

int pf_wire_extract(struct pf_conn *c, uint8_t type, uint8_t *body,
                    size_t cap, size_t *len)
{
    size_t off = c->off;
    uint32_t flen = 0;

    while (frame_at(c, off, &flen, NULL) == 1) {
        size_t whole = HEADER + (size_t)flen;
        if (c->buf[off + HEADER] == type) {
            size_t n = flen - 1 < cap ? flen - 1 : cap;
            if (n)
                memcpy(body, c->buf + off + HEADER + 1, n);
            *len = flen - 1;
            memmove(c->buf + off, c->buf + off + whole, c->have - off - whole);
            c->have -= whole;
            return 1;
        }
        off += whole;
    }
    return 0;
}

void pf_conn_shrink(struct pf_conn *c)
{
    if (c->off != c->have)
        return;
    free(c->buf);
    c->buf = NULL;
    c->off = c->have = c->cap = 0;
}

pf_err pf_wire_recv(struct pf_conn *c, struct pf_msg *m, int64_t deadline,
                    char *err)
{
    for (;;) {
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        int rc = pf_wire_take(c, m, err);
        int ms;

        if (rc == 1)
            return PF_OK;
        if (rc < 0)
            return PF_ERR_PROTOCOL;
        ms = poll_ms(deadline);
        if (ms == 0)
            return pf_fail(err, PF_ERR_TIMEOUT, "no message before the "
                           "deadline");
        if (poll(&p, 1, ms) < 0 && errno != EINTR)
            return pf_fail(err, PF_ERR_SYS, "poll: %s", strerror(errno));
        if (p.revents) {
            pf_err e = pf_wire_pump(c, err);
            if (e != PF_OK) {
                /* Frames that arrived before the close still count. */
                if (pf_wire_take(c, m, NULL) == 1)
                    return PF_OK;
                return e;
            }
        }
    }
}

/* ---------------------------------------------------------------- codec */

static void put(struct pf_wbuf *w, const void *p, size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = true;
        return;
    }
    if (n)
        memcpy(w->p + w->len, p, n);
    w->len += n;
}

void pf_put_u8(struct pf_wbuf *w, uint8_t v) { put(w, &v, 1); }

void pf_put_u16(struct pf_wbuf *w, uint16_t v)
{
    uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
    put(w, b, 2);
}

void pf_put_u32(struct pf_wbuf *w, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16),
                     (uint8_t)(v >> 8), (uint8_t)v };
    put(w, b, 4);
}

void pf_put_bytes(struct pf_wbuf *w, const void *p, size_t n) { put(w, p, n); }

void pf_put_str(struct pf_wbuf *w, const char *s)
{
    size_t n = strlen(s);
    if (n > UINT16_MAX) {
        w->overflow = true;
        return;
    }
    pf_put_u16(w, (uint16_t)n);
    put(w, s, n);
}

static const uint8_t *get(struct pf_rbuf *r, size_t n)
{
    const uint8_t *p;
    if (r->bad || n > r->len - r->off) {
        r->bad = true;
        return NULL;
    }
    p = r->p + r->off;
    r->off += n;
    return p;
}

uint8_t pf_get_u8(struct pf_rbuf *r)
{
    const uint8_t *p = get(r, 1);
    return p ? p[0] : 0;
}

uint16_t pf_get_u16(struct pf_rbuf *r)
{
    const uint8_t *p = get(r, 2);
    return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

uint32_t pf_get_u32(struct pf_rbuf *r)
{
    const uint8_t *p = get(r, 4);
    return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
               (uint32_t)p[2] << 8 | p[3] : 0;
}

void pf_get_bytes(struct pf_rbuf *r, void *out, size_t n)
{
    const uint8_t *p = get(r, n);
    if (p)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

void pf_get_str(struct pf_rbuf *r, char *out, size_t cap)
{
    uint16_t n = pf_get_u16(r);
    const uint8_t *p;

    out[0] = '\0';
    if (r->bad)
        return;
    if ((size_t)n >= cap) {
        r->bad = true;
        return;
    }
    p = get(r, n);
    if (!p)
        return;
    if (memchr(p, '\0', n)) {
        r->bad = true;
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}
