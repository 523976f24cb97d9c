/* SHA-256, HMAC-SHA256, fresh random bytes and a constant-time compare,
 * all through OpenSSL's libcrypto (already linked through libcurl): the
 * rendezvous and the DaemonSet coordinator sign their messages with them. */
#ifndef PF_CRYPTO_H
#define PF_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PF_SHA256_LEN 32

/* One piece of a message that is signed as the concatenation of pieces. */
struct pf_bytes {
    const void *p;
    size_t len;
};

/* false only when libcrypto itself fails (no memory): out is then zeroed,
 * which no peer's MAC matches. */
bool pf_sha256(const void *data, size_t len, uint8_t out[PF_SHA256_LEN]);
bool pf_hmac_sha256(const void *key, size_t keylen,
                    const struct pf_bytes *parts, size_t nparts,
                    uint8_t out[PF_SHA256_LEN]);

/* Compare without an early exit, so timing does not leak how many leading
 * bytes of a MAC were right. */
bool pf_digest_equal(const uint8_t *a, const uint8_t *b, size_t len);

/* len unpredictable bytes: the kernel's pool, else libcrypto's generator,
 * else (neither ready, early boot) time and pid hashed, which still differ
 * per call: what a nonce's freshness needs. */
void pf_random_bytes(void *out, size_t len);

/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void pf_hex(const uint8_t *in, size_t len, char *out);

#endif
