/* rendezvous, the HELLO: how a rank encodes it and how rank 0 decides
 * whether its sender is a member. Nothing a HELLO claims is believed
 * before its MAC is checked; what is named in a refusal before that is
 * named as a claim, and always cleaned, since a stranger wrote it. */
#include "rendezvous.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "rdv_impl.h"

#define HEAD 6                /* magic + version */

void rdv_clean(const char *in, char *out, size_t cap)
{
    size_t n = 0;

    for (; *in && n + 1 < cap; in++) {
        unsigned char ch = (unsigned char)*in;
        out[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    out[n] = '\0';
    if (*in && n >= 3)                /* cut: say so */
        memcpy(out + n - 3, "...", 3);
}

pf_err pf_rdv_hello_encode(const struct pf_hello *h, const uint8_t *secret,
                           size_t secret_len,
                           const uint8_t challenge[PF_RDV_NONCE],
                           struct pf_wbuf *w, char *err)
{
    pf_put_u32(w, h->magic);
    pf_put_u16(w, h->version);
    pf_put_u32(w, (uint32_t)h->rank);
    pf_put_u32(w, (uint32_t)h->world);
    pf_put_str(w, h->run_id);
    pf_put_str(w, h->facts.hostname);
    pf_put_str(w, h->facts.instance_type);
    pf_put_u32(w, (uint32_t)h->facts.efa_count);
    pf_put_u32(w, (uint32_t)h->facts.gpu_count);
    pf_put_bytes(w, h->nonce, PF_RDV_NONCE);
    if (pf_seal_put(w, secret, secret_len, challenge, "HELLO", err))
        return PF_ERR_NOMEM;
    if (w->overflow)
        return pf_fail(err, PF_ERR_USAGE, "HELLO does not fit in %zu bytes",
                       w->cap);
    return PF_OK;
}

/* An IP address as 16 bytes (IPv4 as ::ffff:a.b.c.d), so two spellings of
 * one address compare equal. False for a name. */
static bool ip_bytes(const char *s, uint8_t out[16])
{
    struct in_addr a4;
    struct in6_addr a6;

    if (inet_pton(AF_INET, s, &a4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &a4, 4);
        return true;
    }
    if (inet_pton(AF_INET6, s, &a6) == 1) {
        memcpy(out, &a6, 16);
        return true;
    }
    return false;
}

/* The fields after magic and version; true when they fill the body. */
static bool parse_rest(struct pf_rbuf *rb, struct pf_hello *h)
{
    h->rank = (int)pf_get_u32(rb);
    h->world = (int)pf_get_u32(rb);
    pf_get_str(rb, h->run_id, sizeof(h->run_id));
    pf_get_str(rb, h->facts.hostname, sizeof(h->facts.hostname));
    pf_get_str(rb, h->facts.instance_type, sizeof(h->facts.instance_type));
    h->facts.efa_count = (int)pf_get_u32(rb);
    h->facts.gpu_count = (int)pf_get_u32(rb);
    pf_get_bytes(rb, h->nonce, PF_RDV_NONCE);
    h->has_mac = pf_get_u8(rb) != 0;
    if (h->has_mac)
        pf_get_bytes(rb, h->mac, PF_RDV_MAC);
    return !rb->bad && rb->off == rb->len;
}

pf_err pf_rdv_check_hello(const struct pf_rdv_view *v, const uint8_t *body,
                          size_t len, struct pf_hello *h, char *err)
{
    struct pf_rbuf rb = { body, len, 0, false };
    char host[72], run[72], claim[128];
    uint8_t want[16], got[16];
    bool whole;

    memset(h, 0, sizeof(*h));
    h->magic = pf_get_u32(&rb);
    if (rb.bad || h->magic != PF_RDV_MAGIC)
        return pf_fail(err, PF_ERR_PROTOCOL, "not an efa-preflight HELLO "
                       "(magic 0x%08x)", h->magic);
    h->version = pf_get_u16(&rb);
    /* A frame cut inside the version is malformed, not another version. */
    if (rb.bad)
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed HELLO (%zu bytes)",
                       len);
    /* Parsed only to name the claim; nothing is believed yet. */
    whole = parse_rest(&rb, h);
    rdv_clean(h->facts.hostname[0] ? h->facts.hostname : "?", host,
              sizeof(host));
    if (whole && h->version == PF_RDV_VERSION)
        snprintf(claim, sizeof(claim), "a peer claiming rank %d on %s",
                 h->rank, host);
    else
        snprintf(claim, sizeof(claim), "a peer");

    /* Authenticate before believing anything else, version included: the
     * MAC is the last PF_RDV_MAC bytes, over all before them. */
    if (v->secret) {
        if ((whole && h->version == PF_RDV_VERSION && !h->has_mac) ||
            len < HEAD + PF_RDV_MAC)
            return pf_fail(err, PF_ERR_REJECTED, "%s sent no HMAC but rank 0 "
                           "has a secret (not a member, or --secret-file "
                           "missing on that rank)", claim);
        if (!pf_seal_ok(v->secret, v->secret_len, body, len - PF_RDV_MAC,
                        v->challenge, body + len - PF_RDV_MAC))
            return pf_fail(err, PF_ERR_REJECTED, "%s: HELLO HMAC does not "
                           "match (its secret differs from rank 0's)", claim);
    }
    if (h->version != PF_RDV_VERSION)
        return pf_fail(err, PF_ERR_REJECTED, "a peer speaks rendezvous "
                       "protocol version %u, rank 0 speaks %u (mixed agent "
                       "versions)", h->version, PF_RDV_VERSION);
    if (!whole)
        return pf_fail(err, PF_ERR_PROTOCOL, "malformed HELLO (%zu bytes)",
                       len);
    if (!v->secret && h->has_mac)
        return pf_fail(err, PF_ERR_REJECTED, "%s signed its HELLO but rank 0 "
                       "has no secret (--secret-file missing on rank 0?)",
                       claim);
    rdv_clean(h->run_id, run, sizeof(run));
    if (strcmp(h->run_id, v->run_id))
        return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s belongs to run "
                       "'%s', rank 0 to run '%s'", h->rank, host, run,
                       v->run_id);
    if (h->world != v->world)
        return pf_fail(err, PF_ERR_REJECTED, "rank %d on %s expects %d ranks, "
                       "rank 0 expects %d", h->rank, host, h->world, v->world);
    if (h->rank < 1 || h->rank >= v->world)
        return pf_fail(err, PF_ERR_REJECTED, "a peer on %s claims rank %d, "
                       "outside 1..%d", host, h->rank, v->world - 1);
    /* Where discovery knows the rank's address, only that address may
     * speak for it. */
    if (v->bind && v->from && ip_bytes(v->bind[h->rank].host, want) &&
        (!ip_bytes(v->from, got) || memcmp(want, got, sizeof(want))))
        return pf_fail(err, PF_ERR_REJECTED, "a peer at %s on %s claims rank "
                       "%d, which is %s at %s", v->from, host, h->rank,
                       v->bind[h->rank].pod[0] ? v->bind[h->rank].pod
                                               : "the rank",
                       v->bind[h->rank].host);
    if (v->joined[h->rank]) {
        h->taken = true;
        return pf_fail(err, PF_ERR_REJECTED, "rank %d is claimed twice, "
                       "again by %s", h->rank, host);
    }
    return PF_OK;
}
