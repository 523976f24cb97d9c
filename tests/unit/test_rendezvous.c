/* The rendezvous: frame limits and deadlines, HELLO membership checks, and
 * whole groups of forked ranks on loopback (join, collectives, PeerTimeout,
 * PeerRejected, PeerLost). Ports 30700-30799. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collective/rendezvous.h"
#include "collective/wire.h"
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
    cr_assert_lt(pf_now_ms() - t0, 800);
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

/* ------------------------------------------------------------- HELLO */

static const uint8_t challenge[PF_RDV_NONCE] = "0123456789abcdef";

static size_t make_hello(uint8_t *buf, size_t cap, int rank, int world,
                         const char *run_id, const char *secret)
{
    struct pf_hello h;
    struct pf_wbuf w = { buf, 0, cap, false };
    char err[PF_ERRLEN];

    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = rank;
    h.world = world;
    snprintf(h.run_id, sizeof(h.run_id), "%s", run_id);
    snprintf(h.facts.hostname, sizeof(h.facts.hostname), "node-%d", rank);
    snprintf(h.facts.instance_type, sizeof(h.facts.instance_type), "p5.48xlarge");
    h.facts.efa_count = 32;
    h.facts.gpu_count = 8;
    cr_assert_eq(pf_rdv_hello_encode(&h, (const uint8_t *)secret,
                                     secret ? strlen(secret) : 0, challenge,
                                     &w, err), PF_OK);
    return w.len;
}

static pf_err check(const uint8_t *buf, size_t len, const char *secret,
                    bool *joined, struct pf_hello *h, char *err)
{
    struct pf_rdv_view v = { 4, "run-a", (const uint8_t *)secret,
                             secret ? strlen(secret) : 0, challenge, joined };
    return pf_rdv_check_hello(&v, buf, len, h, err);
}

Test(hello, member_is_accepted_with_its_facts)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n = make_hello(buf, sizeof(buf), 2, 4, "run-a", "s3cret");

    cr_assert_eq(check(buf, n, "s3cret", joined, &h, err), PF_OK, "%s", err);
    cr_assert_eq(h.rank, 2);
    cr_assert_str_eq(h.facts.hostname, "node-2");
    cr_assert_str_eq(h.facts.instance_type, "p5.48xlarge");
    cr_assert_eq(h.facts.efa_count, 32);
    cr_assert_eq(h.facts.gpu_count, 8);
    n = make_hello(buf, sizeof(buf), 3, 4, "run-a", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_OK, "%s", err);
}

Test(hello, membership_violations_are_rejected_by_name)
{
    uint8_t buf[2048];
    bool joined[4] = { true, true, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n;

    n = make_hello(buf, sizeof(buf), 2, 4, "run-b", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "rank 2 on node-2 belongs to run 'run-b', rank 0 to "
                          "run 'run-a'");
    n = make_hello(buf, sizeof(buf), 2, 3, "run-a", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "rank 2 on node-2 expects 3 ranks, rank 0 expects 4");
    n = make_hello(buf, sizeof(buf), 4, 4, "run-a", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "a peer on node-4 claims rank 4, outside 1..3");
    n = make_hello(buf, sizeof(buf), 0, 4, "run-a", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    n = make_hello(buf, sizeof(buf), 1, 4, "run-a", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "rank 1 is claimed twice, again by node-1");
}

Test(hello, secrets_must_match_on_both_sides)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n;

    n = make_hello(buf, sizeof(buf), 1, 4, "run-a", "wrong");
    cr_assert_eq(check(buf, n, "right", joined, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "rank 1 on node-1: HELLO HMAC does not match (its "
                          "secret differs from rank 0's)");
    n = make_hello(buf, sizeof(buf), 1, 4, "run-a", NULL);
    cr_assert_eq(check(buf, n, "right", joined, &h, err), PF_ERR_REJECTED);
    cr_assert(strstr(err, "sent no HMAC"), "%s", err);
    n = make_hello(buf, sizeof(buf), 1, 4, "run-a", "right");
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert(strstr(err, "rank 0 has no secret"), "%s", err);
    /* A flipped byte anywhere in the signed part breaks the MAC. */
    n = make_hello(buf, sizeof(buf), 1, 4, "run-a", "right");
    buf[20] ^= 1;
    cr_assert_neq(check(buf, n, "right", joined, &h, err), PF_OK);
}

Test(hello, a_hello_signed_for_another_challenge_is_rejected)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    static const uint8_t other[PF_RDV_NONCE] = "fedcba9876543210";
    struct pf_rdv_view v = { 4, "run-a", (const uint8_t *)"k", 1, other, joined };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n = make_hello(buf, sizeof(buf), 1, 4, "run-a", "k");

    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_ERR_REJECTED);
}

Test(hello, garbage_is_a_protocol_error_not_a_rejection)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n = make_hello(buf, sizeof(buf), 1, 4, "run-a", NULL);

    cr_assert_eq(check((const uint8_t *)"GET / HTTP/1.1\r\n", 16, NULL, joined,
                       &h, err), PF_ERR_PROTOCOL);
    cr_assert_eq(check(buf, n - 3, NULL, joined, &h, err), PF_ERR_PROTOCOL);
    cr_assert_str_eq(err, "malformed HELLO (64 bytes)");
    buf[5] = 9;                       /* version 9 */
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert(strstr(err, "protocol version 9"), "%s", err);
}

Test(hello, a_hello_cut_before_its_version_is_malformed_not_a_rejection)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];

    make_hello(buf, sizeof(buf), 1, 4, "run-a", NULL);
    /* The magic alone, then the magic and half the version. */
    cr_assert_eq(check(buf, 4, NULL, joined, &h, err), PF_ERR_PROTOCOL);
    cr_assert_str_eq(err, "malformed HELLO (4 bytes)");
    cr_assert_eq(check(buf, 5, NULL, joined, &h, err), PF_ERR_PROTOCOL);
    cr_assert_str_eq(err, "malformed HELLO (5 bytes)");
    /* With the whole version present a cut is still malformed. */
    cr_assert_eq(check(buf, 6, NULL, joined, &h, err), PF_ERR_PROTOCOL);
    cr_assert_str_eq(err, "malformed HELLO (6 bytes)");
}

Test(hello, reason_words_map_to_error_codes)
{
    cr_assert_eq(pf_rdv_reason_err("PeerTimeout"), PF_ERR_TIMEOUT);
    cr_assert_eq(pf_rdv_reason_err("PeerRejected"), PF_ERR_REJECTED);
    cr_assert_eq(pf_rdv_reason_err("PeerLost"), PF_ERR_LOST);
    cr_assert_eq(pf_rdv_reason_err("gave-up"), PF_ERR_LOST);
}

/* ------------------------------------------------------------- groups */

struct rank_spec {
    int rank, world, port;
    const char *secret;
    const char *run_id;
    int64_t ms;
};

static struct pf_rdv_cfg mkcfg(const struct rank_spec *s, struct pf_fault *coll)
{
    struct pf_rdv_cfg c;

    memset(&c, 0, sizeof(c));
    c.rank = s->rank;
    c.world = s->world;
    snprintf(c.root_host, sizeof(c.root_host), "127.0.0.1");
    c.root_port = s->port;
    snprintf(c.run_id, sizeof(c.run_id), "%s", s->run_id ? s->run_id : "test-run");
    c.secret = (const uint8_t *)s->secret;
    c.secret_len = s->secret ? strlen(s->secret) : 0;
    snprintf(c.self.hostname, sizeof(c.self.hostname), "host-%d", s->rank);
    snprintf(c.self.instance_type, sizeof(c.self.instance_type), "test.large");
    c.self.efa_count = s->rank;
    c.deadline = pf_deadline_in(s->ms);
    c.fault = coll;
    return c;
}

/* Join, then allgather (small and 64 KiB), bcast from rank 1 (0 when
 * alone), barrier. */
static int full_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_rdv_facts table[8];
    struct pf_boot *b;
    char err[PF_ERRLEN], msg[16] = "";
    uint32_t mine = 100 + (uint32_t)s->rank, all[8];
    static uint8_t bigmine[65536], bigall[8 * 65536];
    int64_t dl = pf_deadline_in(5000);

    if (pf_rdv_open(&c, &b, table, err) != PF_OK)
        return 10;
    for (int r = 0; r < s->world; r++)
        if (strcmp(table[r].hostname, (char[16]){ 0 }) == 0 ||
            table[r].efa_count != r)
            return 11;
    if (pf_boot_allgather(b, &mine, 4, all, dl, err) != PF_OK)
        return 12;
    for (int r = 0; r < s->world; r++)
        if (all[r] != 100u + (uint32_t)r)
            return 13;
    if (s->rank == (s->world > 1 ? 1 : 0))
        snprintf(msg, sizeof(msg), "from-one");
    if (pf_boot_bcast(b, msg, sizeof(msg), s->world > 1 ? 1 : 0, dl, err) != PF_OK ||
        strcmp(msg, "from-one"))
        return 14;
    if (pf_boot_barrier(b, dl, err) != PF_OK)
        return 15;
    memset(bigmine, s->rank + 1, sizeof(bigmine));
    if (pf_boot_allgather(b, bigmine, sizeof(bigmine), bigall, dl, err) != PF_OK)
        return 16;
    for (int r = 0; r < s->world; r++)
        if (bigall[(size_t)r * sizeof(bigmine) + 777] != r + 1)
            return 17;
    if (pf_boot_poll(b, err) != PF_OK)
        return 18;
    pf_boot_close(b);
    return 0;
}

static pid_t spawn(int (*body)(const struct rank_spec *), struct rank_spec s,
                   int64_t delay_ms)
{
    pid_t pid = fork();
    if (pid == 0) {
        pf_sleep_ms(delay_ms);
        _exit(body(&s));
    }
    cr_assert_gt(pid, 0);
    return pid;
}

static int exit_of(pid_t pid)
{
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(rendezvous, four_ranks_join_and_run_collectives)
{
    pid_t kids[3];
    for (int i = 1; i < 4; i++)
        kids[i - 1] = spawn(full_rank, (struct rank_spec){ i, 4, 30701, NULL,
                                                           NULL, 5000 }, 0);
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 4, 30701, NULL, NULL, 5000 }), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(exit_of(kids[i]), 0, "rank %d", i + 1);
}

Test(rendezvous, peers_wait_for_a_late_rank_0_and_secrets_that_match)
{
    pid_t kid = spawn(full_rank, (struct rank_spec){ 1, 2, 30702, "shared",
                                                     NULL, 5000 }, 0);
    pf_sleep_ms(700);                 /* rank 1 retries meanwhile */
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 2, 30702, "shared", NULL,
                                                5000 }), 0);
    cr_assert_eq(exit_of(kid), 0);
}

Test(rendezvous, world_of_one_needs_no_network)
{
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 1, 0, NULL, NULL, 1000 }), 0);
}

/* Join and report: exit 0 when the result is `want` with reason and a
 * message mentioning `needle`. */
static pf_err want_code;
static const char *want_reason, *want_needle;

static int join_expect(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b = NULL;
    char err[PF_ERRLEN];
    pf_err rc = pf_rdv_open(&c, &b, NULL, err);

    if (rc != want_code) {
        fprintf(stderr, "rank %d: got %d (%s), want %d\n", s->rank, rc, err,
                want_code);
        return 20;
    }
    if (strcmp(pf_reason_name(coll.reason), want_reason) || !strstr(err, want_needle) ||
        strcmp(coll.msg, err)) {
        fprintf(stderr, "rank %d: reason %s message '%s'\n", s->rank,
                pf_reason_name(coll.reason), err);
        return 21;
    }
    return 0;
}

Test(rendezvous, missing_rank_is_peer_timeout_on_every_rank_naming_it)
{
    int64_t t0 = pf_now_ms();
    pid_t kid;

    want_code = PF_ERR_TIMEOUT;
    want_reason = "PeerTimeout";
    want_needle = "rank 2";
    kid = spawn(join_expect, (struct rank_spec){ 1, 3, 30703, NULL, NULL, 1800 }, 0);
    /* Rank 0 gives up first and tells rank 1 who never came. */
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 3, 30703, NULL, NULL, 1500 }), 0);
    cr_assert_eq(exit_of(kid), 0);
    cr_assert_lt(pf_now_ms() - t0, 1800 + 1000);
}

Test(rendezvous, missing_rank_0_is_peer_timeout_naming_its_address)
{
    int64_t t0 = pf_now_ms();

    want_code = PF_ERR_TIMEOUT;
    want_reason = "PeerTimeout";
    want_needle = "rank 0 at 127.0.0.1:30704 never answered";
    cr_assert_eq(join_expect(&(struct rank_spec){ 1, 2, 30704, NULL, NULL, 800 }), 0);
    cr_assert_lt(pf_now_ms() - t0, 800 + 500);
}

Test(rendezvous, wrong_secret_is_peer_rejected_on_both_sides)
{
    pid_t kid;

    want_code = PF_ERR_REJECTED;
    want_reason = "PeerRejected";
    want_needle = "HMAC does not match";
    kid = spawn(join_expect, (struct rank_spec){ 1, 2, 30705, "wrong", NULL, 3000 }, 0);
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 2, 30705, "right", NULL, 3000 }), 0);
    cr_assert_eq(exit_of(kid), 0);
}

Test(rendezvous, wrong_run_id_rejects_and_aborts_those_already_joined)
{
    pid_t k1, k2;

    want_code = PF_ERR_REJECTED;
    want_reason = "PeerRejected";
    want_needle = "belongs to run 'other-run'";
    k1 = spawn(join_expect, (struct rank_spec){ 1, 3, 30706, NULL, NULL, 3000 }, 0);
    k2 = spawn(join_expect, (struct rank_spec){ 2, 3, 30706, NULL, "other-run",
                                                3000 }, 400);
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 3, 30706, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(k2), 0);
}

/* Join, then rank `victim` dies without a goodbye; the others must see
 * PeerLost naming it, through allgather or poll. */
static int lost_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN];
    uint32_t all[4], mine = 1;
    int64_t dl = pf_deadline_in(4000), t0;
    pf_err rc;

    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK)
        return 30;
    if (s->rank == 2)
        raise(SIGKILL);               /* a crash: no BYE, no ABORT */
    if (s->rank == 1) {
        /* Poll like an engine waiting on the fabric: never blocks. */
        for (;;) {
            t0 = pf_now_ms();
            rc = pf_boot_poll(b, err);
            if (pf_now_ms() - t0 > 50)
                return 31;
            if (rc != PF_OK)
                break;
            if (pf_ms_left(dl) <= 0)
                return 32;
            pf_sleep_ms(10);
        }
    } else {
        rc = pf_boot_allgather(b, &mine, 4, all, dl, err);
    }
    if (rc != PF_ERR_LOST || coll.reason != PF_R_PeerLost ||
        !strstr(err, "rank 2 (host-2, 127.0.0.1) closed its connection")) {
        fprintf(stderr, "rank %d: %d %s: %s\n", s->rank, rc, pf_reason_name(coll.reason), err);
        return 33;
    }
    /* Later calls fail the same way at once. */
    if (pf_boot_barrier(b, dl, err) != PF_ERR_LOST)
        return 34;
    pf_boot_close(b);
    return 0;
}

Test(rendezvous, killed_rank_is_peer_lost_for_every_other_rank)
{
    int64_t t0 = pf_now_ms();
    pid_t k1 = spawn(lost_rank, (struct rank_spec){ 1, 3, 30707, NULL, NULL, 3000 }, 0);
    pid_t k2 = spawn(lost_rank, (struct rank_spec){ 2, 3, 30707, NULL, NULL, 3000 }, 0);

    cr_assert_eq(lost_rank(&(struct rank_spec){ 0, 3, 30707, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(k2), 128 + SIGKILL);
    cr_assert_lt(pf_now_ms() - t0, 3000);
}

/* Orderly closes are not losses: rank 1 closes first, rank 0 keeps
 * polling and must see nothing wrong. */
static int close_early(const struct rank_spec *s)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b;
    char err[PF_ERRLEN];

    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK)
        return 40;
    if (pf_boot_barrier(b, pf_deadline_in(3000), err) != PF_OK)
        return 41;
    if (s->rank == 1) {
        pf_boot_close(b);
        return 0;
    }
    for (int i = 0; i < 30; i++) {
        if (pf_boot_poll(b, err) != PF_OK) {
            fprintf(stderr, "%s\n", err);
            return 42;
        }
        pf_sleep_ms(10);
    }
    pf_boot_close(b);
    return 0;
}

Test(rendezvous, orderly_close_is_not_peer_lost)
{
    pid_t kid = spawn(close_early, (struct rank_spec){ 1, 2, 30708, NULL, NULL, 3000 }, 0);
    cr_assert_eq(close_early(&(struct rank_spec){ 0, 2, 30708, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(kid), 0);
}

/* rank 1 aborts: rank 0 relays, rank 2's poll reports PeerLost naming 1. */
static int abort_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN];
    int64_t dl = pf_deadline_in(3000);
    pf_err rc = PF_OK;

    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK)
        return 50;
    if (s->rank == 1) {
        pf_boot_abort(b, "fi_cq_read failed");
        pf_boot_close(b);
        return 0;
    }
    if (s->rank == 0)
        rc = pf_boot_barrier(b, dl, err);
    while (rc == PF_OK && pf_ms_left(dl) > 0) {
        rc = pf_boot_poll(b, err);
        pf_sleep_ms(10);
    }
    if (rc != PF_ERR_LOST || !strstr(err, "rank 1 (host-1, 127.0.0.1) gave up: "
                                          "fi_cq_read failed")) {
        fprintf(stderr, "rank %d: %d %s\n", s->rank, rc, err);
        return 51;
    }
    pf_boot_close(b);
    return 0;
}

Test(rendezvous, abort_reaches_every_rank_with_its_reason)
{
    pid_t k1 = spawn(abort_rank, (struct rank_spec){ 1, 3, 30709, NULL, NULL, 3000 }, 0);
    pid_t k2 = spawn(abort_rank, (struct rank_spec){ 2, 3, 30709, NULL, NULL, 3000 }, 0);
    cr_assert_eq(abort_rank(&(struct rank_spec){ 0, 3, 30709, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(k2), 0);
}

/* A port scanner or health probe that connects and says nothing useful
 * must not break the rendezvous. */
Test(rendezvous, stray_connections_are_ignored)
{
    pid_t kid = spawn(full_rank, (struct rank_spec){ 1, 2, 30710, NULL, NULL, 5000 }, 300);
    pid_t stray = fork();
    if (stray == 0) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(30710) };
        sa.sin_addr.s_addr = htonl(0x7f000001);
        pf_sleep_ms(100);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            (void)!write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
        pf_sleep_ms(200);
        _exit(0);
    }
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 2, 30710, NULL, NULL, 5000 }), 0);
    cr_assert_eq(exit_of(kid), 0);
    exit_of(stray);
}

/* Ranks 1 and 2 give up for their own reason at once: each keeps its own
 * (nothing recorded by the bootstrap), while rank 0, healthy and polling,
 * reports PeerLost naming one of them. */
static int own_abort_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN], why[32];
    int64_t dl = pf_deadline_in(3000);
    pf_err rc = PF_OK;

    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK ||
        pf_boot_barrier(b, dl, err) != PF_OK)
        return 60;
    if (s->rank != 0) {
        snprintf(why, sizeof(why), "own-%d", s->rank);
        pf_boot_abort(b, why);
        pf_boot_close(b);
        if (coll.reason != PF_R_None) {
            fprintf(stderr, "rank %d took the blame elsewhere: %s %s\n",
                    s->rank, pf_reason_name(coll.reason), coll.msg);
            return 61;
        }
        return 0;
    }
    while (rc == PF_OK && pf_ms_left(dl) > 0) {
        rc = pf_boot_poll(b, err);
        pf_sleep_ms(10);
    }
    if (rc != PF_ERR_LOST || coll.reason != PF_R_PeerLost ||
        (!strstr(err, "gave up: own-1") && !strstr(err, "gave up: own-2"))) {
        fprintf(stderr, "rank 0: %d %s %s\n", rc, pf_reason_name(coll.reason), err);
        return 62;
    }
    pf_boot_close(b);
    return 0;
}

Test(rendezvous, a_rank_failing_on_its_own_keeps_its_own_reason)
{
    pid_t k1 = spawn(own_abort_rank, (struct rank_spec){ 1, 3, 30711, NULL, NULL, 3000 }, 0);
    pid_t k2 = spawn(own_abort_rank, (struct rank_spec){ 2, 3, 30711, NULL, NULL, 3000 }, 0);
    cr_assert_eq(own_abort_rank(&(struct rank_spec){ 0, 3, 30711, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(k2), 0);
}

/* Rank 2 dies; rank 1 notices on its fabric first and aborts: the
 * bootstrap blames rank 2 for it (PeerLost), as rank 0 does. */
static int blamed_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN];
    int64_t dl = pf_deadline_in(3000);
    pf_err rc = PF_OK;

    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK ||
        pf_boot_barrier(b, dl, err) != PF_OK)
        return 70;
    if (s->rank == 2)
        raise(SIGKILL);
    if (s->rank == 1) {
        pf_boot_abort(b, "send to rank 2 failed: connection reset");
        pf_boot_close(b);
    } else {
        while (rc == PF_OK && pf_ms_left(dl) > 0) {
            rc = pf_boot_poll(b, err);
            pf_sleep_ms(10);
        }
        pf_boot_close(b);
    }
    if (coll.reason != PF_R_PeerLost ||
        !strstr(coll.msg, "rank 2 (host-2, 127.0.0.1) closed its connection")) {
        fprintf(stderr, "rank %d: %s %s\n", s->rank, pf_reason_name(coll.reason), coll.msg);
        return 71;
    }
    return 0;
}

Test(rendezvous, an_abort_caused_by_a_dead_peer_blames_that_peer)
{
    pid_t k1 = spawn(blamed_rank, (struct rank_spec){ 1, 3, 30712, NULL, NULL, 3000 }, 0);
    pid_t k2 = spawn(blamed_rank, (struct rank_spec){ 2, 3, 30712, NULL, NULL, 3000 }, 0);
    cr_assert_eq(blamed_rank(&(struct rank_spec){ 0, 3, 30712, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(k2), 128 + SIGKILL);
}
