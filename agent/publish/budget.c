/* The taint budget (budget.h): a ConfigMap updated with resourceVersion
 * preconditions, so that nodes failing in the same second cannot all pass
 * a count. */
#include "budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../k8s/backoff.h"
#include "../k8s/configmap.h"
#include "../k8s/nodes.h"
#include "../k8s/object.h"
#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"
#include "node.h"

#define LOOP_MAX 100000
#define BACKOFF_BASE_MS 20
#define BACKOFF_CAP_MS 1000

pf_err pf_budget_target(struct pf_budget *b, const char *spec, char *err)
{
    const char *slash = strchr(spec, '/');

    if (!slash || (size_t)(slash - spec) >= sizeof(b->ns) ||
        strlen(slash + 1) >= sizeof(b->name))
        return pf_fail(err, PF_ERR_USAGE, "taint_budget '%s' is not "
                       "namespace/name", spec);
    snprintf(b->ns, sizeof(b->ns), "%.*s", (int)(slash - spec), spec);
    snprintf(b->name, sizeof(b->name), "%s", slash + 1);
    if (!pf_k8s_name_ok(b->ns) || !pf_k8s_name_ok(b->name))
        return pf_fail(err, PF_ERR_USAGE, "taint_budget '%s' is not "
                       "namespace/name", spec);
    return PF_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_marked(char *const *marked, int n, const char *name)
{
    return n > 0 && bsearch(&name, marked, (size_t)n, sizeof(*marked),
                            by_name) != NULL;
}

/* A key counts while its node carries the mark or it is recent; an
 * unreadable time counts as old. */
static bool fresh(const cJSON *entry, bool marked, time_t now)
{
    const char *v = cJSON_GetStringValue(entry);
    struct tm tm = { 0 };
    const char *end;

    if (marked)
        return true;
    if (!v || !(end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm)))
        return false;
    return now - timegm(&tm) <= PF_BUDGET_STALE_S;
}

enum pf_budget_decision pf_budget_decide(const cJSON *data,
                                         char *const *marked, int nmarked,
                                         const char *self, int cap,
                                         time_t now, int *others,
                                         cJSON **out)
{
    const cJSON *e;
    bool holds = is_marked(marked, nmarked, self);
    int n = 0;
    char ts[32];
    struct tm tm;

    *out = NULL;
    /* Every marked node holds a slot, with a key or without. */
    for (int i = 0; i < nmarked; i++)
        if (strcmp(marked[i], self))
            n++;
    cJSON_ArrayForEach(e, data) {
        bool m = is_marked(marked, nmarked, e->string);
        if (!strcmp(e->string, self)) {
            holds = holds || fresh(e, m, now);
            continue;
        }
        if (!m && fresh(e, false, now))
            n++;
    }
    *others = n;
    if (holds)
        return PF_BUDGET_HOLDS;
    if (n + 1 > cap)
        return PF_BUDGET_FULL;
    *out = cJSON_CreateObject();
    if (!*out)
        return PF_BUDGET_FULL;
    cJSON_ArrayForEach(e, data) {
        bool m = is_marked(marked, nmarked, e->string);
        if (strcmp(e->string, self) && cJSON_IsString(e) && fresh(e, m, now))
            cJSON_AddStringToObject(*out, e->string, e->valuestring);
    }
    gmtime_r(&now, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(*out, self, ts);
    return PF_BUDGET_TAKE;
}

struct marked {
    struct pf_budget *b;
    char **m;
    int n, cap;
};

static pf_err count_node(void *ctx, const cJSON *node, char *err)
{
    struct marked *x = ctx;
    const char *name = pf_json_str(node, "metadata.name");

    x->b->total++;
    if (!name || !pf_node_marked(node, x->b->prefix))
        return PF_OK;
    if (x->n == x->cap) {
        int ncap = x->cap ? x->cap * 2 : 16;
        char **grown = realloc(x->m, (size_t)ncap * sizeof(*x->m));
        if (!grown)
            return pf_fail(err, PF_ERR_NOMEM, "out of memory");
        x->m = grown;
        x->cap = ncap;
    }
    if (!(x->m[x->n] = strdup(name)))
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    x->n++;
    return PF_OK;
}

/* Every Node (paged, limit 500): how many, and the sorted names of those
 * carrying our mark. */
static pf_err list_marked(struct pf_budget *b, char ***marked, int *nmarked,
                          char *err)
{
    struct marked x = { .b = b };
    pf_err rc;

    b->total = 0;
    rc = pf_k8s_nodes_each(b->k, count_node, &x, err);
    if (rc != PF_OK && rc != PF_ERR_NOMEM)
        pf_err_prefix(err, "counting the marked Nodes (needs list on "
                      "nodes)");
    if (rc == PF_OK && x.n > 1)
        qsort(x.m, (size_t)x.n, sizeof(*x.m), by_name);
    *marked = x.m;
    *nmarked = x.n;
    return rc;
}

static void free_names(char **m, int n)
{
    for (int i = 0; i < n; i++)
        free(m[i]);
    free(m);
}

static pf_err rbac_hint(pf_err rc, const struct pf_budget *b,
                        const char *verb, char *err)
{
    if (rc == PF_ERR_FORBIDDEN)
        pf_err_prefix(err, "the taint budget needs %s on configmaps in "
                      "namespace %s", verb, b->ns);
    else
        pf_err_prefix(err, "taint budget %s/%s", b->ns, b->name);
    return rc;
}

/* GET the ConfigMap: *cm NULL when there is none. */
static pf_err read_budget(struct pf_budget *b, cJSON **cm, char *err)
{
    pf_err rc = pf_k8s_configmap_read(b->k, b->ns, b->name, cm, err);

    return rc == PF_OK ? PF_OK : rbac_hint(rc, b, "get", err);
}

/* Write data back: PUT with the resourceVersion read (rv), or POST when
 * there was no ConfigMap (rv NULL). *won false: someone wrote first (409;
 * a 404 on PUT: it was deleted in between). */
static pf_err write_budget(struct pf_budget *b, const char *rv, cJSON *data,
                           bool *won, char *err)
{
    pf_err rc = pf_k8s_configmap_write(b->k, b->ns, b->name, rv, data, NULL,
                                        won, err);

    return rc == PF_OK ? PF_OK : rbac_hint(rc, b, rv ? "update" : "create",
                                           err);
}

/* Wait before the next try, jittered; false when the deadline comes
 * first. */
static bool back_off(const struct pf_budget *b, int attempt, uint64_t *rng)
{
    int64_t d = pf_k8s_backoff_ms(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS,
                                   rng);

    if (b->deadline && pf_ms_left(b->deadline) <= d)
        return false;
    pf_sleep_ms(d);
    return true;
}

static uint64_t seed(const char *node)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)pf_now_ms() ^
                 ((uint64_t)getpid() << 32);

    for (const char *s = node; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

pf_err pf_budget_take(struct pf_budget *b, bool *allowed, char *err)
{
    char **marked = NULL;
    int nmarked = 0;
    uint64_t rng = seed(b->node);
    pf_err rc;

    *allowed = false;
    b->others = 0;
    rc = list_marked(b, &marked, &nmarked, err);
    if (rc != PF_OK) {
        free_names(marked, nmarked);
        return rc;
    }
    b->cap = pf_blast_cap(b->max_tainted, b->total);
    for (int attempt = 1; attempt <= LOOP_MAX; attempt++) {
        cJSON *cm = NULL, *data = NULL;
        const char *rv;
        enum pf_budget_decision d;
        bool won = false;

        rc = read_budget(b, &cm, err);
        if (rc != PF_OK)
            break;
        rv = cm ? pf_json_str(cm, "metadata.resourceVersion") : NULL;
        d = pf_budget_decide(pf_json_at(cm, "data"), marked, nmarked, b->node,
                             b->cap, time(NULL), &b->others, &data);
        if (d != PF_BUDGET_TAKE) {
            cJSON_Delete(cm);
            *allowed = d == PF_BUDGET_HOLDS;
            break;
        }
        if (cm && !rv) {
            cJSON_Delete(cm);
            cJSON_Delete(data);
            rc = pf_fail(err, PF_ERR_PROTOCOL, "taint budget %s/%s: the "
                         "ConfigMap has no resourceVersion", b->ns, b->name);
            break;
        }
        rc = write_budget(b, rv, data, &won, err);
        cJSON_Delete(cm);
        if (rc != PF_OK)
            break;
        if (won) {
            *allowed = true;
            pf_info("node %s: took a slot of taint budget %s/%s (%d other "
                    "holder(s), cap %d of %d nodes)", b->node, b->ns, b->name,
                    b->others, b->cap, b->total);
            break;
        }
        pf_debug("node %s: taint budget %s/%s changed under us (attempt %d); "
                 "reading it again", b->node, b->ns, b->name, attempt);
        if (!back_off(b, attempt, &rng)) {
            rc = pf_fail(err, PF_ERR_TIMEOUT, "taint budget %s/%s: still "
                         "contended after %d attempts when the deadline came",
                         b->ns, b->name, attempt);
            break;
        }
    }
    free_names(marked, nmarked);
    return rc;
}

pf_err pf_budget_release(struct pf_budget *b, char *err)
{
    uint64_t rng = seed(b->node);
    pf_err rc = PF_OK;

    for (int attempt = 1; attempt <= LOOP_MAX; attempt++) {
        cJSON *cm = NULL, *data;
        const char *rv;
        bool won = false;

        rc = read_budget(b, &cm, err);
        if (rc != PF_OK || !cm)
            return rc;
        rv = pf_json_str(cm, "metadata.resourceVersion");
        data = cJSON_Duplicate(pf_json_at(cm, "data"), 1);
        if (!data || !cJSON_GetObjectItemCaseSensitive(data, b->node) || !rv) {
            cJSON_Delete(data);
            cJSON_Delete(cm);
            return PF_OK;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(data, b->node);
        rc = write_budget(b, rv, data, &won, err);
        cJSON_Delete(cm);
        if (rc != PF_OK || won) {
            if (won)
                pf_info("node %s: released its slot of taint budget %s/%s",
                        b->node, b->ns, b->name);
            return rc;
        }
        if (!back_off(b, attempt, &rng))
            return pf_fail(err, PF_ERR_TIMEOUT, "taint budget %s/%s: still "
                           "contended after %d attempts when the deadline "
                           "came", b->ns, b->name, attempt);
    }
    return rc;
}
