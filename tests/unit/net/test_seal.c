/* The challenge seal: the MAC covers every byte before it, flag included,
 * and the receiver's nonce; another nonce, secret or body does not verify. */
#include <criterion/criterion.h>
#include <string.h>

#include "net/seal.h"
#include "util/crypto.h"

static const uint8_t key[] = "s3cret";
static const uint8_t nonce[PF_SEAL_NONCE] = "0123456789abcdef";

Test(seal, trailer_is_flag_then_mac_over_body_flag_and_nonce)
{
    uint8_t buf[64], want[PF_SEAL_MAC];
    struct pf_wbuf w = { buf, 0, sizeof(buf), false };
    const struct pf_bytes parts[] = { { "body\x01", 5 }, { nonce, PF_SEAL_NONCE } };

    char err[PF_ERRLEN];

    pf_put_bytes(&w, "body", 4);
    cr_assert_eq(pf_seal_put(&w, key, 6, nonce, "body", err), PF_OK);
    cr_assert_eq(w.len, 5 + PF_SEAL_MAC);
    cr_assert_eq(buf[4], 1);
    cr_assert(pf_hmac_sha256(key, 6, parts, 2, want));
    cr_assert_arr_eq(buf + 5, want, PF_SEAL_MAC);
    cr_assert(pf_seal_ok(key, 6, buf, 5, nonce, buf + 5));
}

Test(seal, another_nonce_secret_or_body_does_not_verify)
{
    uint8_t buf[64], other[PF_SEAL_NONCE];
    struct pf_wbuf w = { buf, 0, sizeof(buf), false };
    char err[PF_ERRLEN];

    pf_put_bytes(&w, "body", 4);
    cr_assert_eq(pf_seal_put(&w, key, 6, nonce, "body", err), PF_OK);
    memcpy(other, nonce, sizeof(other));
    other[0] ^= 1;
    cr_assert_not(pf_seal_ok(key, 6, buf, 5, other, buf + 5));
    cr_assert_not(pf_seal_ok((const uint8_t *)"other", 5, buf, 5, nonce,
                             buf + 5));
    buf[0] ^= 1;
    cr_assert_not(pf_seal_ok(key, 6, buf, 5, nonce, buf + 5));
}

Test(seal, without_a_secret_only_the_flag)
{
    uint8_t buf[8];
    struct pf_wbuf w = { buf, 0, sizeof(buf), false };

    char err[PF_ERRLEN];

    cr_assert_eq(pf_seal_put(&w, NULL, 0, nonce, "body", err), PF_OK);
    cr_assert_eq(w.len, 1);
    cr_assert_eq(buf[0], 0);
}

Test(seal, nonces_differ)
{
    uint8_t a[PF_SEAL_NONCE], b[PF_SEAL_NONCE];

    pf_seal_nonce(a);
    pf_seal_nonce(b);
    cr_assert(memcmp(a, b, sizeof(a)) != 0);
}
