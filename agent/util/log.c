#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "err.h"
#include "sanitize.h"

static enum pf_log_level log_level = PF_LOG_WARN;
static char log_tag[64];

void pf_log_set_level(enum pf_log_level lvl) { log_level = lvl; }
enum pf_log_level pf_log_get_level(void) { return log_level; }

void pf_log_set_tag(const char *tag)
{
    snprintf(log_tag, sizeof(log_tag), "%s", tag ? tag : "");
}

void pf_log_prefix(char *buf, size_t cap, const char *kind)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, cap, "%02d:%02d:%02d.%03ld efa-preflight%s%s%s %s: ",
             tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
             log_tag[0] ? " [" : "", log_tag, log_tag[0] ? "]" : "", kind);
}

void pf_log(enum pf_log_level lvl, const char *fmt, ...)
{
    static const char *names[] = { "error", "warn", "info", "debug" };
    char prefix[160], line[2048];
    va_list ap;

    if (lvl > log_level)
        return;
    pf_log_prefix(prefix, sizeof(prefix), names[lvl]);
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* A peer's hostname or an API message may carry ESC or a newline: a
     * log line stays one line and cannot repaint the terminal. */
    pf_sanitize_inplace(line, sizeof(line));
    /* One fprintf per line so lines from several ranks do not interleave. */
    fprintf(stderr, "%s%s\n", prefix, line);
}

void pf_say(const char *fmt, ...)
{
    char line[2 * PF_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pf_sanitize_inplace(line, sizeof(line));
    fprintf(stderr, "efa-preflight: %s\n", line);
}
