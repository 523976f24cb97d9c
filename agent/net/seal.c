#include "seal.h"

#include "../util/crypto.h"

_Static_assert(PF_SEAL_MAC == PF_SHA256_LEN, "the MAC is a whole SHA-256");

void pf_seal_nonce(uint8_t out[PF_SEAL_NONCE])
{
    pf_random_bytes(out, PF_SEAL_NONCE);
}

bool pf_seal_mac(const uint8_t *secret, size_t secret_len, const void *body,
                 size_t len, const uint8_t nonce[PF_SEAL_NONCE],
                 uint8_t mac[PF_SEAL_MAC])
{
    const struct pf_bytes parts[] = { { body, len }, { nonce, PF_SEAL_NONCE } };

    return pf_hmac_sha256(secret, secret_len, parts, 2, mac);
}

bool pf_seal_ok(const uint8_t *secret, size_t secret_len, const void *body,
                size_t len, const uint8_t nonce[PF_SEAL_NONCE],
                const uint8_t mac[PF_SEAL_MAC])
{
    uint8_t want[PF_SEAL_MAC];

    /* A failed libcrypto leaves want zeroed, which no real MAC matches. */
    pf_seal_mac(secret, secret_len, body, len, nonce, want);
    return pf_digest_equal(mac, want, PF_SEAL_MAC);
}

pf_err pf_seal_put(struct pf_wbuf *w, const uint8_t *secret,
                   size_t secret_len, const uint8_t nonce[PF_SEAL_NONCE],
                   const char *what, char *err)
{
    uint8_t mac[PF_SEAL_MAC];

    pf_put_u8(w, secret ? 1 : 0);
    if (!secret || w->overflow)
        return PF_OK;
    if (!pf_seal_mac(secret, secret_len, w->p, w->len, nonce, mac))
        return pf_fail(err, PF_ERR_NOMEM, "libcrypto could not sign the %s",
                       what);
    pf_put_bytes(w, mac, sizeof(mac));
    return PF_OK;
}
