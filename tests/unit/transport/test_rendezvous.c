/* The rendezvous: HELLO membership checks, and
 * whole groups of forked ranks on loopback (join, collectives, PeerTimeout,
 * PeerRejected, PeerLost, the heartbeat). Each test rendezvous on a port
 * the kernel gives it (pf_test_free_port), so two checkouts may run the
 * tests at once. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/rendezvous.h"
#include "net/wire.h"
#include "util/clock.h"
#include "util/crypto.h"
#include "free_port.h"

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
    struct pf_rdv_view v = { .world = 4, .run_id = "run-a",
                             .secret = (const uint8_t *)secret,
                             .secret_len = secret ? strlen(secret) : 0,
                             .challenge = challenge, .joined = joined };
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
    static const struct {
        const char *name;
        int rank, world;
        const char *run_id;
        const char *want;             /* NULL: any message */
    } cases[] = {
        { "another run", 2, 4, "run-b",
          "rank 2 on node-2 belongs to run 'run-b', rank 0 to run 'run-a'" },
        { "another world", 2, 3, "run-a",
          "rank 2 on node-2 expects 3 ranks, rank 0 expects 4" },
        { "out of range", 4, 4, "run-a",
          "a peer on node-4 claims rank 4, outside 1..3" },
        { "rank 0", 0, 4, "run-a", NULL },
        { "claimed twice", 1, 4, "run-a",
          "rank 1 is claimed twice, again by node-1" },
    };
    uint8_t buf[2048];
    bool joined[4] = { true, true, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = make_hello(buf, sizeof(buf), cases[i].rank, cases[i].world,
                              cases[i].run_id, NULL);

        cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED,
                     "case %s", cases[i].name);
        if (cases[i].want)
            cr_assert_str_eq(err, cases[i].want, "case %s", cases[i].name);
    }
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
    cr_assert_str_eq(err, "a peer claiming rank 1 on node-1: HELLO HMAC does "
                          "not match (its secret differs from rank 0's)");
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
    struct pf_rdv_view v = { .world = 4, .run_id = "run-a",
                             .secret = (const uint8_t *)"k", .secret_len = 1,
                             .challenge = other, .joined = joined };
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

/* A stranger's HELLO is judged by its MAC before anything it claims: a
 * version, run id or rank from someone without the secret is never
 * reported as such. */
Test(hello, the_mac_is_checked_before_the_version_and_every_claim)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n = make_hello(buf, sizeof(buf), 2, 4, "run-a", "guess");

    buf[5] = 9;                       /* version 9, signed with a guess */
    cr_assert_eq(check(buf, n, "right", joined, &h, err), PF_ERR_REJECTED);
    cr_assert(strstr(err, "HELLO HMAC does not match"), "%s", err);
    cr_assert_null(strstr(err, "version"), "%s", err);
    cr_assert_str_eq(err, "a peer: HELLO HMAC does not match (its secret "
                          "differs from rank 0's)");
    /* A member with the secret but another agent version is told so. */
    n = make_hello(buf, sizeof(buf), 2, 4, "run-b", "right");
    buf[5] = 9;
    {
        /* re-sign after the edit, as a real version-9 agent would */
        const struct pf_bytes parts[] = { { buf, n - PF_RDV_MAC },
                                          { challenge, PF_RDV_NONCE } };
        cr_assert(pf_hmac_sha256("right", 5, parts, 2, buf + n - PF_RDV_MAC));
    }
    cr_assert_eq(check(buf, n, "right", joined, &h, err), PF_ERR_REJECTED);
    cr_assert(strstr(err, "protocol version 9"), "%s", err);
    /* Too short to carry a MAC at all. */
    cr_assert_eq(check(buf, 20, "right", joined, &h, err), PF_ERR_REJECTED);
    cr_assert(strstr(err, "sent no HMAC"), "%s", err);
}

/* k8s: a rank may only be claimed from the address discovery saw for it,
 * whatever the spelling of that address. */
Test(hello, a_rank_bound_to_an_address_is_refused_from_any_other)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_peer bind[4] = {
        { .host = "10.0.0.10" }, { .host = "10.0.0.11", .pod = "train-1" },
        { .host = "fd00::12" }, { .host = "node-3.example" },
    };
    struct pf_rdv_view v = { .world = 4, .run_id = "run-a",
                             .challenge = challenge, .joined = joined,
                             .bind = bind };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n = make_hello(buf, sizeof(buf), 1, 4, "run-a", NULL);

    v.from = "10.0.0.99";
    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "a peer at 10.0.0.99 on node-1 claims rank 1, which "
                          "is train-1 at 10.0.0.11");
    cr_assert_not(h.taken);
    v.from = "10.0.0.11";
    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_OK, "%s", err);
    v.from = "::ffff:10.0.0.11";
    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_OK, "%s", err);
    n = make_hello(buf, sizeof(buf), 2, 4, "run-a", NULL);
    v.from = "fd00:0:0::12";
    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_OK, "%s", err);
    v.from = "10.0.0.12";
    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_ERR_REJECTED);
    /* A host name cannot be compared with an address: not bound. */
    n = make_hello(buf, sizeof(buf), 3, 4, "run-a", NULL);
    cr_assert_eq(pf_rdv_check_hello(&v, buf, n, &h, err), PF_OK, "%s", err);
}

Test(hello, a_rank_held_already_is_marked_taken)
{
    uint8_t buf[2048];
    bool joined[4] = { true, true, false, false };
    struct pf_hello h;
    char err[PF_ERRLEN];
    size_t n = make_hello(buf, sizeof(buf), 1, 4, "run-a", NULL);

    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert(h.taken);
    n = make_hello(buf, sizeof(buf), 1, 4, "run-b", NULL);
    cr_assert_eq(check(buf, n, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert_not(h.taken);
}

/* What a stranger wrote reaches a log line only as printable ASCII. */
Test(hello, claims_are_cleaned_before_they_reach_a_message)
{
    uint8_t buf[2048];
    bool joined[4] = { true, false, false, false };
    struct pf_hello h;
    struct pf_wbuf w = { buf, 0, sizeof(buf), false };
    char err[PF_ERRLEN];

    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = 1;
    h.world = 4;
    snprintf(h.run_id, sizeof(h.run_id), "x\nFAKE: pass");
    snprintf(h.facts.hostname, sizeof(h.facts.hostname), "evil\033[2J\xff");
    cr_assert_eq(pf_rdv_hello_encode(&h, NULL, 0, challenge, &w, err), PF_OK);
    cr_assert_eq(check(buf, w.len, NULL, joined, &h, err), PF_ERR_REJECTED);
    cr_assert_str_eq(err, "rank 1 on evil?[2J? belongs to run 'x?FAKE: pass', "
                          "rank 0 to run 'run-a'");
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

/* Heartbeat period and silence window of the groups (0: the defaults). */
static int beat_ms, silent_ms;

/* cfg.gone of the groups: -2 none; else rank gone_rank (-1: nobody) is
 * known to have stopped before it joined. Asked every GONE_MS. */
#define GONE_MS 1000
static int gone_rank = -2;
static int gone_asked;

static bool test_gone(void *ctx, int rank, char *why, size_t len)
{
    (void)ctx;
    gone_asked++;
    if (rank != gone_rank)
        return false;
    snprintf(why, len, "its Node says Interrupted");
    return true;
}

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
    c.beat_ms = beat_ms;
    c.silent_ms = silent_ms;
    if (gone_rank != -2) {
        c.gone = test_gone;
        c.gone_ms = GONE_MS;
    }
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

    if (pf_rdv_open(&c, &b, table, err) != PF_OK) {
        fprintf(stderr, "rank %d: %s\n", s->rank, err);
        return 10;
    }
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

/* Ranks 1 and 2 of a group of 3 forked, rank 0 run here: rank 0 and rank 1
 * must exit 0, rank 2 with want2 (128 + SIGKILL for one that kills
 * itself). */
static void three_ranks(int (*body)(const struct rank_spec *), int port,
                        int want2)
{
    pid_t k1 = spawn(body, (struct rank_spec){ 1, 3, port, NULL, NULL, 3000 }, 0);
    pid_t k2 = spawn(body, (struct rank_spec){ 2, 3, port, NULL, NULL, 3000 }, 0);

    cr_assert_eq(body(&(struct rank_spec){ 0, 3, port, NULL, NULL, 3000 }), 0);
    cr_assert_eq(exit_of(k1), 0, "rank 1");
    cr_assert_eq(exit_of(k2), want2, "rank 2");
}

/* Join, then meet the others at a barrier with deadline dl. */
static bool join_and_meet(const struct pf_rdv_cfg *c, struct pf_boot **b,
                          int64_t dl, char *err)
{
    return pf_rdv_open(c, b, NULL, err) == PF_OK &&
           pf_boot_barrier(*b, dl, err) == PF_OK;
}

/* Poll like an engine waiting on the fabric, until the bootstrap reports
 * something or dl passes. */
static pf_err poll_until(struct pf_boot *b, int64_t dl, char *err)
{
    pf_err rc = PF_OK;

    while (rc == PF_OK && pf_ms_left(dl) > 0) {
        rc = pf_boot_poll(b, err);
        pf_sleep_ms(10);
    }
    return rc;
}

Test(rendezvous, four_ranks_join_and_run_collectives)
{
    int port = pf_test_free_port();
    pid_t kids[3];
    for (int i = 1; i < 4; i++)
        kids[i - 1] = spawn(full_rank, (struct rank_spec){ i, 4, port, NULL,
                                                           NULL, 5000 }, 0);
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 4, port, NULL, NULL, 5000 }), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(exit_of(kids[i]), 0, "rank %d", i + 1);
}

Test(rendezvous, peers_wait_for_a_late_rank_0_and_secrets_that_match)
{
    int port = pf_test_free_port();
    pid_t kid = spawn(full_rank, (struct rank_spec){ 1, 2, port, "shared",
                                                     NULL, 5000 }, 0);
    pf_sleep_ms(700);                 /* rank 1 retries meanwhile */
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 2, port, "shared", NULL,
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

static void want(pf_err code, const char *reason, const char *needle)
{
    want_code = code;
    want_reason = reason;
    want_needle = needle;
}

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
    int port = pf_test_free_port();
    int64_t t0 = pf_now_ms();
    pid_t kid;

    want(PF_ERR_TIMEOUT, "PeerTimeout", "rank 2");
    kid = spawn(join_expect, (struct rank_spec){ 1, 3, port, NULL, NULL, 1800 }, 0);
    /* Rank 0 gives up first and tells rank 1 who never came. */
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 3, port, NULL, NULL, 1500 }), 0);
    cr_assert_eq(exit_of(kid), 0);
    cr_assert_lt(pf_now_ms() - t0, 1800 + 2000);
}

Test(rendezvous, missing_rank_0_is_peer_timeout_naming_its_address)
{
    int port = pf_test_free_port();
    int64_t t0 = pf_now_ms();
    char needle[64];

    snprintf(needle, sizeof(needle), "rank 0 at 127.0.0.1:%d never answered", port);
    want(PF_ERR_TIMEOUT, "PeerTimeout", needle);
    cr_assert_eq(join_expect(&(struct rank_spec){ 1, 2, port, NULL, NULL, 800 }), 0);
    cr_assert_lt(pf_now_ms() - t0, 800 + 1500);
}

/* A rank stopped before it ever joined (SIGTERM during its probe) leaves
 * no connection to drop; its agent said so where discovery sees it. Rank 0,
 * asking about the ranks it waits for, names it as PeerLost at the first
 * question and tells the ranks already joined, long before the deadline. */
Test(rendezvous, a_rank_gone_before_joining_is_peer_lost_on_every_rank_at_once)
{
    int port = pf_test_free_port();
    int64_t t0 = pf_now_ms();
    pid_t kid;

    gone_rank = 2;
    want(PF_ERR_LOST, "PeerLost", "rank 2 stopped before it joined the "
                                  "rendezvous: its Node says Interrupted");
    kid = spawn(join_expect, (struct rank_spec){ 1, 3, port, NULL, NULL,
                                                 10000 }, 0);
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 3, port, NULL, NULL,
                                                  10000 }), 0);
    cr_assert_eq(exit_of(kid), 0);
    cr_assert_lt(pf_now_ms() - t0, GONE_MS + 3000);
}

/* Rank 0 stopped before it ever listened: the others, dialling in vain,
 * ask about it and stop with PeerLost naming it. */
Test(rendezvous, a_rank_0_gone_before_listening_is_peer_lost_at_once)
{
    int port = pf_test_free_port();
    int64_t t0 = pf_now_ms();
    char needle[128];

    gone_rank = 0;
    snprintf(needle, sizeof(needle), "rank 0 at 127.0.0.1:%d stopped before "
             "this rank joined: its Node says Interrupted", port);
    want(PF_ERR_LOST, "PeerLost", needle);
    cr_assert_eq(join_expect(&(struct rank_spec){ 1, 2, port, NULL, NULL,
                                                  10000 }), 0);
    cr_assert_lt(pf_now_ms() - t0, GONE_MS + 3000);
}

/* Asked, and nobody is known gone: the wait goes on to the deadline, as
 * without the question. */
Test(rendezvous, a_missing_rank_not_known_gone_is_still_waited_for)
{
    int port = pf_test_free_port();

    gone_rank = -1;
    want(PF_ERR_TIMEOUT, "PeerTimeout", "rank 1");
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 2, port, NULL, NULL,
                                                  GONE_MS + 800 }), 0);
    cr_assert_geq(gone_asked, 1);
}

/* A rank with another secret is a stranger to rank 0: it is told at once
 * (PeerRejected); rank 0 waits for the real rank 1 and at its deadline
 * reports PeerTimeout naming it and why its HELLO was refused. */
Test(rendezvous, wrong_secret_is_told_at_once_and_rank_0_times_out_saying_why)
{
    int port = pf_test_free_port();
    int64_t t0 = pf_now_ms();
    pid_t kid;

    want(PF_ERR_REJECTED, "PeerRejected",
         "a peer claiming rank 1 on host-1: HELLO HMAC does not match");
    kid = spawn(join_expect, (struct rank_spec){ 1, 2, port, "wrong", NULL, 3000 }, 0);
    want(PF_ERR_TIMEOUT, "PeerTimeout",
         "s (1 of 2 ranks joined; 1 HELLO rejected: the last from "
         "127.0.0.1: a peer claiming rank 1 on host-1: HELLO HMAC does "
         "not match");
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 2, port, "right", NULL, 1500 }), 0);
    cr_assert_eq(exit_of(kid), 0);
    cr_assert_lt(pf_now_ms() - t0, 1500 + 2000);
}

/* A rank of another run cannot stop this one: it is refused, the others
 * time out waiting for the real rank 2 and all of them learn why. */
Test(rendezvous, wrong_run_id_is_refused_and_the_others_learn_why)
{
    int port = pf_test_free_port();
    pid_t k1, k2;

    want(PF_ERR_REJECTED, "PeerRejected", "belongs to run 'other-run'");
    k2 = spawn(join_expect, (struct rank_spec){ 2, 3, port, NULL, "other-run",
                                                3000 }, 200);
    want(PF_ERR_TIMEOUT, "PeerTimeout",
         "1 HELLO rejected: the last from 127.0.0.1: rank 2 on host-2 "
         "belongs to run 'other-run', rank 0 to run 'test-run'");
    k1 = spawn(join_expect, (struct rank_spec){ 1, 3, port, NULL, NULL, 1800 }, 0);
    cr_assert_eq(join_expect(&(struct rank_spec){ 0, 3, port, NULL, NULL, 1500 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(k2), 0);
}

/* ------------------------------------------------------------- strangers */

enum stranger_kind {
    S_NO_MAC, S_WRONG_MAC, S_REPLAYED, S_OTHER_VERSION, S_OUT_OF_RANGE,
    S_OTHER_RUN, S_OTHER_WORLD, S_NOT_HELLO, S_GARBAGE, S_CUT, S_DUPLICATE,
    S_KINDS
};

/* One connection to rank 0 (from src when set) answering its CHALLENGE
 * with a bad HELLO of this kind, in a group of `world` whose members sign
 * with `secret`. True when rank 0 turned it away (REJECT or a close). */
static bool stranger_once(int port, const char *src, int kind, int world,
                          int rank, const char *secret)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    static const uint8_t old_challenge[PF_RDV_NONCE] = "captured-before!";
    uint8_t body[2048], nonce0[PF_RDV_NONCE];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    const uint8_t *key = (const uint8_t *)secret;
    struct pf_hello h;
    struct pf_conn c;
    struct pf_msg m;
    char err[PF_ERRLEN];
    pf_err rc;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sa.sin_addr.s_addr = htonl(0x7f000001);
    if (src) {
        struct sockaddr_in me = { .sin_family = AF_INET };
        inet_pton(AF_INET, src, &me.sin_addr);
        if (bind(fd, (struct sockaddr *)&me, sizeof(me)))
            return false;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        close(fd);
        return false;
    }
    pf_conn_init(&c, fd);
    if (pf_wire_recv(&c, &m, pf_deadline_in(2000), err) != PF_OK ||
        m.type != PF_RDV_CHALLENGE || m.len < 6 + PF_RDV_NONCE) {
        pf_conn_close(&c);
        return false;
    }
    memcpy(nonce0, m.body + 6, PF_RDV_NONCE);
    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = rank;
    h.world = world;
    snprintf(h.run_id, sizeof(h.run_id), "test-run");
    snprintf(h.facts.hostname, sizeof(h.facts.hostname), "stranger");
    switch (kind) {
    case S_NO_MAC: key = NULL; break;
    case S_WRONG_MAC: key = (const uint8_t *)"a-guess"; break;
    case S_REPLAYED:
        if (!key)                     /* unsigned, a replay is a HELLO */
            key = (const uint8_t *)"captured";
        break;
    case S_OTHER_VERSION: h.version = PF_RDV_VERSION - 1; break;
    case S_OUT_OF_RANGE: h.rank = world; break;
    case S_OTHER_RUN: snprintf(h.run_id, sizeof(h.run_id), "other-run"); break;
    case S_OTHER_WORLD: h.world = world + 1; break;
    default: break;
    }
    /* Members' mistakes are signed (with the group's secret, if any);
     * a captured HELLO was signed for another challenge. */
    pf_rdv_hello_encode(&h, key, key ? strlen((const char *)key) : 0,
                        kind == S_REPLAYED ? old_challenge : nonce0, &w,
                        err);
    if (kind == S_NOT_HELLO)
        rc = pf_wire_send(&c, PF_RDV_DATA, body, w.len, pf_deadline_in(1000), err);
    else if (kind == S_GARBAGE)
        rc = send(fd, "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL) == 18
                 ? PF_OK : PF_ERR_IO;
    else
        rc = pf_wire_send(&c, PF_RDV_HELLO, body, kind == S_CUT ? 10 : w.len,
                          pf_deadline_in(1000), err);
    if (rc == PF_OK)
        rc = pf_wire_recv(&c, &m, pf_deadline_in(3000), err);
    pf_conn_close(&c);
    return rc == PF_ERR_LOST || (rc == PF_OK && m.type == PF_RDV_REJECT);
}

/* Every kind of stranger in turn; exit code = how many got in. */
static int stranger_body(const struct rank_spec *s)
{
    int in = 0;

    for (int k = 0; k < S_KINDS; k++) {
        if (k == S_DUPLICATE && s->rank == 0)
            continue;                 /* no member to duplicate yet */
        if (k == S_NO_MAC && !s->secret)
            continue;                 /* no secret: that is a HELLO */
        if (!stranger_once(s->port, NULL, k, s->world, 1, s->secret)) {
            fprintf(stderr, "stranger of kind %d got in\n", k);
            in++;
        }
    }
    return in;
}

/* Strangers of every kind during a real run: every one is refused and
 * the run passes. rank_spec.rank 0 for the stranger: before rank 1 joins
 * (no duplicate then), 1: after. */
static void strangers_during_a_run(int world, int port, const char *secret)
{
    pid_t kids[8], stranger;
    int before = world == 2;

    for (int i = 1; i < world; i++)
        kids[i] = spawn(full_rank, (struct rank_spec){ i, world, port, secret,
                                                       NULL, 6000 },
                        before || i == world - 1 ? 1500 : 0);
    stranger = spawn(stranger_body, (struct rank_spec){ before ? 0 : 1, world,
                                                        port, secret, NULL, 0 },
                     300);
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, world, port, secret, NULL,
                                                6000 }), 0);
    for (int i = 1; i < world; i++)
        cr_assert_eq(exit_of(kids[i]), 0, "rank %d", i);
    cr_assert_eq(exit_of(stranger), 0, "strangers got in");
}

Test(rendezvous, strangers_of_every_kind_cannot_stop_a_2_rank_run)
{
    strangers_during_a_run(2, pf_test_free_port(), "shared-secret-0123456789");
}

Test(rendezvous, strangers_of_every_kind_cannot_stop_a_3_rank_run)
{
    strangers_during_a_run(3, pf_test_free_port(), "shared-secret-0123456789");
}

/* Without a secret a well-formed HELLO for a free rank is a member (only
 * k8s source binding tells it apart); every other kind is still refused. */
Test(rendezvous, strangers_cannot_stop_a_3_rank_run_without_a_secret)
{
    strangers_during_a_run(3, pf_test_free_port(), NULL);
}

/* k8s: rank 0 binds each rank to the address discovery saw for it. A
 * stranger claiming rank 1 from another address is refused even with a
 * perfect HELLO; the real rank 1, from its own address, joins. */
static struct pf_peer bound_hosts[3] = {
    { .rank = 0, .host = "127.0.0.1" }, { .rank = 1, .host = "127.0.0.2" },
    { .rank = 2, .host = "127.0.0.3" },
};

static int bound_rank(const struct rank_spec *s)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b;
    char err[PF_ERRLEN];

    c.expected = bound_hosts;
    c.bind_source = s->rank == 0;
    if (s->rank != 0)
        snprintf(c.bind_addr, sizeof(c.bind_addr), "%s", bound_hosts[s->rank].host);
    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK) {
        fprintf(stderr, "rank %d: %s\n", s->rank, err);
        return 10;
    }
    if (pf_boot_barrier(b, pf_deadline_in(3000), err) != PF_OK)
        return 11;
    pf_boot_close(b);
    return 0;
}

static int impostor(const struct rank_spec *s)
{
    /* A flawless HELLO for rank 1 (no secret in use), from rank 2's
     * address. */
    return stranger_once(s->port, "127.0.0.3", S_KINDS, s->world, 1, NULL) ? 0 : 1;
}

Test(rendezvous, a_rank_claimed_from_another_address_is_refused)
{
    int port = pf_test_free_port();
    pid_t k1 = spawn(bound_rank, (struct rank_spec){ 1, 2, port, NULL, NULL, 4000 }, 800);
    pid_t bad = spawn(impostor, (struct rank_spec){ 0, 2, port, NULL, NULL, 0 }, 200);

    cr_assert_eq(bound_rank(&(struct rank_spec){ 0, 2, port, NULL, NULL, 4000 }), 0);
    cr_assert_eq(exit_of(k1), 0);
    cr_assert_eq(exit_of(bad), 0, "the impostor got in");
}

/* ------------------------------------------------------------- silence */

/* A rank that stops (SIGSTOP) keeps its connections open, so nothing
 * breaks: the others' own deadlines pass at different times and each
 * blames its own neighbour. Giving up asks rank 0 for a census, and every
 * survivor names the rank that stopped. */
static int stopped_victim;

static int stop_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN], want[96];
    int64_t until;
    pf_err rc = PF_OK;

    if (!join_and_meet(&c, &b, pf_deadline_in(3000), err))
        return 80;
    if (s->rank == stopped_victim) {
        raise(SIGSTOP);
        return 0;
    }
    /* An engine waiting on the fabric: polls, then its deadline passes
     * (a different one on each rank). */
    until = pf_deadline_in(300 + 300 * s->rank);
    while (pf_ms_left(until) > 0 && (rc = pf_boot_poll(b, err)) == PF_OK)
        pf_sleep_ms(10);
    if (rc == PF_OK)
        pf_boot_abort(b, "all_reduce: not finished by the deadline (receiving "
                         "from the previous rank)");
    pf_boot_close(b);
    snprintf(want, sizeof(want), "rank %d (host-%d, 127.0.0.1) stopped "
             "answering", stopped_victim, stopped_victim);
    if (coll.reason != PF_R_PeerTimeout || !strstr(coll.msg, want)) {
        fprintf(stderr, "rank %d: %s %s\n", s->rank,
                pf_reason_name(coll.reason), coll.msg);
        return 81;
    }
    return 0;
}

static void stop_one(int victim, int port)
{
    pid_t kids[3];
    int64_t t0 = pf_now_ms();

    stopped_victim = victim;
    for (int i = 1; i < 3; i++)
        kids[i] = spawn(stop_rank, (struct rank_spec){ i, 3, port, NULL, NULL,
                                                       3000 }, 0);
    if (victim == 0) {
        kids[0] = spawn(stop_rank, (struct rank_spec){ 0, 3, port, NULL, NULL,
                                                       3000 }, 0);
    } else {
        cr_assert_eq(stop_rank(&(struct rank_spec){ 0, 3, port, NULL, NULL,
                                                    3000 }), 0);
    }
    for (int i = 0; i < 3; i++) {
        if (i == victim || (i == 0 && victim != 0))
            continue;
        cr_assert_eq(exit_of(kids[i]), 0, "rank %d", i);
    }
    kill(kids[victim], SIGKILL);
    exit_of(kids[victim]);
    cr_assert_lt(pf_now_ms() - t0, 5000);
}

Test(rendezvous, a_stopped_rank_is_named_by_every_survivor)
{
    stop_one(2, pf_test_free_port());
}

Test(rendezvous, a_stopped_rank_0_is_named_by_every_survivor)
{
    stop_one(0, pf_test_free_port());
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
    int port = pf_test_free_port();
    int64_t t0 = pf_now_ms();

    three_ranks(lost_rank, port, 128 + SIGKILL);
    cr_assert_lt(pf_now_ms() - t0, 3000);
}

/* Orderly closes are not losses: rank 1 closes first, rank 0 keeps
 * polling and must see nothing wrong. */
static int close_early(const struct rank_spec *s)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b;
    char err[PF_ERRLEN];

    if (!join_and_meet(&c, &b, pf_deadline_in(3000), err))
        return 40;
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
    int port = pf_test_free_port();
    pid_t kid = spawn(close_early, (struct rank_spec){ 1, 2, port, NULL, NULL, 3000 }, 0);
    cr_assert_eq(close_early(&(struct rank_spec){ 0, 2, port, NULL, NULL, 3000 }), 0);
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
    if (rc == PF_OK)
        rc = poll_until(b, dl, err);
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
    three_ranks(abort_rank, pf_test_free_port(), 0);
}

/* A port scanner or health probe that connects and says nothing useful
 * must not break the rendezvous. */
Test(rendezvous, stray_connections_are_ignored)
{
    int port = pf_test_free_port();
    pid_t kid = spawn(full_rank, (struct rank_spec){ 1, 2, port, NULL, NULL, 5000 }, 300);
    pid_t stray = fork();
    if (stray == 0) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
        sa.sin_addr.s_addr = htonl(0x7f000001);
        pf_sleep_ms(100);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            (void)!write(fd, "GET / HTTP/1.0\r\n\r\n", 18);
        pf_sleep_ms(200);
        _exit(0);
    }
    cr_assert_eq(full_rank(&(struct rank_spec){ 0, 2, port, NULL, NULL, 5000 }), 0);
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

    if (!join_and_meet(&c, &b, dl, err))
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
    rc = poll_until(b, dl, err);
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
    three_ranks(own_abort_rank, pf_test_free_port(), 0);
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

    if (!join_and_meet(&c, &b, dl, err))
        return 70;
    if (s->rank == 2)
        raise(SIGKILL);
    if (s->rank == 1)
        pf_boot_abort(b, "send to rank 2 failed: connection reset");
    else
        poll_until(b, dl, err);
    pf_boot_close(b);
    if (coll.reason != PF_R_PeerLost ||
        !strstr(coll.msg, "rank 2 (host-2, 127.0.0.1) closed its connection")) {
        fprintf(stderr, "rank %d: %s %s\n", s->rank, pf_reason_name(coll.reason), coll.msg);
        return 71;
    }
    return 0;
}

Test(rendezvous, an_abort_caused_by_a_dead_peer_blames_that_peer)
{
    three_ranks(blamed_rank, pf_test_free_port(), 128 + SIGKILL);
}

/* ------------------------------------------------------------- scale */

/* A member as one socket: dial, answer the CHALLENGE with a good HELLO. */
static int member_dial(int port, int rank, int world)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    uint8_t body[1024];
    struct pf_wbuf w = { body, 0, sizeof(body), false };
    struct pf_hello h;
    struct pf_conn c;
    struct pf_msg m;
    char err[PF_ERRLEN];
    int fd;

    sa.sin_addr.s_addr = htonl(0x7f000001);
    for (int tries = 0; tries < 100; tries++) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        close(fd);
        fd = -1;
        pf_sleep_ms(20);
    }
    if (fd < 0)
        return -1;
    pf_conn_init(&c, fd);
    if (pf_wire_recv(&c, &m, pf_deadline_in(3000), err) != PF_OK ||
        m.type != PF_RDV_CHALLENGE)
        return -1;
    memset(&h, 0, sizeof(h));
    h.magic = PF_RDV_MAGIC;
    h.version = PF_RDV_VERSION;
    h.rank = rank;
    h.world = world;
    snprintf(h.run_id, sizeof(h.run_id), "test-run");
    snprintf(h.facts.hostname, sizeof(h.facts.hostname), "host-%d", rank);
    pf_rdv_hello_encode(&h, NULL, 0, m.body + 6, &w, err);
    if (pf_wire_send(&c, PF_RDV_HELLO, body, w.len, pf_deadline_in(1000), err))
        return -1;
    free(c.buf);                      /* keep the socket, drop the buffer */
    return fd;
}

/* Rank 0 of a group: 0 when it opens (and, with meet, passes a barrier
 * with the others). */
static int root_opens(const struct rank_spec *s, bool meet)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b;
    char err[PF_ERRLEN];

    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK) {
        fprintf(stderr, "rank 0: %s\n", err);
        return 1;
    }
    if (meet && pf_boot_barrier(b, pf_deadline_in(2000), err) != PF_OK)
        return 2;
    pf_boot_close(b);
    return 0;
}

static int root_of_300(const struct rank_spec *s)
{
    return root_opens(s, false);
}

/* The rendezvous has no rank cap of its own (it was 256): 300 ranks,
 * every member gets a peer table of 300 entries. */
Test(rendezvous, a_group_of_300_ranks_joins)
{
    int port = pf_test_free_port();
    enum { WORLD = 300 };
    pid_t root = spawn(root_of_300, (struct rank_spec){ 0, WORLD, port, NULL,
                                                        NULL, 8000 }, 0);
    int fds[WORLD];

    for (int r = 1; r < WORLD; r++) {
        fds[r] = member_dial(port, r, WORLD);
        cr_assert_geq(fds[r], 0, "rank %d could not join", r);
    }
    for (int r = 1; r < WORLD; r++) {
        struct pf_conn c;
        struct pf_msg m;
        char err[PF_ERRLEN];
        pf_conn_init(&c, fds[r]);
        cr_assert_eq(pf_wire_recv(&c, &m, pf_deadline_in(5000), err), PF_OK,
                     "rank %d: %s", r, err);
        cr_assert_eq(m.type, PF_RDV_WELCOME);
        cr_assert_eq(m.body[0] << 24 | m.body[1] << 16 | m.body[2] << 8 |
                     m.body[3], WORLD);
        pf_conn_close(&c);
    }
    cr_assert_eq(exit_of(root), 0);
}

/* ------------------------------------------------------------- flood */

/* n silent connections to port from src, opened as fast as connect
 * returns and held (never a byte sent); the descriptors in fds. */
static int open_silent(int port, const char *src, int *fds, int n)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
    struct sockaddr_in me = { .sin_family = AF_INET };
    int opened = 0;

    sa.sin_addr.s_addr = htonl(0x7f000001);
    inet_pton(AF_INET, src, &me.sin_addr);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
            (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
             errno != EINPROGRESS)) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        fds[opened++] = fd;
    }
    return opened;
}

/* Room for n more descriptors: the soft limit raised to the hard one. */
static bool fd_room(int n)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl))
        return false;
    rl.rlim_cur = rl.rlim_max;
    return !setrlimit(RLIMIT_NOFILE, &rl) &&
           (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)n + 64);
}

enum { FLOOD = 1500 };                /* held at once: > 256 slots + 128 queued
                                         before */

/* ~2000 silent connections a second from 127.0.0.3 for s->ms, the newest
 * FLOOD of them held. */
static int flood_body(const struct rank_spec *s)
{
    static int fds[FLOOD];
    int64_t until = pf_deadline_in(s->ms);
    int head = 0, held = 0, opened = 0;

    if (!fd_room(FLOOD))
        return 1;
    while (pf_ms_left(until) > 0) {
        for (int i = 0; i < 20; i++) {
            if (held == FLOOD) {
                close(fds[head]);
                held--;
            }
            if (open_silent(s->port, "127.0.0.3", &fds[head], 1) == 1) {
                head = (head + 1) % FLOOD;
                held++;
                opened++;
            }
        }
        pf_sleep_ms(10);
    }
    return opened > FLOOD ? 0 : 2;
}

/* Rank 1 from 127.0.0.2: joins (and runs the collectives) within 800 ms
 * of dialling, though 127.0.0.3 flooded rank 0's port first. */
static int member_after_flood(const struct rank_spec *s)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b;
    char err[PF_ERRLEN];
    int64_t t0 = pf_now_ms(), took;

    snprintf(c.bind_addr, sizeof(c.bind_addr), "127.0.0.2");
    if (pf_rdv_open(&c, &b, NULL, err) != PF_OK) {
        fprintf(stderr, "rank 1 under the flood: %s\n", err);
        return 1;
    }
    took = pf_now_ms() - t0;
    if (pf_boot_barrier(b, pf_deadline_in(2000), err) != PF_OK)
        return 2;
    pf_boot_close(b);
    if (took > 800) {
        fprintf(stderr, "rank 1 joined %lld ms after dialling, under the "
                "flood (want <= 800)\n", (long long)took);
        return 3;
    }
    return 0;
}

static int root_under_flood(const struct rank_spec *s)
{
    return root_opens(s, true);
}

/* One address opens more silent connections than rank 0 had slots and
 * listen queue together: rank 0 keeps accepting and that address holds
 * at most its share, so a member from another address joins at once.
 * (Before, rank 0 stopped accepting, the queue filled with the flood and
 * the member's SYNs were dropped: it joined after 2-3 s; now in ~1 ms.) */
Test(rendezvous, a_flood_from_one_address_does_not_delay_a_member_from_another)
{
    int port = pf_test_free_port();
    pid_t root, flood;

    if (!fd_room(FLOOD))
        cr_skip_test("RLIMIT_NOFILE is below %d", FLOOD + 64);
    root = spawn(root_under_flood, (struct rank_spec){ 0, 2, port, NULL, NULL,
                                                       5000 }, 0);
    flood = spawn(flood_body, (struct rank_spec){ 0, 2, port, NULL, NULL,
                                                  3000 }, 200);
    pf_sleep_ms(600);                 /* the flood is in */
    cr_assert_eq(member_after_flood(&(struct rank_spec){ 1, 2, port, NULL,
                                                         NULL, 4000 }), 0);
    cr_assert_eq(exit_of(root), 0);
    cr_assert_eq(exit_of(flood), 0);
}

/* Rank 0 of a group nobody joins; 0 when it timed out saying that it
 * dropped silent connections to make room. */
static int root_dropping(const struct rank_spec *s)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b;
    char err[PF_ERRLEN];

    if (pf_rdv_open(&c, &b, NULL, err) != PF_ERR_TIMEOUT ||
        !strstr(err, "silent connections dropped to make room")) {
        fprintf(stderr, "rank 0: %s\n", err);
        return 1;
    }
    return 0;
}

/* A connection that has its CHALLENGE but stays silent is replaced when
 * its address opens more than its share of slots (64 + world): it is
 * told BUSY before the close, which sends a member back to dial. */
Test(rendezvous, a_silent_connection_replaced_by_its_own_address_is_told_busy)
{
    int port = pf_test_free_port();
    static int fds[200];
    pid_t root = spawn(root_dropping, (struct rank_spec){ 0, 2, port, NULL,
                                                          NULL, 1500 }, 0);
    struct pf_conn c;
    struct pf_msg m;
    char err[PF_ERRLEN];
    int first = -1;

    cr_assert(fd_room(200));
    for (int tries = 0; tries < 50 && first < 0; tries++) {
        pf_sleep_ms(20);
        if (open_silent(port, "127.0.0.3", &first, 1) != 1)
            first = -1;
    }
    cr_assert_geq(first, 0);
    pf_conn_init(&c, first);
    cr_assert_eq(pf_wire_recv(&c, &m, pf_deadline_in(1000), err), PF_OK, "%s",
                 err);
    cr_assert_eq(m.type, PF_RDV_CHALLENGE);
    cr_assert_gt(open_silent(port, "127.0.0.3", fds, 200), 100);
    cr_assert_eq(pf_wire_recv(&c, &m, pf_deadline_in(1000), err), PF_OK, "%s",
                 err);
    cr_assert_eq(m.type, PF_RDV_BUSY, "got type %u", m.type);
    cr_assert_eq(pf_wire_recv(&c, &m, pf_deadline_in(1000), err), PF_ERR_LOST);
    pf_conn_close(&c);
    cr_assert_eq(exit_of(root), 0);
}

/* Rank 0 needs a descriptor per rank: it raises its soft limit to the
 * hard one, and names the limit when even that is too low. */
static int fd_limits(const struct rank_spec *s)
{
    struct pf_rdv_cfg c = mkcfg(s, NULL);
    struct pf_boot *b = NULL;
    struct rlimit rl = { 200, 200 };
    char err[PF_ERRLEN];

    c.world = 5000;
    if (setrlimit(RLIMIT_NOFILE, &rl))
        return 1;
    if (pf_rdv_open(&c, &b, NULL, err) != PF_ERR_USAGE ||
        !strstr(err, "rank 0 of 5000 ranks needs about") ||
        !strstr(err, "RLIMIT_NOFILE allows 200 (hard limit)")) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    rl = (struct rlimit){ 100, 190 };
    c.world = 100;
    c.deadline = pf_deadline_in(100);
    if (setrlimit(RLIMIT_NOFILE, &rl))
        return 3;
    /* Nobody comes: a timeout, but with the limit raised first. */
    if (pf_rdv_open(&c, &b, NULL, err) != PF_ERR_TIMEOUT ||
        getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur != 190) {
        fprintf(stderr, "%s (soft limit %llu)\n", err,
                (unsigned long long)rl.rlim_cur);
        return 4;
    }
    return 0;
}

Test(rendezvous, rank_0_raises_its_open_file_limit_or_names_it)
{
    int port = pf_test_free_port();
    pid_t kid = spawn(fd_limits, (struct rank_spec){ 0, 2, port, NULL, NULL,
                                                     1000 }, 0);
    cr_assert_eq(exit_of(kid), 0);
}

/* ----------------------------------------------------------- heartbeat */

/* With a 200 ms beat and a 1.5 s window. A stopped rank (SIGSTOP) beats
 * no more: every survivor names it PeerLost within the window, long before
 * its own deadline (20 s), whether it polls like an engine (ranks > 0) or
 * waits in a collective (rank 0 in allgather). A stalled rank (its engine
 * stuck in one call after a poll) still beats, with its stall: named too.
 * A rank busy outside an engine wait (computing, then joining the next
 * collective late) is never named. */
enum hb_mode { HB_STOP, HB_STALL, HB_BUSY };
static enum hb_mode hb_mode;
static int hb_victim;

static int hb_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN], want[128];
    uint32_t mine = 1, all[4];
    int64_t dl = pf_deadline_in(20000), t0;
    pf_err rc = PF_OK;

    if (!join_and_meet(&c, &b, pf_deadline_in(3000), err))
        return 90;
    if (s->rank == hb_victim) {
        if (hb_mode == HB_STOP)
            raise(SIGSTOP);
        if (hb_mode == HB_STALL) {
            pf_boot_poll(b, err);
            pf_sleep_ms(6000);        /* "inside a driver call" */
            return 0;
        }
        pf_sleep_ms(3500);            /* HB_BUSY: computing for 2 windows */
        rc = pf_boot_allgather(b, &mine, 4, all, dl, err);
        pf_boot_close(b);
        return rc == PF_OK ? 0 : 91;
    }
    t0 = pf_now_ms();
    if (hb_mode == HB_BUSY || s->rank == 0) {
        rc = pf_boot_allgather(b, &mine, 4, all, dl, err);
    } else {
        rc = poll_until(b, dl, err);
    }
    if (hb_mode == HB_BUSY) {
        pf_boot_close(b);
        if (rc != PF_OK) {
            fprintf(stderr, "rank %d: %d %s\n", s->rank, rc, err);
            return 92;
        }
        return 0;
    }
    snprintf(want, sizeof(want), "rank %d (host-%d, 127.0.0.1) %s", hb_victim,
             hb_victim, hb_mode == HB_STOP ? "stopped answering"
                                          : "stopped making progress");
    pf_boot_close(b);
    if (rc != PF_ERR_LOST || coll.reason != PF_R_PeerLost ||
        !strstr(coll.msg, want) || pf_now_ms() - t0 > 4000) {
        fprintf(stderr, "rank %d after %lld ms: %d %s %s\n", s->rank,
                (long long)(pf_now_ms() - t0), rc,
                pf_reason_name(coll.reason), coll.msg);
        return 93;
    }
    return 0;
}

static void hb_run(enum hb_mode mode, int victim, int port)
{
    pid_t kids[3];

    beat_ms = 200;
    silent_ms = 1500;
    hb_mode = mode;
    hb_victim = victim;
    for (int i = 0; i < 3; i++)
        kids[i] = spawn(hb_rank, (struct rank_spec){ i, 3, port, NULL, NULL,
                                                     3000 }, 0);
    for (int i = 0; i < 3; i++) {
        if (i == victim && mode == HB_STOP) {
            continue;
        }
        if (i == victim && mode == HB_STALL) {
            kill(kids[i], SIGKILL);
            exit_of(kids[i]);
            continue;
        }
        cr_assert_eq(exit_of(kids[i]), 0, "rank %d", i);
    }
    if (mode == HB_STOP) {
        kill(kids[victim], SIGKILL);
        exit_of(kids[victim]);
    }
    beat_ms = silent_ms = 0;
}

Test(heartbeat, a_stopped_rank_is_named_within_the_window)
{
    hb_run(HB_STOP, 2, pf_test_free_port());
}

Test(heartbeat, a_stopped_rank_0_is_named_within_the_window)
{
    hb_run(HB_STOP, 0, pf_test_free_port());
}

Test(heartbeat, a_rank_stuck_in_an_engine_call_is_named)
{
    hb_run(HB_STALL, 1, pf_test_free_port());
}

Test(heartbeat, a_rank_busy_between_collectives_is_not_named)
{
    hb_run(HB_BUSY, 2, pf_test_free_port());
}

/* ------------------------------------------------------------- goodbye */

/* Rank 0 finishes the last exchange first: its bcast is in the sockets
 * while rank 2, late to read it, still beats. Closing then with those
 * beats unread would reset the connection and throw away what rank 2 had
 * not read; the goodbye waits for rank 2's BYE instead. */
#define LAST_LEN (3u << 20)

static int last_exchange_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN];
    uint8_t *buf = malloc(LAST_LEN);
    pf_err rc;

    if (!buf || !join_and_meet(&c, &b, pf_deadline_in(3000), err))
        return 100;
    if (s->rank == 0)
        for (size_t i = 0; i < LAST_LEN; i++)
            buf[i] = (uint8_t)(i * 7);
    if (s->rank == 2)
        pf_sleep_ms(1000);            /* busy elsewhere; its beats pile up */
    rc = pf_boot_bcast(b, buf, LAST_LEN, 0, pf_deadline_in(6000), err);
    pf_boot_close(b);
    if (rc != PF_OK || coll.reason != PF_R_None) {
        fprintf(stderr, "rank %d: %d %s %s\n", s->rank, rc,
                pf_reason_name(coll.reason), coll.msg);
        return 101;
    }
    for (size_t i = 0; i < LAST_LEN; i++)
        if (buf[i] != (uint8_t)(i * 7))
            return 102;
    free(buf);
    return 0;
}

Test(goodbye, rank_0_done_first_does_not_cut_off_a_rank_still_reading)
{
    int port = pf_test_free_port();
    pid_t kids[2];

    beat_ms = 50;
    silent_ms = 4000;
    for (int i = 1; i < 3; i++)
        kids[i - 1] = spawn(last_exchange_rank, (struct rank_spec){
                                i, 3, port, NULL, NULL, 9000 }, 0);
    cr_assert_eq(last_exchange_rank(&(struct rank_spec){ 0, 3, port, NULL,
                                                         NULL, 9000 }), 0);
    cr_assert_eq(exit_of(kids[0]), 0, "rank 1");
    cr_assert_eq(exit_of(kids[1]), 0, "rank 2");
    beat_ms = silent_ms = 0;
}

/* A member that stood still past the silence window (SIGSTOP) is named by
 * the others; once resumed, it must say that it was the silent one
 * rather than blame rank 0 for leaving. */
static int resumed_rank(const struct rank_spec *s)
{
    static struct pf_fault coll;
    struct pf_rdv_cfg c = mkcfg(s, &coll);
    struct pf_boot *b;
    char err[PF_ERRLEN], want[96];
    uint32_t mine = 1, all[3];
    pf_err rc;

    if (!join_and_meet(&c, &b, pf_deadline_in(3000), err))
        return 110;
    if (s->rank == 2)
        raise(SIGSTOP);               /* the test resumes it later */
    rc = pf_boot_allgather(b, &mine, 4, all, pf_deadline_in(8000), err);
    pf_boot_close(b);
    snprintf(want, sizeof(want), "rank 2 (host-2, 127.0.0.1) %s",
             s->rank == 2 ? "was the silent one" : "stopped answering");
    if (rc != PF_ERR_LOST || coll.reason != PF_R_PeerLost ||
        !strstr(coll.msg, want)) {
        fprintf(stderr, "rank %d: %d %s %s\n", s->rank, rc,
                pf_reason_name(coll.reason), coll.msg);
        return 111;
    }
    return 0;
}

Test(goodbye, a_resumed_silent_rank_says_it_was_the_silent_one)
{
    int port = pf_test_free_port();
    pid_t kids[3];
    int st;

    beat_ms = 100;
    silent_ms = 1000;
    for (int i = 0; i < 3; i++)
        kids[i] = spawn(resumed_rank, (struct rank_spec){ i, 3, port, NULL,
                                                          NULL, 9000 }, 0);
    cr_assert_eq(exit_of(kids[0]), 0, "rank 0");
    cr_assert_eq(exit_of(kids[1]), 0, "rank 1");
    /* The survivors are gone: wake the silent one. */
    cr_assert_eq(waitpid(kids[2], &st, WUNTRACED | WNOHANG) >= 0, 1);
    pf_sleep_ms(300);
    kill(kids[2], SIGCONT);
    cr_assert_eq(exit_of(kids[2]), 0, "rank 2");
    beat_ms = silent_ms = 0;
}
