/* The fleet baseline as data (baseline.h). */
#include "baseline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fsutil.h"

/* A --baseline file: a few hundred keys at most in practice; bounded so a
 * wrong file cannot take the memory. */
#define BASE_FILE_MAX (16u << 20)
#define GBPS_MAX 1e6

int pf_base_bucket(int n)
{
    int b = 2;

    while (b < n && b < (1 << 30))
        b *= 2;
    return b;
}

void pf_base_key(const char *type, const char *engine, const char *kind,
                 int nodes, uint64_t bytes, char *out, size_t len)
{
    snprintf(out, len, "%s.%s.%s.n%d.%llu", type, engine, kind, nodes,
             (unsigned long long)bytes);
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
              *p == '-'))
            *p = '-';
}

struct pf_base_entry *pf_base_find(const struct pf_baseline *b,
                                   const char *type, const char *engine,
                                   const char *kind, int nodes,
                                   uint64_t bytes)
{
    for (int i = 0; i < b->n; i++) {
        struct pf_base_entry *e = &b->e[i];
        if (e->nodes == nodes && e->bytes == bytes &&
            !strcmp(e->type, type) && !strcmp(e->engine, engine) &&
            !strcmp(e->kind, kind))
            return e;
    }
    return NULL;
}

static pf_err grow(struct pf_baseline *b, char *err)
{
    struct pf_base_entry *g;
    int cap;

    if (b->n < b->cap)
        return PF_OK;
    cap = b->cap ? b->cap * 2 : 8;
    g = realloc(b->e, (size_t)cap * sizeof(*g));
    if (!g)
        return pf_fail(err, PF_ERR_NOMEM, "baseline: out of memory");
    b->e = g;
    b->cap = cap;
    return PF_OK;
}

pf_err pf_base_put(struct pf_baseline *b, const struct pf_base_entry *e,
                   char *err)
{
    struct pf_base_entry *old = pf_base_find(b, e->type, e->engine, e->kind,
                                             e->nodes, e->bytes);
    pf_err rc;

    if (old) {
        *old = *e;
        return PF_OK;
    }
    if ((rc = grow(b, err)) != PF_OK)
        return rc;
    b->e[b->n++] = *e;
    return PF_OK;
}

pf_err pf_base_fold(struct pf_baseline *b, const struct pf_base_obs *o,
                    const char *now, char *err)
{
    struct pf_base_entry *e;
    pf_err rc;

    if (!(o->gbps > 0) || !isfinite(o->gbps) || o->gbps > GBPS_MAX)
        return pf_fail(err, PF_ERR_USAGE, "baseline: %.3g GB/s is not a "
                       "bandwidth to fold in", o->gbps);
    e = pf_base_find(b, o->type, o->engine, o->kind, o->nodes, o->bytes);
    if (!e) {
        if ((rc = grow(b, err)) != PF_OK)
            return rc;
        e = &b->e[b->n++];
        memset(e, 0, sizeof(*e));
        snprintf(e->type, sizeof(e->type), "%s", o->type);
        snprintf(e->engine, sizeof(e->engine), "%s", o->engine);
        snprintf(e->kind, sizeof(e->kind), "%s", o->kind);
        e->nodes = o->nodes;
        e->bytes = o->bytes;
    }
    if (e->n == PF_BASE_K) {
        memmove(e->v, e->v + 1, (PF_BASE_K - 1) * sizeof(e->v[0]));
        e->n--;
    }
    e->v[e->n++] = o->gbps;
    e->runs++;
    if (now)
        snprintf(e->updated, sizeof(e->updated), "%s", now);
    return PF_OK;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pf_base_median(const struct pf_base_entry *e)
{
    double s[PF_BASE_K];
    int n = e->n < PF_BASE_K ? e->n : PF_BASE_K;

    if (n <= 0)
        return 0;
    memcpy(s, e->v, (size_t)n * sizeof(s[0]));
    qsort(s, (size_t)n, sizeof(s[0]), by_value);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

void pf_base_free(struct pf_baseline *b)
{
    free(b->e);
    b->e = NULL;
    b->n = b->cap = 0;
}

/* ------------------------------------------------------------------ JSON */

cJSON *pf_base_entry_json(const struct pf_base_entry *e)
{
    cJSON *o = cJSON_CreateObject(), *v;

    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "type", e->type);
    cJSON_AddStringToObject(o, "engine", e->engine);
    cJSON_AddStringToObject(o, "kind", e->kind);
    cJSON_AddNumberToObject(o, "nodes", e->nodes);
    cJSON_AddNumberToObject(o, "bytes", (double)e->bytes);
    v = cJSON_AddArrayToObject(o, "values");
    for (int i = 0; v && i < e->n && i < PF_BASE_K; i++) {
        /* Six significant digits: enough for GB/s, short, and a value
         * above 0 stays above 0. */
        char num[32];
        snprintf(num, sizeof(num), "%.6g", e->v[i]);
        cJSON_AddItemToArray(v, cJSON_CreateRaw(num));
    }
    cJSON_AddNumberToObject(o, "runs", (double)e->runs);
    cJSON_AddStringToObject(o, "updated", e->updated);
    return o;
}

static pf_err bad(char *err, const char *what, const char *field,
                  const char *why)
{
    return pf_fail(err, PF_ERR_USAGE, "%s: field '%s' %s", what, field, why);
}

static pf_err get_text(const cJSON *o, const char *what, const char *key,
                       char *out, size_t len, char *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    if (!cJSON_IsString(v) || !v->valuestring[0])
        return bad(err, what, key, "must be a non-empty string");
    if (strlen(v->valuestring) >= len)
        return bad(err, what, key, "is too long");
    snprintf(out, len, "%s", v->valuestring);
    return PF_OK;
}

/* A whole number in [lo, hi]. */
static pf_err get_count(const cJSON *o, const char *what, const char *key,
                        double lo, double hi, double *out, char *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return bad(err, what, key, "must be a whole number in range");
    *out = v->valuedouble;
    return PF_OK;
}

static bool type_ok(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == '*'))
            return false;
    return true;
}

pf_err pf_base_entry_parse(const cJSON *o, const char *what,
                           struct pf_base_entry *e, char *err)
{
    static const char *const known[] = { "type", "engine", "kind", "nodes",
                                         "bytes", "values", "runs",
                                         "updated" };
    const cJSON *f, *vals, *upd;
    double x;
    pf_err rc;

    memset(e, 0, sizeof(*e));
    if (!cJSON_IsObject(o))
        return pf_fail(err, PF_ERR_USAGE, "%s: an entry must be an object",
                       what);
    cJSON_ArrayForEach(f, o) {
        bool ok = false;
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            ok = ok || !strcmp(f->string, known[i]);
        if (!ok)
            return bad(err, what, f->string, "is not known (type, engine, "
                       "kind, nodes, bytes, values, runs, updated)");
        for (const cJSON *g = o->child; g != f; g = g->next)
            if (!strcmp(g->string, f->string))
                return bad(err, what, f->string, "is given twice");
    }
    if ((rc = get_text(o, what, "type", e->type, sizeof(e->type), err)) ||
        (rc = get_text(o, what, "engine", e->engine, sizeof(e->engine),
                       err)) ||
        (rc = get_text(o, what, "kind", e->kind, sizeof(e->kind), err)))
        return rc;
    if (!type_ok(e->type))
        return bad(err, what, "type", "is not an instance type name");
    if (strcmp(e->engine, "nccl") && strcmp(e->engine, "host"))
        return bad(err, what, "engine", "must be nccl or host");
    if (strcmp(e->kind, "pair") && strcmp(e->kind, "ring"))
        return bad(err, what, "kind", "must be pair or ring");
    if ((rc = get_count(o, what, "nodes", 2, 1 << 30, &x, err)))
        return rc;
    e->nodes = (int)x;
    if (e->nodes != pf_base_bucket(e->nodes) ||
        (!strcmp(e->kind, "pair") && e->nodes != 2))
        return bad(err, what, "nodes", "must be a power of two (2 for "
                   "pairs)");
    if ((rc = get_count(o, what, "bytes", 1, 1ull << 40, &x, err)))
        return rc;
    e->bytes = (uint64_t)x;
    vals = cJSON_GetObjectItemCaseSensitive(o, "values");
    if (!cJSON_IsArray(vals) || cJSON_GetArraySize(vals) > PF_BASE_K)
        return bad(err, what, "values", "must be a list of at most 16 "
                   "numbers");
    cJSON_ArrayForEach(f, vals) {
        if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) ||
            f->valuedouble <= 0 || f->valuedouble > GBPS_MAX)
            return bad(err, what, "values", "must hold bandwidths in GB/s "
                       "(above 0)");
        e->v[e->n++] = f->valuedouble;
    }
    if ((rc = get_count(o, what, "runs", e->n, 1e15, &x, err)))
        return rc;
    e->runs = (long)x;
    upd = cJSON_GetObjectItemCaseSensitive(o, "updated");
    if (upd && (!cJSON_IsString(upd) ||
                strlen(upd->valuestring) >= sizeof(e->updated)))
        return bad(err, what, "updated", "must be an RFC 3339 time");
    if (upd)
        snprintf(e->updated, sizeof(e->updated), "%s", upd->valuestring);
    return PF_OK;
}

cJSON *pf_base_json(const struct pf_baseline *b)
{
    cJSON *root = cJSON_CreateObject(), *list;

    if (!root)
        return NULL;
    cJSON_AddNumberToObject(root, "version", 1);
    list = cJSON_AddArrayToObject(root, "entries");
    for (int i = 0; list && i < b->n; i++) {
        cJSON *e = pf_base_entry_json(&b->e[i]);
        if (e)
            cJSON_AddItemToArray(list, e);
    }
    return root;
}

pf_err pf_base_parse(const char *name, const char *buf, size_t len,
                     struct pf_baseline *b, char *err)
{
    cJSON *root = cJSON_ParseWithLength(buf, len);
    const cJSON *f, *ver, *list;
    pf_err rc = PF_OK;
    int i = 0;

    if (!root)
        return pf_fail(err, PF_ERR_USAGE, "%s: not JSON (near byte %ld)",
                       name, cJSON_GetErrorPtr() && cJSON_GetErrorPtr() >= buf
                       ? (long)(cJSON_GetErrorPtr() - buf) : 0L);
    if (!cJSON_IsObject(root)) {
        rc = pf_fail(err, PF_ERR_USAGE, "%s: a baseline is an object with "
                     "'version: 1' and 'entries'", name);
        goto out;
    }
    cJSON_ArrayForEach(f, root)
        if (strcmp(f->string, "version") && strcmp(f->string, "entries")) {
            rc = pf_fail(err, PF_ERR_USAGE, "%s: field '%s' is not known "
                         "(version, entries)", name, f->string);
            goto out;
        }
    ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        rc = pf_fail(err, PF_ERR_USAGE, "%s: field 'version' must be 1",
                     name);
        goto out;
    }
    list = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!cJSON_IsArray(list)) {
        rc = pf_fail(err, PF_ERR_USAGE, "%s: field 'entries' must be a list",
                     name);
        goto out;
    }
    cJSON_ArrayForEach(f, list) {
        struct pf_base_entry e;
        char what[PF_ERRLEN / 2];

        snprintf(what, sizeof(what), "%s: entries[%d]", name, i++);
        if ((rc = pf_base_entry_parse(f, what, &e, err)) != PF_OK)
            goto out;
        if (pf_base_find(b, e.type, e.engine, e.kind, e.nodes, e.bytes)) {
            rc = pf_fail(err, PF_ERR_USAGE, "%s: the same key as an earlier "
                         "entry", what);
            goto out;
        }
        if ((rc = pf_base_put(b, &e, err)) != PF_OK)
            goto out;
    }
out:
    cJSON_Delete(root);
    return rc;
}

pf_err pf_base_load_file(const char *path, struct pf_baseline *b, char *err)
{
    char *buf;
    size_t len;
    pf_err rc = pf_read_file(path, BASE_FILE_MAX, &buf, &len, err);

    if (rc != PF_OK) {
        pf_err_prefix(err, "--baseline");
        return PF_ERR_USAGE;
    }
    rc = pf_base_parse(path, buf, len, b, err);
    free(buf);
    return rc;
}

