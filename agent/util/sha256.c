#include "sha256.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t b[PF_SHA256_BLOCK])
{
    uint32_t w[64], a, bb, c, d, e, f, g, hh;
    int i;

    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | (uint32_t)b[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0]; bb = h[1]; c = h[2]; d = h[3];
    e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (i = 0; i < 64; i++) {
        uint32_t s1 = ror(e, 6) ^ ror(e, 11) ^ ror(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + s1 + ch + K[i] + w[i];
        uint32_t s0 = ror(a, 2) ^ ror(a, 13) ^ ror(a, 22);
        uint32_t maj = (a & bb) ^ (a & c) ^ (bb & c);
        uint32_t t2 = s0 + maj;
        hh = g; g = f; f = e; e = d + t1;
        d = c; c = bb; bb = a; a = t1 + t2;
    }
    h[0] += a; h[1] += bb; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void pf_sha256_init(struct pf_sha256 *s)
{
    static const uint32_t iv[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(s->h, iv, sizeof(iv));
    s->total = 0;
    s->used = 0;
}

void pf_sha256_update(struct pf_sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;

    s->total += len;
    while (len > 0) {
        size_t take = PF_SHA256_BLOCK - s->used;
        if (take > len)
            take = len;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used == PF_SHA256_BLOCK) {
            compress(s->h, s->block);
            s->used = 0;
        }
    }
}

void pf_sha256_final(struct pf_sha256 *s, uint8_t out[PF_SHA256_LEN])
{
    uint64_t bits = s->total * 8;
    uint8_t pad = 0x80, zero = 0, len_be[8];
    int i;

    /* Padding: 0x80, zeros to 56 mod 64, then the bit length big-endian. */
    for (i = 0; i < 8; i++)
        len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
    pf_sha256_update(s, &pad, 1);
    while (s->used != 56)
        pf_sha256_update(s, &zero, 1);
    pf_sha256_update(s, len_be, 8);
    for (i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
    memset(s, 0, sizeof(*s));
}

void pf_sha256(const void *data, size_t len, uint8_t out[PF_SHA256_LEN])
{
    struct pf_sha256 s;
    pf_sha256_init(&s);
    pf_sha256_update(&s, data, len);
    pf_sha256_final(&s, out);
}

void pf_hmac_init(struct pf_hmac *h, const void *key, size_t keylen)
{
    uint8_t k[PF_SHA256_BLOCK] = { 0 }, pad[PF_SHA256_BLOCK];
    int i;

    /* Keys longer than a block are hashed first (RFC 2104 section 2). */
    if (keylen > PF_SHA256_BLOCK)
        pf_sha256(key, keylen, k);
    else if (keylen > 0)
        memcpy(k, key, keylen);
    for (i = 0; i < PF_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    pf_sha256_init(&h->inner);
    pf_sha256_update(&h->inner, pad, sizeof(pad));
    for (i = 0; i < PF_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    pf_sha256_init(&h->outer);
    pf_sha256_update(&h->outer, pad, sizeof(pad));
    memset(k, 0, sizeof(k));
    memset(pad, 0, sizeof(pad));
}

void pf_hmac_update(struct pf_hmac *h, const void *data, size_t len)
{
    pf_sha256_update(&h->inner, data, len);
}

void pf_hmac_final(struct pf_hmac *h, uint8_t out[PF_SHA256_LEN])
{
    uint8_t inner[PF_SHA256_LEN];

    pf_sha256_final(&h->inner, inner);
    pf_sha256_update(&h->outer, inner, sizeof(inner));
    pf_sha256_final(&h->outer, out);
    memset(inner, 0, sizeof(inner));
}

void pf_hmac_sha256(const void *key, size_t keylen, const void *data,
                    size_t len, uint8_t out[PF_SHA256_LEN])
{
    struct pf_hmac h;
    pf_hmac_init(&h, key, keylen);
    pf_hmac_update(&h, data, len);
    pf_hmac_final(&h, out);
}

bool pf_digest_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    uint8_t diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
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
