/* The challenge seal both the rendezvous and the DaemonSet coordinator put
 * on a frame body: the receiver sent a fresh nonce first, and the sender
 * ends its body with
 *
 *   u8 signed   [HMAC-SHA256(secret, every body byte before the MAC || nonce)]
 *
 * so a recorded frame cannot be replayed to another connection and a
 * sender without the secret cannot speak for a member. One scheme for
 * every signed frame: the signed bytes include the flag. */
#ifndef PF_NET_SEAL_H
#define PF_NET_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "wire.h"

#define PF_SEAL_NONCE 16
#define PF_SEAL_MAC 32

/* A fresh challenge nonce. */
void pf_seal_nonce(uint8_t out[PF_SEAL_NONCE]);

/* The MAC of body[0..len) || nonce. False only when libcrypto fails. */
bool pf_seal_mac(const uint8_t *secret, size_t secret_len, const void *body,
                 size_t len, const uint8_t nonce[PF_SEAL_NONCE],
                 uint8_t mac[PF_SEAL_MAC]);
/* True when mac is the MAC of body[0..len) || nonce (constant time). */
bool pf_seal_ok(const uint8_t *secret, size_t secret_len, const void *body,
                size_t len, const uint8_t nonce[PF_SEAL_NONCE],
                const uint8_t mac[PF_SEAL_MAC]);
/* Append the trailer: the flag, then (secret given) the MAC over all of
 * w before it. PF_ERR_NOMEM only when libcrypto fails ("could not sign
 * the <what>"); overflow sticks in w. */
pf_err pf_seal_put(struct pf_wbuf *w, const uint8_t *secret,
                   size_t secret_len, const uint8_t nonce[PF_SEAL_NONCE],
                   const char *what, char *err);

#endif
