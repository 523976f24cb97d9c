#include "clock.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int64_t pf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double pf_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t pf_deadline_in(int64_t ms) { return pf_now_ms() + ms; }

int64_t pf_ms_left(int64_t deadline_ms) { return deadline_ms - pf_now_ms(); }

void pf_rfc3339(char out[32], int64_t offset_s)
{
    time_t t = time(NULL) + offset_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t pf_rfc3339_seconds(const char *s)
{
    struct tm tm;
    const char *end;

    memset(&tm, 0, sizeof(tm));
    if (!s || !(end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
        return -1;
    if (*end == '.')
        for (end++; *end >= '0' && *end <= '9'; end++)
            ;
    return *end == 'Z' && !end[1] ? (int64_t)timegm(&tm) : -1;
}

void pf_sleep_ms(int64_t ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    if (ms <= 0)
        return;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
