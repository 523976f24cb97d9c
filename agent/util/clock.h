/* Monotonic time and deadlines. A deadline is an absolute CLOCK_MONOTONIC
 * time in milliseconds; 0 never appears as a real deadline. */
#ifndef PF_CLOCK_H
#define PF_CLOCK_H

#include <stdint.h>

int64_t pf_now_ms(void);          /* CLOCK_MONOTONIC, ms */
double pf_now_s(void);            /* CLOCK_MONOTONIC, seconds, ns resolution */
int64_t pf_deadline_in(int64_t ms);
int64_t pf_ms_left(int64_t deadline_ms); /* <= 0 when passed */
/* Wall-clock time as RFC 3339 UTC ("2026-11-22T01:02:03Z"), offset by secs. */
void pf_rfc3339(char out[32], int64_t offset_s);
/* The reverse, for the API server's spelling too (a fraction of a second
 * ignored): Unix seconds, or -1 when s is not RFC 3339 UTC. */
int64_t pf_rfc3339_seconds(const char *s);
void pf_sleep_ms(int64_t ms);

#endif
