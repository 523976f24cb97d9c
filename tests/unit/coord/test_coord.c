/* The DaemonSet coordinator's pieces: REGISTER / ASSIGN frames (MACs,
 * bounds). The Lease's rules are tested in tests/unit/k8s/test_lease.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord.h"

static const uint8_t secret[] = "s3cret";
static const uint8_t other[] = "other";

static size_t encode_reg(uint8_t *buf, size_t cap, const uint8_t *key,
                         const uint8_t ch[PF_CO_NONCE])
{
    struct pf_co_register r = { .wait_ms = 21000 };
    struct pf_wbuf w = { buf, 0, cap, false };
    char err[PF_ERRLEN];

    snprintf(r.node, sizeof(r.node), "node-1");
    snprintf(r.pod, sizeof(r.pod), "efa-preflight-ds-1");
    memset(r.nonce, 7, sizeof(r.nonce));
    cr_assert_eq(pf_co_register_encode(&r, key, key ? 6 : 0, ch, &w, err),
                 PF_OK, "%s", err);
    return w.len;
}

Test(k8s_coord, register_round_trip_with_its_mac)
{
    uint8_t buf[1024], ch[PF_CO_NONCE];
    struct pf_co_register r;
    char err[PF_ERRLEN];
    size_t len;

    memset(ch, 1, sizeof(ch));
    len = encode_reg(buf, sizeof(buf), secret, ch);
    cr_assert_eq(pf_co_register_decode(buf, len, secret, 6, ch, &r, err),
                 PF_OK, "%s", err);
    cr_assert_str_eq(r.node, "node-1");
    cr_assert_str_eq(r.pod, "efa-preflight-ds-1");
    cr_assert_eq(r.wait_ms, 21000);
    cr_assert_eq(r.nonce[3], 7);
}

Test(k8s_coord, register_with_wrong_secret_or_stale_challenge_is_rejected)
{
    uint8_t buf[1024], ch[PF_CO_NONCE], ch2[PF_CO_NONCE];
    struct pf_co_register r;
    char err[PF_ERRLEN];
    size_t len;

    memset(ch, 1, sizeof(ch));
    memset(ch2, 2, sizeof(ch2));
    len = encode_reg(buf, sizeof(buf), other, ch);
    cr_assert_eq(pf_co_register_decode(buf, len, secret, 6, ch, &r, err),
                 PF_ERR_REJECTED);
    cr_assert(strstr(err, "not signed"), "%s", err);
    /* A replay into another connection (another challenge) fails too. */
    len = encode_reg(buf, sizeof(buf), secret, ch);
    cr_assert_eq(pf_co_register_decode(buf, len, secret, 6, ch2, &r, err),
                 PF_ERR_REJECTED);
    /* Unsigned while the coordinator has a secret. */
    len = encode_reg(buf, sizeof(buf), NULL, ch);
    cr_assert_eq(pf_co_register_decode(buf, len, secret, 6, ch, &r, err),
                 PF_ERR_REJECTED);
    /* Truncated or trailing bytes: malformed, not a member. */
    len = encode_reg(buf, sizeof(buf), secret, ch);
    cr_assert_eq(pf_co_register_decode(buf, len - 1, secret, 6, ch, &r, err),
                 PF_ERR_PROTOCOL);
    buf[0] ^= 0xff;
    cr_assert_eq(pf_co_register_decode(buf, len, secret, 6, ch, &r, err),
                 PF_ERR_PROTOCOL);
}

Test(k8s_coord, assign_round_trip_and_bounds)
{
    struct pf_co_entry e[3] = {
        { "10.254.40.11", "ds-a", "node-a" },
        { "10.254.40.12", "ds-b", "node-b" },
        { "10.254.40.13", "ds-c", "node-c" },
    };
    struct pf_co_assign a = { .world = 3, .rank = 1, .e = e }, got;
    uint8_t nonce[PF_CO_NONCE], *body;
    char err[PF_ERRLEN];
    size_t len;

    snprintf(a.run_id, sizeof(a.run_id), "ds-0123456789abcdef");
    memset(nonce, 9, sizeof(nonce));
    cr_assert_eq(pf_co_assign_encode(&a, secret, 6, nonce, &body, &len, err),
                 PF_OK);
    cr_assert_eq(pf_co_assign_decode(body, len, secret, 6, nonce, &got, err),
                 PF_OK, "%s", err);
    cr_assert_eq(got.world, 3);
    cr_assert_eq(got.rank, 1);
    cr_assert_str_eq(got.run_id, "ds-0123456789abcdef");
    cr_assert_str_eq(got.e[2].host, "10.254.40.13");
    cr_assert_str_eq(got.e[0].node, "node-a");
    pf_co_assign_free(&got);
    /* Signed for another agent's nonce: refused. */
    nonce[0] ^= 1;
    cr_assert_eq(pf_co_assign_decode(body, len, secret, 6, nonce, &got, err),
                 PF_ERR_REJECTED);
    cr_assert_null(got.e);
    free(body);

    /* A world larger than the frame could hold is refused before any
     * allocation of that size. */
    a.world = 1;
    a.rank = 0;
    cr_assert_eq(pf_co_assign_encode(&a, NULL, 0, nonce, &body, &len, err),
                 PF_OK);
    body[2 + strlen(a.run_id)] = 0x7f;     /* world's high byte */
    cr_assert_eq(pf_co_assign_decode(body, len, NULL, 0, nonce, &got, err),
                 PF_ERR_PROTOCOL);
    free(body);
}
