/* util/progress: at most one line per interval, none for a short phase,
 * plain prefixed lines off a terminal, one live '\r' line on one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/progress.h"

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* What a progress writer prints, caught in memory. */
struct capture {
    char *buf;
    size_t len;
    FILE *out;
};

static void capture_open(struct capture *c)
{
    c->buf = NULL;
    c->len = 0;
    c->out = open_memstream(&c->buf, &c->len);
}

/* Close the stream: c->buf and c->len hold what was printed. */
static void capture_close(struct capture *c)
{
    fclose(c->out);
}

/* A writer into c (tty: as on a terminal) at most every interval_ms, its
 * phase begun at t0. */
static void start(struct pf_progress *p, struct capture *c, bool tty,
                  int64_t interval_ms, const char *phase, int64_t t0)
{
    capture_open(c);
    pf_progress_init(p, c->out, tty, interval_ms);
    pf_progress_begin(p, phase, t0);
}

/* End the phase and close the stream. */
static void finish(struct pf_progress *p, struct capture *c)
{
    pf_progress_end(p);
    capture_close(c);
}

Test(progress, a_phase_shorter_than_the_interval_prints_nothing)
{
    struct pf_progress p;
    struct capture c;

    start(&p, &c, false, 5000, "waiting for peers", 1000);
    cr_assert_not(pf_progress_due(&p, 5999));
    pf_progress_say(&p, 5999, "not yet");
    finish(&p, &c);
    cr_assert_eq(c.len, 0, "%s", c.buf);
    free(c.buf);
}

Test(progress, at_most_one_line_per_interval)
{
    struct pf_progress p;
    struct capture c;

    start(&p, &c, false, 5000, "all_reduce sweep", 0);
    /* 20 s of a loop that asks every 100 ms. */
    for (int64_t t = 0; t <= 20000; t += 100)
        if (pf_progress_due(&p, t))
            pf_progress_say(&p, t, "at %lld ms", (long long)t);
    finish(&p, &c);
    cr_assert_eq(count(c.buf, "\n"), 4, "%s", c.buf);
    cr_assert_eq(count(c.buf, " progress: all_reduce sweep: at "), 4, "%s", c.buf);
    cr_assert_not_null(strstr(c.buf, "at 5000 ms\n"), "%s", c.buf);
    cr_assert_not_null(strstr(c.buf, "at 20000 ms\n"), "%s", c.buf);
    cr_assert_null(strchr(c.buf, '\r'), "no terminal tricks off a terminal");
    cr_assert_null(strchr(c.buf, '\033'), "no terminal tricks off a terminal");
    free(c.buf);
}

Test(progress, a_terminal_gets_one_live_line_ended_with_the_phase)
{
    struct pf_progress p;
    struct capture c;

    start(&p, &c, true, 1000, "NCCL init", 0);
    pf_progress_say(&p, 1000, "one");
    pf_progress_say(&p, 2000, "two");
    pf_progress_end(&p);
    finish(&p, &c);
    cr_assert_str_eq(c.buf, "\rNCCL init: one\033[K\rNCCL init: two\033[K\n");
    free(c.buf);
}

Test(progress, off_when_no_stream_no_interval_or_no_phase)
{
    struct pf_progress p;
    struct capture c;

    capture_open(&c);
    cr_assert_not(pf_progress_due(NULL, 1 << 30));
    pf_progress_init(&p, NULL, false, 1000);
    pf_progress_begin(&p, "x", 0);
    cr_assert_not(pf_progress_due(&p, 10000));
    pf_progress_init(&p, c.out, false, 0);
    pf_progress_begin(&p, "x", 0);
    cr_assert_not(pf_progress_due(&p, 10000));
    pf_progress_init(&p, c.out, false, 1000);
    cr_assert_not(pf_progress_due(&p, 10000), "no phase begun");
    pf_progress_begin(&p, "x", 0);
    pf_progress_end(&p);
    cr_assert_not(pf_progress_due(&p, 10000), "phase over");
    capture_close(&c);
    free(c.buf);
}
