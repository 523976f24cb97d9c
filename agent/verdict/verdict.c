#include "verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../util/sanitize.h"

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
                                enum pf_reason reason, const char *remedy_arg,
                                const char *fmt, ...)
{
    const struct pf_reason_info *ri = pf_reason_info(reason);
    struct pf_check *c;
    va_list ap;

    if (v->n >= PF_MAX_CHECKS)
        return NULL;
    c = &v->checks[v->n++];
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    /* A reason that feeds one condition feeds it wherever it is raised. */
    snprintf(c->condition, sizeof(c->condition), "%s",
             ri->condition[0] ? ri->condition : condition);
    c->reason = reason;
    /* The remedy is the table's, for warn and fail alike. */
    if (st == PF_WARN || st == PF_FAIL)
        pf_reason_remedy(reason, st == PF_WARN, remedy_arg, c->remedy,
                         sizeof(c->remedy));
    c->status = st;
    va_start(ap, fmt);
    vsnprintf(c->message, sizeof(c->message), fmt, ap);
    va_end(ap);
    /* Messages quote peers, hosts and the API server; they go to the
     * table, the conditions, the Event and the report as they are here. */
    pf_sanitize_inplace(c->message, sizeof(c->message));
    pf_sanitize_inplace(c->remedy, sizeof(c->remedy));
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

/* The class a check brings to the run's outcome. A failing check whose
 * reason is of a non-failing class would be a table mistake: it still fails
 * the run (a bad node must never start the job). */
static enum pf_reason_class effect(const struct pf_check *c)
{
    enum pf_reason_class cls = pf_reason_class_of(c->reason);

    if (c->status == PF_FAIL)
        return cls == PF_CLASS_OK || cls == PF_CLASS_WARN ? PF_CLASS_FABRIC
                                                          : cls;
    if (c->status == PF_WARN)
        return cls == PF_CLASS_PEER ? PF_CLASS_PEER : PF_CLASS_WARN;
    return PF_CLASS_OK;
}

/* Which class decides the run when several are present: a usage error
 * first (nothing is written), then a failure proven here, then a group
 * failure nobody was blamed for, then "could not test", then "a peer
 * failed", then warnings. */
static int precedence(enum pf_reason_class c)
{
    switch (c) {
    case PF_CLASS_USAGE: return 6;
    case PF_CLASS_NODE: return 5;
    case PF_CLASS_FABRIC: return 4;
    case PF_CLASS_GROUP: return 3;
    case PF_CLASS_INFRA: return 2;
    case PF_CLASS_PEER: return 1;
    case PF_CLASS_WARN: return 0;
    case PF_CLASS_OK: return -1;
    }
    return -1;
}

void pf_verdict_finish(struct pf_run *run)
{
    pf_verdict_settle(&run->verdict);
}

void pf_verdict_settle(struct pf_verdict *v)
{
    const struct pf_check *decider = NULL;
    enum pf_reason_class best = PF_CLASS_OK;

    v->overall = PF_SKIP;
    for (int i = 0; i < v->n; i++) {
        enum pf_reason_class cls = effect(&v->checks[i]);
        v->overall = worse(v->overall, v->checks[i].status);
        if (precedence(cls) > precedence(best)) {
            best = cls;
            decider = &v->checks[i];
        }
    }
    if (v->overall == PF_SKIP)
        v->overall = PF_PASS;
    v->cls = best;
    v->headline = decider && decider->reason != PF_R_None ? decider->reason
                                                          : PF_R_PreflightPassed;
    if (best == PF_CLASS_OK)
        v->headline = PF_R_PreflightPassed;
    v->exit_code = pf_class_exit_code(best);
}

/* A condition's own ranking: unlike the run's, a fault proven here comes
 * before a usage error, so a False is never hidden by a could-not-judge. */
static int condition_rank(enum pf_reason_class c)
{
    switch (c) {
    case PF_CLASS_NODE: return 7;
    case PF_CLASS_FABRIC: return 6;
    case PF_CLASS_USAGE: return 5;
    case PF_CLASS_GROUP: return 4;
    case PF_CLASS_INFRA: return 3;
    case PF_CLASS_PEER: return 2;
    case PF_CLASS_WARN: return 1;
    case PF_CLASS_OK: return 0;
    }
    return 0;
}

bool pf_verdict_condition_of(const struct pf_verdict *v, const char *condition,
                             struct pf_condition *out)
{
    const struct pf_check *best = NULL;
    enum pf_reason_class best_cls = PF_CLASS_OK;
    int best_rank = -2;

    memset(out, 0, sizeof(*out));
    for (int i = 0; i < v->n; i++) {
        const struct pf_check *c = &v->checks[i];
        enum pf_reason_class cls = effect(c);
        /* a skipped check says only that nothing was judged */
        int rank = c->status == PF_SKIP ? -1 : condition_rank(cls);

        if (strcmp(c->condition, condition) || rank <= best_rank)
            continue;
        best = c;
        best_cls = cls;
        best_rank = rank;
    }
    if (!best)
        return false;
    out->check = best;
    out->cls = best_cls;
    if (best->status == PF_SKIP) {
        out->status = "Unknown";
        out->word = "unknown";
        out->reason = best->reason != PF_R_None ? best->reason
                                                : PF_R_NotTested;
        return true;
    }
    out->status = pf_class_condition_status(best_cls);
    out->word = pf_class_condition_word(best_cls);
    out->reason = best_cls == PF_CLASS_OK ? PF_R_PreflightPassed
                                          : best->reason;
    return true;
}

