/* The taint budget's decision (publish/budget.h): holders are the fresh
 * keys of the ConfigMap plus every node carrying our mark; a slot is taken
 * only below the cap; stale keys are neither counted nor written back. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "publish/budget.h"

#define NOW ((time_t)1795309323)     /* 2026-11-22T01:02:03Z */

static cJSON *data(const char *json)
{
    cJSON *d = cJSON_Parse(json);
    cr_assert_not_null(d, "%s", json);
    return d;
}

Test(budget, empty_budget_gives_a_slot)
{
    cJSON *out = NULL;
    int others = -1;

    cr_assert_eq(pf_budget_decide(NULL, NULL, 0, "node-1", 2, NOW, &others,
                                  &out), PF_BUDGET_TAKE);
    cr_assert_eq(others, 0);
    cr_assert_str_eq(cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(out, "node-1")),
        "2026-11-22T01:02:03Z");
    cJSON_Delete(out);
}

Test(budget, full_when_others_hold_every_slot)
{
    cJSON *d = data("{\"node-2\":\"2026-11-22T01:02:00Z\","
                    "\"node-3\":\"2026-11-22T01:01:00Z\"}");
    cJSON *out = NULL;
    int others = 0;

    cr_assert_eq(pf_budget_decide(d, NULL, 0, "node-1", 2, NOW, &others,
                                  &out), PF_BUDGET_FULL);
    cr_assert_eq(others, 2);
    cr_assert_null(out);
    cr_assert_eq(pf_budget_decide(d, NULL, 0, "node-1", 3, NOW, &others,
                                  &out), PF_BUDGET_TAKE);
    cr_assert_eq(cJSON_GetArraySize(out), 3);
    cJSON_Delete(out);
    cJSON_Delete(d);
}

Test(budget, a_holder_keeps_its_slot)
{
    cJSON *d = data("{\"node-1\":\"2026-11-22T01:00:00Z\","
                    "\"node-2\":\"2026-11-22T01:00:00Z\"}");
    char *marked[] = { "node-1" };
    cJSON *out = NULL;
    int others = 0;

    /* its key, even at a full budget */
    cr_assert_eq(pf_budget_decide(d, NULL, 0, "node-1", 1, NOW, &others,
                                  &out), PF_BUDGET_HOLDS);
    cr_assert_eq(others, 1);
    cJSON_Delete(d);
    /* or its mark (a re-run of a tainted node), with no key */
    cr_assert_eq(pf_budget_decide(NULL, marked, 1, "node-1", 0, NOW, &others,
                                  &out), PF_BUDGET_HOLDS);
    cr_assert_null(out);
}

/* A mark without a key (by hand, by an older agent) counts; a key and a
 * mark on one node count once. */
Test(budget, marks_count_with_or_without_a_key)
{
    cJSON *d = data("{\"node-2\":\"2026-11-22T01:00:00Z\"}");
    char *marked[] = { "node-2", "node-5" };
    cJSON *out = NULL;
    int others = 0;

    cr_assert_eq(pf_budget_decide(d, marked, 2, "node-1", 2, NOW, &others,
                                  &out), PF_BUDGET_FULL);
    cr_assert_eq(others, 2);
    cr_assert_eq(pf_budget_decide(d, marked, 2, "node-1", 3, NOW, &others,
                                  &out), PF_BUDGET_TAKE);
    cJSON_Delete(out);
    cJSON_Delete(d);
}

/* A key whose node carries no mark and that is older than
 * PF_BUDGET_STALE_S (or unreadable) is neither counted nor kept; a marked
 * node's old key stays. */
Test(budget, stale_keys_are_pruned)
{
    char json[256];
    time_t old = NOW - PF_BUDGET_STALE_S - 1;
    struct tm tm;
    char ts[32];
    char *marked[] = { "node-4" };
    cJSON *d, *out = NULL;
    int others = 0;

    gmtime_r(&old, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(json, sizeof(json), "{\"node-2\":\"%s\",\"node-3\":\"junk\","
             "\"node-4\":\"%s\",\"node-5\":\"2026-11-22T01:02:00Z\"}", ts, ts);
    d = data(json);
    cr_assert_eq(pf_budget_decide(d, marked, 1, "node-1", 3, NOW, &others,
                                  &out), PF_BUDGET_TAKE);
    cr_assert_eq(others, 2);                 /* node-4 (marked), node-5 */
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(out, "node-2"));
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(out, "node-3"));
    cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(out, "node-4"));
    cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(out, "node-5"));
    cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(out, "node-1"));
    cJSON_Delete(out);
    cJSON_Delete(d);
}

Test(budget, target_is_namespace_slash_name)
{
    struct pf_budget b;
    char err[PF_ERRLEN];

    cr_assert_eq(pf_budget_target(&b, "efa-preflight/efa-preflight-taint-budget",
                                  err), PF_OK);
    cr_assert_str_eq(b.ns, "efa-preflight");
    cr_assert_str_eq(b.name, "efa-preflight-taint-budget");
    cr_assert_eq(pf_budget_target(&b, "no-slash", err), PF_ERR_USAGE);
    cr_assert_eq(pf_budget_target(&b, "Bad/name", err), PF_ERR_USAGE);
}
