#include "verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *pf_status_name(enum pf_status s)
{
    switch (s) {
    case PF_PASS: return "pass";
    case PF_WARN: return "warn";
    case PF_FAIL: return "fail";
    case PF_SKIP: return "skip";
    }
    return "unknown";
}

struct pf_check *pf_verdict_add(struct pf_verdict *v, const char *name,
                                const char *condition, enum pf_status st,
                                const char *reason, const char *remedy,
                                const char *fmt, ...)
{
    struct pf_check *c;
    va_list ap;

    if (v->n >= PF_MAX_CHECKS)
        return NULL;
    c = &v->checks[v->n++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->condition, sizeof(c->condition), "%s", condition);
    snprintf(c->reason, sizeof(c->reason), "%s", reason ? reason : "");
    snprintf(c->remedy, sizeof(c->remedy), "%s", remedy ? remedy : "");
    c->status = st;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof(c->message), fmt, ap);
    va_end(ap);
    return c;
}

/* Worst of pass < warn < fail; skip only when nothing else was seen. */
static enum pf_status worse(enum pf_status a, enum pf_status b)
{
    if (a == PF_SKIP)
        return b;
    if (b == PF_SKIP)
        return a;
    return a > b ? a : b;
}

enum pf_status pf_verdict_condition(const struct pf_verdict *v,
                                    const char *condition)
{
    enum pf_status st = PF_SKIP;
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->checks[i].condition, condition))
            st = worse(st, v->checks[i].status);
    return st;
}

/* Infrastructure failures (API down, peers never came) are exit 3 so that a
 * job controller can tell "the fabric is bad" from "we could not test". */
static bool is_infra_reason(const char *reason)
{
    static const char *infra[] = { "PeerTimeout", "APIUnavailable",
                                   "Forbidden", NULL };
    for (int i = 0; infra[i]; i++)
        if (!strcmp(reason, infra[i]))
            return true;
    return false;
}

void pf_verdict_finish(struct pf_run *run)
{
    struct pf_verdict *v = &run->verdict;
    bool only_infra = true;

    v->overall = PF_SKIP;
    for (int i = 0; i < v->n; i++) {
        v->overall = worse(v->overall, v->checks[i].status);
        if (v->checks[i].status == PF_FAIL &&
            !is_infra_reason(v->checks[i].reason))
            only_infra = false;
    }
    if (v->overall == PF_SKIP)
        v->overall = PF_PASS;
    if (v->overall != PF_FAIL)
        v->exit_code = PF_EXIT_PASS;
    else
        v->exit_code = only_infra ? PF_EXIT_INFRA : PF_EXIT_FAIL;
}
