/* Capped exponential backoff with jitter, and the server's Retry-After. */
#include "backoff.h"
#include "client.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int64_t pf_kube_retry_after_ms(const char *value)
{
    char *end;
    long v;

    if (!value)
        return -1;
    while (*value == ' ' || *value == '\t')
        value++;
    if (!isdigit((unsigned char)*value))
        return -1;
    errno = 0;
    v = strtol(value, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end || v < 0)
        return -1;
    /* A longer wait than an hour is still a request to wait, not to
     * retry at the backoff pace: clamp it (the caller caps it again). */
    if (errno == ERANGE || v > 3600)
        v = 3600;
    return (int64_t)v * 1000;
}

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

int64_t pf_k8s_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms,
                           uint64_t *rng)
{
    int64_t d = base_ms;

    for (int i = 1; i < attempt && d < cap_ms; i++)
        d *= 2;
    if (d > cap_ms)
        d = cap_ms;
    if (d < 2)
        return d;
    /* Jitter into [d/2, d] so agents started together do not retry in
     * lockstep against a busy API server. */
    return d / 2 + (int64_t)(xorshift(rng) % (uint64_t)(d / 2 + 1));
}
