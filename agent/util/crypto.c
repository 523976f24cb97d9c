#include "crypto.h"

#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

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

/* EVP_DigestSign with an HMAC key: the one interface OpenSSL 1.1.1 (the
 * Debian 11 image builder) and 3.x share without deprecation. */
bool pf_hmac_sha256(const void *key, size_t keylen,
                    const struct pf_bytes *parts, size_t nparts,
                    uint8_t out[PF_SHA256_LEN])
{
    static const uint8_t no_key[1];
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_HMAC, NULL,
                                                  keylen ? key : no_key,
                                                  keylen);
    EVP_MD_CTX *ctx = pkey ? EVP_MD_CTX_new() : NULL;
    size_t n = PF_SHA256_LEN;
    bool ok = ctx && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL,
                                        pkey) == 1;

    for (size_t i = 0; ok && i < nparts; i++)
        ok = EVP_DigestSignUpdate(ctx, parts[i].p, parts[i].len) == 1;
    ok = ok && EVP_DigestSignFinal(ctx, out, &n) == 1 && n == PF_SHA256_LEN;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(pkey);
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
