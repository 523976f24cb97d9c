/* libFuzzer target: a HELLO body as rank 0 receives it from a peer it
 * does not trust yet. The first byte picks rank 0's view (with or without
 * a secret, which ranks have joined); the rest is the body. Invariants: an
 * accepted HELLO is a member (rank in 1..world-1, not joined, same run and
 * world) and encodes back to exactly the bytes received; a rejection
 * always says why. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/rendezvous.h"

#define WORLD 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t secret[] = "fuzz-secret";
    static const uint8_t challenge[PF_RDV_NONCE] = { 1, 2, 3, 4, 5, 6, 7, 8,
                                                     9, 10, 11, 12, 13, 14,
                                                     15, 16 };
    bool joined[WORLD] = { true, false, false, false };
    struct pf_rdv_view v = { .world = WORLD, .run_id = "run-1",
                             .challenge = challenge, .joined = joined };
    struct pf_hello h;
    char err[PF_ERRLEN] = "";
    uint8_t *again;
    struct pf_wbuf w;
    pf_err rc;

    if (size < 1)
        return 0;
    if (data[0] & 1) {
        v.secret = secret;
        v.secret_len = sizeof(secret) - 1;
    }
    joined[2] = data[0] & 2;
    data++;
    size--;

    rc = pf_rdv_check_hello(&v, data, size, &h, err);
    if (rc != PF_OK) {
        if ((rc != PF_ERR_REJECTED && rc != PF_ERR_PROTOCOL) || !err[0])
            __builtin_trap();
        return 0;
    }
    if (h.rank < 1 || h.rank >= WORLD || joined[h.rank] || h.world != WORLD ||
        strcmp(h.run_id, "run-1") || h.has_mac != (v.secret != NULL))
        __builtin_trap();
    again = malloc(size + 1);
    if (!again)
        return 0;
    w = (struct pf_wbuf){ again, 0, size + 1, false };
    if (pf_rdv_hello_encode(&h, v.secret, v.secret_len, challenge, &w,
                            err) != PF_OK ||
        w.len != size || memcmp(again, data, size) != 0)
        __builtin_trap();
    free(again);
    return 0;
}
