/* The pace of a retried request: the client's own retries (client.c) and
 * a caller that lost a write race on a shared object (a ConfigMap) and
 * tries again. Pure. */
#ifndef PF_K8S_BACKOFF_H
#define PF_K8S_BACKOFF_H

#include <stdint.h>

/* Delay before retry number attempt (1-based): base * 2^(attempt-1),
 * capped, then jittered into [d/2, d]. rng is xorshift state. */
int64_t pf_k8s_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms,
                          uint64_t *rng);

#endif
