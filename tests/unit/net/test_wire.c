/* Frames over a socket pair (limits, deadlines, EOF, buffered frames) and
 * the bounds-checked body codec. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/wire.h"
#include "util/clock.h"

/* ------------------------------------------------------------- framing */

static void pair(struct pf_conn *a, struct pf_conn *b)
{
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    pf_conn_init(a, sv[0]);
    pf_conn_init(b, sv[1]);
}

Test(wire, frames_arrive_whole_and_in_order)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];
    static uint8_t big[200000];

    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 31);
    pair(&a, &b);
    cr_assert_eq(pf_wire_send(&a, 7, "hello", 5, pf_deadline_in(1000), err), PF_OK);
    cr_assert_eq(pf_wire_send(&a, 9, NULL, 0, pf_deadline_in(1000), err), PF_OK);
    /* Larger than the socket buffer: the reader must drain while we send. */
    if (fork() == 0) {
        _exit(pf_wire_send(&a, 3, big, sizeof(big), pf_deadline_in(3000), err));
    }
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_OK);
    cr_assert_eq(m.type, 7);
    cr_assert_eq(m.len, 5);
    cr_assert_eq(memcmp(m.body, "hello", 5), 0);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_OK);
    cr_assert_eq(m.type, 9);
    cr_assert_eq(m.len, 0);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(3000), err), PF_OK, "%s", err);
    cr_assert_eq(m.type, 3);
    cr_assert_eq(m.len, sizeof(big));
    cr_assert_eq(memcmp(m.body, big, sizeof(big)), 0);
    int st;
    wait(&st);
    cr_assert_eq(WEXITSTATUS(st), PF_OK);
    pf_conn_close(&a);
    pf_conn_close(&b);
}

Test(wire, oversized_frame_is_a_protocol_error)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];
    uint8_t head[5] = { 0x7f, 0xff, 0xff, 0xff, 1 };

    pair(&a, &b);
    cr_assert_eq(write(a.fd, head, sizeof(head)), 5);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_ERR_PROTOCOL);
    cr_assert(strstr(err, "frame length 2147483647"), "%s", err);
    cr_assert_eq(pf_wire_send(&a, 1, head, PF_WIRE_MAX_FRAME, pf_deadline_in(100),
                              err), PF_ERR_USAGE);
    pf_conn_close(&a);
    pf_conn_close(&b);
}

Test(wire, a_connection_limit_caps_frames_below_the_maximum)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];
    static uint8_t body[5000];

    pair(&a, &b);
    b.limit = 4096;
    cr_assert_eq(pf_wire_send(&a, 2, body, 4095, pf_deadline_in(1000), err), PF_OK);
    cr_assert_eq(pf_wire_send(&a, 2, body, sizeof(body), pf_deadline_in(1000), err),
                 PF_OK);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_OK, "%s", err);
    cr_assert_eq(m.len, 4095);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_ERR_PROTOCOL);
    cr_assert_str_eq(err, "frame length 5001 is outside 1..4096 (not an "
                          "efa-preflight peer?)");
    cr_assert_leq(b.cap, 4 + 4096 + 4096, "buffer grew to %zu", b.cap);
    pf_conn_close(&a);
    pf_conn_close(&b);
}

Test(wire, zero_length_frame_is_a_protocol_error)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];
    uint8_t head[4] = { 0, 0, 0, 0 };

    pair(&a, &b);
    cr_assert_eq(write(a.fd, head, sizeof(head)), 4);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_ERR_PROTOCOL);
    pf_conn_close(&a);
    pf_conn_close(&b);
}

Test(wire, partial_frame_waits_only_until_the_deadline)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];
    uint8_t part[7] = { 0, 0, 0, 10, 5, 'a', 'b' };
    int64_t t0;

    pair(&a, &b);
    cr_assert_eq(write(a.fd, part, sizeof(part)), 7);
    t0 = pf_now_ms();
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(300), err), PF_ERR_TIMEOUT);
    cr_assert_geq(pf_now_ms() - t0, 290);
    cr_assert_lt(pf_now_ms() - t0, 2000);   /* room for a busy machine */
    pf_conn_close(&a);
    pf_conn_close(&b);
}

Test(wire, eof_mid_frame_is_lost_but_earlier_frames_count)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];
    uint8_t part[6] = { 0, 0, 0, 10, 5, 'a' };

    pair(&a, &b);
    cr_assert_eq(pf_wire_send(&a, 4, "x", 1, pf_deadline_in(1000), err), PF_OK);
    cr_assert_eq(write(a.fd, part, sizeof(part)), 6);
    pf_conn_close(&a);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_OK);
    cr_assert_eq(m.type, 4);
    cr_assert_eq(pf_wire_recv(&b, &m, pf_deadline_in(1000), err), PF_ERR_LOST);
    pf_conn_close(&b);
}

Test(wire, pump_keeps_frames_for_later_and_has_peeks)
{
    struct pf_conn a, b;
    struct pf_msg m;
    char err[PF_ERRLEN];

    pair(&a, &b);
    pf_wire_send(&a, 5, "data", 4, pf_deadline_in(1000), err);
    pf_wire_send(&a, 6, "abort", 5, pf_deadline_in(1000), err);
    pf_sleep_ms(20);
    cr_assert_eq(pf_wire_pump(&b, err), PF_OK);
    cr_assert(pf_wire_has(&b, 6, &m));
    cr_assert_eq(m.len, 5);
    cr_assert(!pf_wire_has(&b, 8, &m));
    cr_assert_eq(pf_wire_take(&b, &m, err), 1);
    cr_assert_eq(m.type, 5);
    cr_assert_eq(pf_wire_take(&b, &m, err), 1);
    cr_assert_eq(m.type, 6);
    cr_assert_eq(pf_wire_take(&b, &m, err), 0);
    pf_conn_close(&a);
    pf_conn_close(&b);
}

Test(wire, codec_rejects_short_and_oversized_strings)
{
    uint8_t buf[64];
    struct pf_wbuf w = { buf, 0, sizeof(buf), false };
    struct pf_rbuf r;
    char s[8];

    pf_put_str(&w, "abcdefghij");
    pf_put_u32(&w, 0xdeadbeef);
    cr_assert(!w.overflow);
    r = (struct pf_rbuf){ buf, w.len, 0, false };
    pf_get_str(&r, s, sizeof(s));      /* 10 chars do not fit in 8 */
    cr_assert(r.bad);
    r = (struct pf_rbuf){ buf, 5, 0, false };
    char big[32];
    pf_get_str(&r, big, sizeof(big));  /* length says 10, only 3 there */
    cr_assert(r.bad);
    cr_assert_str_eq(big, "");
    r = (struct pf_rbuf){ buf + 12, 4, 0, false };
    cr_assert_eq(pf_get_u32(&r), 0xdeadbeef);
    cr_assert_eq(pf_get_u32(&r), 0);
    cr_assert(r.bad);
    w = (struct pf_wbuf){ buf, 0, 4, false };
    pf_put_str(&w, "abc");
    cr_assert(w.overflow);
}

