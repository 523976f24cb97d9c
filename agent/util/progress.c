#include "progress.h"

#include <stdarg.h>
#include <string.h>

#include "log.h"

void pf_progress_init(struct pf_progress *p, FILE *out, bool live,
                      int64_t interval_ms)
{
    memset(p, 0, sizeof(*p));
    p->out = interval_ms > 0 ? out : NULL;
    p->live = live;
    p->interval_ms = interval_ms;
}

void pf_progress_begin(struct pf_progress *p, const char *phase,
                       int64_t now_ms)
{
    if (!p)
        return;
    pf_progress_end(p);
    snprintf(p->phase, sizeof(p->phase), "%s", phase);
    p->last_ms = now_ms;
}

bool pf_progress_due(const struct pf_progress *p, int64_t now_ms)
{
    return p && p->out && p->phase[0] && now_ms - p->last_ms >= p->interval_ms;
}

void pf_progress_say(struct pf_progress *p, int64_t now_ms, const char *fmt,
                     ...)
{
    char prefix[160], text[1024];
    va_list ap;

    if (!pf_progress_due(p, now_ms))
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    p->last_ms = now_ms;
    if (p->live) {
        /* Rewrite the line in place; ESC[K clears what a longer previous
         * line left to the right. */
        fprintf(p->out, "\r%s: %s\033[K", p->phase, text);
        p->open = true;
    } else {
        /* One write per line, as the log does. */
        pf_log_prefix(prefix, sizeof(prefix), "progress");
        fprintf(p->out, "%s%s: %s\n", prefix, p->phase, text);
    }
    fflush(p->out);
}

void pf_progress_end(struct pf_progress *p)
{
    if (!p)
        return;
    if (p->open && p->out) {
        fputc('\n', p->out);
        fflush(p->out);
    }
    p->open = false;
    p->phase[0] = '\0';
}
