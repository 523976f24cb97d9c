/* REGISTER and ASSIGN frames of the DaemonSet coordinator (coord.h): pure
 * encode/decode, so the unit tests cover every check. */
#include "coord.h"

#include <stdlib.h>
#include <string.h>

/* Room for one table entry's fixed part (three u16 string lengths). */
#define ENTRY_MIN 6

/* The seal that ends the body (net/seal.h): the flag, then the MAC over
 * every byte before it. */
static pf_err check_seal(struct pf_rbuf *rb, const uint8_t *secret,
                         size_t secret_len, const uint8_t nonce[PF_CO_NONCE],
                         const char *what, char *err)
{
    uint8_t mac[PF_CO_MAC];
    bool has = pf_get_u8(rb) != 0;
    size_t signed_len = rb->off;

    if (has)
        pf_get_bytes(rb, mac, sizeof(mac));
    if (rb->bad || rb->off != rb->len)
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed %s", what);
    if (!secret)
        return PF_OK;
    if (!has || !pf_seal_ok(secret, secret_len, rb->p, signed_len, nonce, mac))
        return pf_fail(err, PF_ERR_REJECTED, "%s is not signed with this "
                       "agent's secret", what);
    return PF_OK;
}

pf_err pf_co_register_encode(const struct pf_co_register *r,
                             const uint8_t *secret, size_t secret_len,
                             const uint8_t challenge[PF_CO_NONCE],
                             struct pf_wbuf *w, char *err)
{
    pf_put_u32(w, PF_CO_MAGIC);
    pf_put_u16(w, PF_CO_VERSION);
    pf_put_str(w, r->node);
    pf_put_str(w, r->pod);
    pf_put_u32(w, r->wait_ms);
    pf_put_bytes(w, r->nonce, PF_CO_NONCE);
    if (pf_seal_put(w, secret, secret_len, challenge, "registration", err))
        return PF_ERR_NOMEM;
    if (w->overflow)
        return pf_fail(err, PF_ERR_USAGE, "registration does not fit in "
                       "%zu bytes", w->cap);
    return PF_OK;
}

pf_err pf_co_register_decode(const uint8_t *body, size_t len,
                             const uint8_t *secret, size_t secret_len,
                             const uint8_t challenge[PF_CO_NONCE],
                             struct pf_co_register *r, char *err)
{
    struct pf_rbuf rb = { body, len, 0, false };
    uint16_t version;

    memset(r, 0, sizeof(*r));
    if (pf_get_u32(&rb) != PF_CO_MAGIC || rb.bad)
        return pf_fail(err, PF_ERR_PROTOCOL, "not an efa-preflight "
                       "registration");
    version = pf_get_u16(&rb);
    if (version != PF_CO_VERSION)
        return pf_fail(err, PF_ERR_REJECTED, "registration protocol version "
                       "%u, the coordinator speaks %u", version,
                       PF_CO_VERSION);
    pf_get_str(&rb, r->node, sizeof(r->node));
    pf_get_str(&rb, r->pod, sizeof(r->pod));
    r->wait_ms = pf_get_u32(&rb);
    pf_get_bytes(&rb, r->nonce, PF_CO_NONCE);
    if (rb.bad || !r->node[0] || !r->pod[0])
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed registration");
    return check_seal(&rb, secret, secret_len, challenge, "registration",
                      err);
}

void pf_co_assign_free(struct pf_co_assign *a)
{
    free(a->e);
    a->e = NULL;
}

pf_err pf_co_assign_encode(const struct pf_co_assign *a, const uint8_t *secret,
                           size_t secret_len, const uint8_t nonce[PF_CO_NONCE],
                           uint8_t **out, size_t *len, char *err)
{
    size_t cap = 64 + strlen(a->run_id) + PF_CO_MAC;
    struct pf_wbuf w;

    for (int i = 0; i < a->world; i++)
        cap += ENTRY_MIN + strlen(a->e[i].host) + strlen(a->e[i].pod) +
               strlen(a->e[i].node);
    w = (struct pf_wbuf){ malloc(cap), 0, cap, false };
    if (!w.p)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    pf_put_str(&w, a->run_id);
    pf_put_u32(&w, (uint32_t)a->world);
    pf_put_u32(&w, (uint32_t)a->rank);
    for (int i = 0; i < a->world; i++) {
        pf_put_str(&w, a->e[i].host);
        pf_put_str(&w, a->e[i].pod);
        pf_put_str(&w, a->e[i].node);
    }
    if (pf_seal_put(&w, secret, secret_len, nonce, "group assignment", err)) {
        free(w.p);
        return PF_ERR_NOMEM;
    }
    if (w.overflow) {
        free(w.p);
        return pf_fail(err, PF_ERR_USAGE, "group table overflow");
    }
    *out = w.p;
    *len = w.len;
    return PF_OK;
}

pf_err pf_co_assign_decode(const uint8_t *body, size_t len,
                           const uint8_t *secret, size_t secret_len,
                           const uint8_t nonce[PF_CO_NONCE],
                           struct pf_co_assign *a, char *err)
{
    struct pf_rbuf rb = { body, len, 0, false };
    uint32_t world, rank;
    pf_err rc;

    memset(a, 0, sizeof(*a));
    pf_get_str(&rb, a->run_id, sizeof(a->run_id));
    world = pf_get_u32(&rb);
    rank = pf_get_u32(&rb);
    /* The frame bounds the table: each entry takes at least ENTRY_MIN. */
    if (rb.bad || world < 1 || rank >= world ||
        world > (len - rb.off) / ENTRY_MIN)
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed group assignment "
                       "(rank %u of %u)", rank, world);
    a->e = calloc(world, sizeof(*a->e));
    if (!a->e)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for a group of %u",
                       world);
    for (uint32_t i = 0; i < world && !rb.bad; i++) {
        pf_get_str(&rb, a->e[i].host, sizeof(a->e[i].host));
        pf_get_str(&rb, a->e[i].pod, sizeof(a->e[i].pod));
        pf_get_str(&rb, a->e[i].node, sizeof(a->e[i].node));
    }
    a->world = (int)world;
    a->rank = (int)rank;
    rc = rb.bad ? pf_fail(err, PF_ERR_PROTOCOL, "malformed group assignment")
                : check_seal(&rb, secret, secret_len, nonce,
                             "group assignment", err);
    if (rc == PF_OK && !a->run_id[0])
        rc = pf_fail(err, PF_ERR_PROTOCOL, "group assignment without a run "
                     "id");
    if (rc != PF_OK)
        pf_co_assign_free(a);
    return rc;
}
