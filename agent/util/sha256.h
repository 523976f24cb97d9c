/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written from the specs so
 * the agent needs no crypto library for the rendezvous HMAC. */
#ifndef PF_SHA256_H
#define PF_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PF_SHA256_LEN 32
#define PF_SHA256_BLOCK 64

struct pf_sha256 {
    uint32_t h[8];
    uint64_t total;                   /* bytes hashed so far */
    uint8_t block[PF_SHA256_BLOCK];
    size_t used;                      /* bytes waiting in block */
};

void pf_sha256_init(struct pf_sha256 *s);
void pf_sha256_update(struct pf_sha256 *s, const void *data, size_t len);
void pf_sha256_final(struct pf_sha256 *s, uint8_t out[PF_SHA256_LEN]);
void pf_sha256(const void *data, size_t len, uint8_t out[PF_SHA256_LEN]);

struct pf_hmac {
    struct pf_sha256 inner, outer;
};

void pf_hmac_init(struct pf_hmac *h, const void *key, size_t keylen);
void pf_hmac_update(struct pf_hmac *h, const void *data, size_t len);
void pf_hmac_final(struct pf_hmac *h, uint8_t out[PF_SHA256_LEN]);
void pf_hmac_sha256(const void *key, size_t keylen, const void *data,
                    size_t len, uint8_t out[PF_SHA256_LEN]);

/* Compare without an early exit, so timing does not leak how many leading
 * bytes of a MAC were right. */
bool pf_digest_equal(const uint8_t *a, const uint8_t *b, size_t len);

/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void pf_hex(const uint8_t *in, size_t len, char *out);

#endif
