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

Test(progress, a_phase_shorter_than_the_interval_prints_nothing)
{
    struct pf_progress p;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    pf_progress_init(&p, out, false, 5000);
    pf_progress_begin(&p, "waiting for peers", 1000);
    cr_assert_not(pf_progress_due(&p, 5999));
    pf_progress_say(&p, 5999, "not yet");
    pf_progress_end(&p);
    fclose(out);
    cr_assert_eq(len, 0, "%s", buf);
    free(buf);
}

Test(progress, at_most_one_line_per_interval)
{
    struct pf_progress p;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    pf_progress_init(&p, out, false, 5000);
    pf_progress_begin(&p, "all_reduce sweep", 0);
    /* 20 s of a loop that asks every 100 ms. */
    for (int64_t t = 0; t <= 20000; t += 100)
        if (pf_progress_due(&p, t))
            pf_progress_say(&p, t, "at %lld ms", (long long)t);
    pf_progress_end(&p);
    fclose(out);
    cr_assert_eq(count(buf, "\n"), 4, "%s", buf);
    cr_assert_eq(count(buf, " progress: all_reduce sweep: at "), 4, "%s", buf);
    cr_assert_not_null(strstr(buf, "at 5000 ms\n"), "%s", buf);
    cr_assert_not_null(strstr(buf, "at 20000 ms\n"), "%s", buf);
    cr_assert_null(strchr(buf, '\r'), "no terminal tricks off a terminal");
    cr_assert_null(strchr(buf, '\033'), "no terminal tricks off a terminal");
    free(buf);
}

Test(progress, a_terminal_gets_one_live_line_ended_with_the_phase)
{
    struct pf_progress p;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    pf_progress_init(&p, out, true, 1000);
    pf_progress_begin(&p, "NCCL init", 0);
    pf_progress_say(&p, 1000, "one");
    pf_progress_say(&p, 2000, "two");
    pf_progress_end(&p);
    pf_progress_end(&p);
    fclose(out);
    cr_assert_str_eq(buf, "\rNCCL init: one\033[K\rNCCL init: two\033[K\n");
    free(buf);
}

Test(progress, off_when_no_stream_no_interval_or_no_phase)
{
    struct pf_progress p;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    cr_assert_not(pf_progress_due(NULL, 1 << 30));
    pf_progress_init(&p, NULL, false, 1000);
    pf_progress_begin(&p, "x", 0);
    cr_assert_not(pf_progress_due(&p, 10000));
    pf_progress_init(&p, out, false, 0);
    pf_progress_begin(&p, "x", 0);
    cr_assert_not(pf_progress_due(&p, 10000));
    pf_progress_init(&p, out, false, 1000);
    cr_assert_not(pf_progress_due(&p, 10000), "no phase begun");
    pf_progress_begin(&p, "x", 0);
    pf_progress_end(&p);
    cr_assert_not(pf_progress_due(&p, 10000), "phase over");
    fclose(out);
    free(buf);
}
