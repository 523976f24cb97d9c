#include "crypto.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

bool pf_sha256(const void *data, size_t len, uint8_t out[PF_SHA256_LEN])
{
    unsigned int n = 0;

    if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) == 1 &&
        n == PF_SHA256_LEN)
        return true;
    memset(out, 0, PF_SHA256_LEN);
    return false;
}

bool pf_hmac_sha256(const void *key, size_t keylen,
                    const struct pf_bytes *parts, size_t nparts,
                    uint8_t out[PF_SHA256_LEN])
{
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    size_t n = 0;
    bool ok = ctx && EVP_MAC_init(ctx, key, keylen, params) == 1;

    for (size_t i = 0; ok && i < nparts; i++)
        ok = EVP_MAC_update(ctx, parts[i].p, parts[i].len) == 1;
    ok = ok && EVP_MAC_final(ctx, out, &n, PF_SHA256_LEN) == 1 &&
         n == PF_SHA256_LEN;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    if (!ok)
        memset(out, 0, PF_SHA256_LEN);
    return ok;
}

bool pf_digest_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

void pf_random_bytes(void *out, size_t len)
{
    uint8_t *p = out;

    if (getrandom(p, len, GRND_NONBLOCK) == (ssize_t)len)
        return;
    if (len <= (size_t)0x7fffffff && RAND_bytes(p, (int)len) == 1)
        return;
    for (size_t off = 0; off < len; off += PF_SHA256_LEN) {
        struct { struct timespec t; pid_t pid; size_t off; const void *p; } seed;
        uint8_t d[PF_SHA256_LEN];
        size_t n = len - off < PF_SHA256_LEN ? len - off : PF_SHA256_LEN;

        memset(&seed, 0, sizeof(seed));
        clock_gettime(CLOCK_MONOTONIC, &seed.t);
        seed.pid = getpid();
        seed.off = off;
        seed.p = out;
        pf_sha256(&seed, sizeof(seed), d);
        memcpy(p + off, d, n);
    }
}

void pf_hex(const uint8_t *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}
