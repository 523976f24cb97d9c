/* The one table of reasons (agent/reasons.c) and how the verdict turns a
 * reason's class into the exit code, the status label and the taint. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "pf.h"
#include "reasons.h"
#include "verdict/verdict.h"

Test(reasons, every_row_has_a_unique_camelcase_word_that_maps_back)
{
    for (int i = 1; i < PF_R_COUNT; i++) {
        const struct pf_reason_info *r = pf_reason_info((enum pf_reason)i);
        cr_assert_not_null(r->name, "row %d has no word", i);
        cr_assert(isupper((unsigned char)r->name[0]), "row %d: %s", i, r->name);
        for (const char *p = r->name; *p; p++)
            cr_assert(isalnum((unsigned char)*p), "%s is not one word", r->name);
        cr_assert_eq(pf_reason_by_name(r->name), (enum pf_reason)i,
                     "%s does not map back to its row", r->name);
        for (int j = 1; j < i; j++)
            cr_assert_str_neq(r->name, pf_reason_name((enum pf_reason)j));
    }
    cr_assert_eq(pf_reason_by_name("NoSuchReason"), PF_R_None);
    cr_assert_eq(pf_reason_by_name(""), PF_R_None);
    cr_assert_eq(pf_reason_by_name(NULL), PF_R_None);
    cr_assert_str_eq(pf_reason_name((enum pf_reason)9999), "");
}

Test(reasons, every_failing_class_tells_what_to_do)
{
    for (int i = 1; i < PF_R_COUNT; i++) {
        const struct pf_reason_info *r = pf_reason_info((enum pf_reason)i);
        if (r->cls != PF_CLASS_OK)
            cr_assert(r->remedy[0], "%s (%s) has no remedy", r->name,
                      pf_class_name(r->cls));
    }
}

Test(reasons, class_decides_exit_code_label_and_taint)
{
    cr_assert_eq(pf_class_exit_code(PF_CLASS_OK), 0);
    cr_assert_eq(pf_class_exit_code(PF_CLASS_WARN), 0);
    cr_assert_eq(pf_class_exit_code(PF_CLASS_NODE), 1);
    cr_assert_eq(pf_class_exit_code(PF_CLASS_FABRIC), 1);
    cr_assert_eq(pf_class_exit_code(PF_CLASS_USAGE), 2);
    cr_assert_eq(pf_class_exit_code(PF_CLASS_INFRA), 3);
    cr_assert_eq(pf_class_exit_code(PF_CLASS_PEER), 4);
    cr_assert_str_eq(pf_class_status_label(PF_CLASS_INFRA), "error");
    cr_assert_str_eq(pf_class_status_label(PF_CLASS_PEER), "warn");
    cr_assert_str_eq(pf_class_status_label(PF_CLASS_NODE), "fail");
    cr_assert_null(pf_class_status_label(PF_CLASS_USAGE));
    for (int c = PF_CLASS_OK; c <= PF_CLASS_USAGE; c++)
        cr_assert_eq(pf_class_may_taint((enum pf_reason_class)c),
                     c == PF_CLASS_NODE || c == PF_CLASS_FABRIC,
                     "class %s", pf_class_name((enum pf_reason_class)c));
}

/* The mapping, defined once: one status word per class, and the status
 * of a condition the class decides. */
Test(reasons, one_status_word_and_condition_per_class)
{
    static const struct { enum pf_reason_class c; const char *word, *cond, *cword; } m[] = {
        { PF_CLASS_OK, "pass", "True", "pass" },
        { PF_CLASS_WARN, "warn", "True", "warn" },
        { PF_CLASS_NODE, "fail", "False", "fail" },
        { PF_CLASS_FABRIC, "fail", "False", "fail" },
        { PF_CLASS_GROUP, "error", "Unknown", "unknown" },
        { PF_CLASS_PEER, "warn", "Unknown", "unknown" },
        { PF_CLASS_INFRA, "error", "Unknown", "unknown" },
        { PF_CLASS_USAGE, "usage", "Unknown", "unknown" },
    };
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        const char *label = pf_class_status_label(m[i].c);
        cr_assert_str_eq(pf_class_status_word(m[i].c), m[i].word);
        cr_assert_str_eq(pf_class_condition_status(m[i].c), m[i].cond);
        cr_assert_str_eq(pf_class_condition_word(m[i].c), m[i].cword);
        /* the label is the word, where one is written */
        if (m[i].c == PF_CLASS_USAGE)
            cr_assert_null(label);
        else
            cr_assert_str_eq(label, m[i].word);
        /* only what may taint may set a condition False */
        cr_assert_eq(!strcmp(m[i].cond, "False"), pf_class_may_taint(m[i].c));
    }
}

/* The misclassifications this table fixed. */
Test(reasons, deployment_and_api_failures_never_fail_the_node)
{
    static const enum pf_reason never_fail[] = {
        PF_R_RendezvousPortInUse, PF_R_PublishRefused, PF_R_Forbidden,
        PF_R_Unauthorized, PF_R_APIUnavailable, PF_R_PublishFailed,
        PF_R_PeerTimeout, PF_R_PeerLost, PF_R_PeerRejected,
        PF_R_PeerProtocolError, PF_R_SlowPeer,
    };
    for (size_t i = 0; i < sizeof(never_fail) / sizeof(never_fail[0]); i++) {
        enum pf_reason_class c = pf_reason_class_of(never_fail[i]);
        const char *label = pf_class_status_label(c);
        cr_assert_not(pf_class_may_taint(c), "%s", pf_reason_name(never_fail[i]));
        cr_assert(!label || strcmp(label, "fail"), "%s",
                  pf_reason_name(never_fail[i]));
        cr_assert_neq(pf_class_exit_code(c), 1, "%s",
                      pf_reason_name(never_fail[i]));
        /* nothing was proven on this node: never a False condition */
        cr_assert_str_eq(pf_class_condition_status(c), "Unknown", "%s",
                         pf_reason_name(never_fail[i]));
    }
    cr_assert_eq(pf_reason_class_of(PF_R_RendezvousPortInUse), PF_CLASS_USAGE);
}

static struct pf_run *run_with(const enum pf_reason *reasons, int n)
{
    struct pf_run *run = calloc(1, sizeof(*run));
    for (int i = 0; i < n; i++) {
        enum pf_reason_class c = pf_reason_class_of(reasons[i]);
        pf_verdict_add(&run->verdict, "check", "EFAFabricReady",
                       c == PF_CLASS_PEER || c == PF_CLASS_WARN ? PF_WARN
                                                                : PF_FAIL,
                       reasons[i], "", "case %d", i);
    }
    pf_verdict_finish(run);
    return run;
}

/* The run of the n reasons r leads with want and exits exit_code. */
static struct pf_run *led_by(enum pf_reason *r, int n, enum pf_reason want,
                             int exit_code)
{
    struct pf_run *run = run_with(r, n);

    cr_assert_eq(run->verdict.headline, want, "%s, want %s",
                 pf_reason_name(run->verdict.headline), pf_reason_name(want));
    cr_assert_eq(run->verdict.exit_code, exit_code);
    return run;
}

Test(reasons, a_failure_proven_here_outranks_could_not_test)
{
    enum pf_reason r[] = { PF_R_PeerTimeout, PF_R_MemlockTooLow, PF_R_SlowPeer };

    free(led_by(r, 3, PF_R_MemlockTooLow, 1));
}

Test(reasons, could_not_test_outranks_a_peer_at_fault)
{
    enum pf_reason r[] = { PF_R_SlowPeer, PF_R_PublishFailed };

    free(led_by(r, 2, PF_R_PublishFailed, 3));
}

Test(reasons, usage_outranks_everything_and_writes_nothing)
{
    enum pf_reason r[] = { PF_R_DataCorruption, PF_R_RendezvousPortInUse };
    struct pf_run *run = led_by(r, 2, PF_R_RendezvousPortInUse, 2);

    cr_assert_null(pf_class_status_label(run->verdict.cls));
    free(run);
}

Test(reasons, a_pass_says_preflight_passed)
{
    struct pf_run *run = led_by(NULL, 0, PF_R_PreflightPassed, 0);

    cr_assert_eq(run->verdict.overall, PF_PASS);
    free(run);
}

Test(reasons, a_check_takes_the_condition_and_remedy_of_its_reason)
{
    struct pf_verdict v = { 0 };
    struct pf_check *c = pf_verdict_add(&v, "memlock", "EFAFabricReady",
                                        PF_FAIL, PF_R_MemlockTooLow, "", "x");
    cr_assert_str_eq(c->condition, "EFADevicesReady");
    cr_assert_str_eq(c->remedy, pf_reason_info(PF_R_MemlockTooLow)->remedy);
    /* A check's value fills a placeholder; it never replaces the text. */
    c = pf_verdict_add(&v, "x", "EFAFabricReady", PF_FAIL, PF_R_MemlockTooLow,
                       "a sharper remedy", "x");
    cr_assert_str_eq(c->remedy, pf_reason_info(PF_R_MemlockTooLow)->remedy);
    /* a pass or a skip has nothing to do */
    c = pf_verdict_add(&v, "x", "", PF_PASS, PF_R_MemlockTooLow, "", "x");
    cr_assert_str_eq(c->remedy, "");
}

Test(reasons, a_warning_takes_the_warning_remedy_where_the_row_has_one)
{
    struct pf_verdict v = { 0 };
    struct pf_check *f = pf_verdict_add(&v, "efa_devices", "", PF_FAIL,
                                        PF_R_EFADeviceCountMismatch, "", "x");
    struct pf_check *w = pf_verdict_add(&v, "efa_devices", "", PF_WARN,
                                        PF_R_EFADeviceCountMismatch, "", "x");
    cr_assert(strstr(f->remedy, "check that every EFA interface"), "%s",
              f->remedy);
    cr_assert_str_eq(w->remedy, "fix the catalog entry (--catalog FILE) or "
                                "set --expect-efa");
    /* no warning text: the one remedy for both */
    f = pf_verdict_add(&v, "gpu_count", "", PF_FAIL, PF_R_GPUCountMismatch,
                       "", "x");
    w = pf_verdict_add(&v, "gpu_count", "", PF_WARN, PF_R_GPUCountMismatch,
                       "", "x");
    cr_assert_str_eq(f->remedy, w->remedy);
}

/* The placeholder takes the value as text: not a format, not read again
 * for placeholders, cut at the buffer. */
Test(reasons, a_placeholder_is_filled_with_the_value_as_plain_text)
{
    char out[256];

    pf_reason_remedy(PF_R_SlowPeer, true, "StragglerNode", out, sizeof(out));
    cr_assert_str_eq(out, "nothing to fix here: the slow node's own report "
                          "fails with StragglerNode; re-run once it is "
                          "drained or replaced");
    pf_reason_remedy(PF_R_SlowPeer, true, "%s%n{culprit_reason}", out,
                     sizeof(out));
    cr_assert(strstr(out, "fails with %s%n{culprit_reason}; re-run"), "%s",
              out);
    pf_reason_remedy(PF_R_SlowPeer, true, NULL, out, sizeof(out));
    cr_assert(strstr(out, "fails with ; re-run"), "%s", out);
    pf_reason_remedy(PF_R_SlowPeer, true, "StragglerNode", out, 12);
    cr_assert_str_eq(out, "nothing to ");
    pf_reason_remedy(PF_R_PreflightPassed, false, "x", out, sizeof(out));
    cr_assert_str_eq(out, "");
    pf_reason_remedy((enum pf_reason)9999, false, "x", out, sizeof(out));
    cr_assert_str_eq(out, "");
}

/* Every remedy, filled with the longest reason word, fits a check's remedy
 * and leaves no placeholder behind; only SlowPeer has one. */
Test(reasons, every_remedy_fits_a_check_with_its_placeholder_filled)
{
    struct pf_check c;
    char out[1024];

    for (int i = 1; i < PF_R_COUNT; i++) {
        const struct pf_reason_info *r = pf_reason_info((enum pf_reason)i);
        for (int warn = 0; warn < 2; warn++) {
            pf_reason_remedy((enum pf_reason)i, warn,
                             "DataCorruptionNotLocalised", out, sizeof(out));
            cr_assert_lt(strlen(out), sizeof(c.remedy), "%s: %zu bytes",
                         r->name, strlen(out));
            cr_assert_null(strchr(out, '{'), "%s: %s", r->name, out);
        }
        cr_assert_eq(strchr(r->remedy, '{') != NULL, i == PF_R_SlowPeer,
                     "%s: %s", r->name, r->remedy);
        cr_assert(!pf_reason_remedy_warn(i) || r->remedy[0], "%s", r->name);
    }
}
