/* util/crypto: SHA-256 against FIPS 180-2 examples, HMAC-SHA256 against
 * RFC 4231 (through libcrypto), signed pieces, random bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "util/crypto.h"

static void hex_of(const uint8_t d[PF_SHA256_LEN], char out[65])
{
    pf_hex(d, PF_SHA256_LEN, out);
}

static void check_sha(const void *data, size_t len, const char *want)
{
    uint8_t d[PF_SHA256_LEN];
    char hex[65];
    pf_sha256(data, len, d);
    hex_of(d, hex);
    cr_assert_str_eq(hex, want);
}

Test(sha256, fips_examples)
{
    check_sha("", 0,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abc", 3,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m112 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                       "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    check_sha(m112, strlen(m112),
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

Test(sha256, million_a)
{
    static char buf[1000000];
    uint8_t d[PF_SHA256_LEN];
    char hex[65];

    memset(buf, 'a', sizeof(buf));
    cr_assert(pf_sha256(buf, sizeof(buf), d));
    hex_of(d, hex);
    cr_assert_str_eq(hex,
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void check_hmac(const uint8_t *key, size_t klen, const void *data,
                       size_t dlen, const char *want)
{
    uint8_t d[PF_SHA256_LEN];
    char hex[65];
    const struct pf_bytes one[] = { { data, dlen } };
    cr_assert(pf_hmac_sha256(key, klen, one, 1, d));
    hex_of(d, hex);
    cr_assert_str_eq(hex, want);
}

Test(hmac_sha256, rfc4231_cases)
{
    uint8_t k[131], data[50];

    memset(k, 0x0b, 20);
    check_hmac(k, 20, "Hi There", 8,
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(data, 0xdd, 50);
    check_hmac(k, 20, data, 50,
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(data, 0xcd, 50);
    check_hmac(k, 25, data, 50,
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0xaa, 131);
    check_hmac(k, 131, "Test Using Larger Than Block-Size Key - Hash Key First",
        54, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *c7 = "This is a test using a larger than block-size key and a "
                     "larger than block-size data. The key needs to be hashed "
                     "before being used by the HMAC algorithm.";
    check_hmac(k, 131, c7, strlen(c7),
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

Test(hmac_sha256, rfc4231_truncated_case5)
{
    uint8_t k[20], d[PF_SHA256_LEN];
    char hex[65];

    const struct pf_bytes one[] = { { "Test With Truncation", 20 } };

    memset(k, 0x0c, sizeof(k));
    cr_assert(pf_hmac_sha256(k, sizeof(k), one, 1, d));
    pf_hex(d, 16, hex);
    cr_assert_str_eq(hex, "a3b6167473100ee06e0c796c2955552b");
}

Test(hmac_sha256, pieces_sign_their_concatenation)
{
    const struct pf_bytes whole[] = { { "hello world", 11 } };
    const struct pf_bytes pieces[] = { { "hello", 5 }, { "", 0 }, { " world", 6 } };
    const struct pf_bytes other[] = { { "hello", 5 }, { " worle", 6 } };
    uint8_t a[PF_SHA256_LEN], b[PF_SHA256_LEN], c[PF_SHA256_LEN];

    cr_assert(pf_hmac_sha256("key", 3, whole, 1, a));
    cr_assert(pf_hmac_sha256("key", 3, pieces, 3, b));
    cr_assert(pf_hmac_sha256("key", 3, other, 2, c));
    cr_assert(pf_digest_equal(a, b, PF_SHA256_LEN));
    cr_assert(!pf_digest_equal(a, c, PF_SHA256_LEN));
    b[31] ^= 1;
    cr_assert(!pf_digest_equal(a, b, PF_SHA256_LEN));
}

Test(random_bytes, fills_and_differs)
{
    uint8_t a[48], b[48], zero[48] = { 0 };

    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    pf_random_bytes(a, sizeof(a));
    pf_random_bytes(b, sizeof(b));
    cr_assert(memcmp(a, zero, sizeof(a)) != 0);
    cr_assert(memcmp(a, b, sizeof(a)) != 0);
}
