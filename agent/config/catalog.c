/* The instance-type catalog: the embedded agent/catalog.yaml, then an
 * optional override file whose entries change fields of the embedded entry
 * of the same name (or add new types). Strict: unknown fields are errors
 * naming file:line, so a typo never silently drops a threshold. */
#include "catalog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config.h"
#include "../types/node.h"
#include "../util/fsutil.h"
#include "../util/json.h"
#include "../util/yamldoc.h"

#define CATALOG_MAX 1024

void pf_catalog_free(struct pf_catalog *cat)
{
    free(cat->items);
    cat->items = NULL;
    cat->n = 0;
    cat->cap = 0;
}

static struct pf_instance *find_exact(struct pf_catalog *cat, const char *name)
{
    for (int i = 0; i < cat->n; i++)
        if (!strcmp(cat->items[i].name, name))
            return &cat->items[i];
    return NULL;
}

static const char *strip_ml(const char *type)
{
    return strncmp(type, "ml.", 3) ? type : type + 3;
}

const struct pf_instance *pf_catalog_find(const struct pf_catalog *cat,
                                          const char *type)
{
    if (!type || !*type)
        return NULL;
    type = strip_ml(type);
    for (int i = 0; i < cat->n; i++)
        if (!strcmp(cat->items[i].name, type))
            return &cat->items[i];
    /* "hpc7a.*" matches every size of the family. */
    for (int i = 0; i < cat->n; i++) {
        const char *n = cat->items[i].name;
        size_t len = strlen(n);
        if (len > 2 && !strcmp(n + len - 2, ".*") && !strncmp(type, n, len - 1))
            return &cat->items[i];
    }
    return NULL;
}

/* Levenshtein distance of a and b, stopping early above limit (limit + 1
 * is returned then); -1 when out of memory. */
static int edit_distance(const char *a, const char *b, int limit)
{
    size_t la = strlen(a), lb = strlen(b);
    int *prev, *cur, d;

    if ((la > lb ? la - lb : lb - la) > (size_t)limit)
        return limit + 1;
    prev = malloc((lb + 1) * sizeof(*prev));
    cur = malloc((lb + 1) * sizeof(*cur));
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return -1;
    }
    for (size_t j = 0; j <= lb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int row_min;
        cur[0] = row_min = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            if (cur[j] < row_min)
                row_min = cur[j];
        }
        if (row_min > limit) {
            free(prev);
            free(cur);
            return limit + 1;
        }
        int *t = prev;
        prev = cur;
        cur = t;
    }
    d = prev[lb];
    free(prev);
    free(cur);
    return d;
}

bool pf_catalog_suggest(const struct pf_catalog *cat, const char *type,
                        char *out, size_t cap)
{
    const char *bare, *best = NULL;
    int best_d, limit;

    if (!type || !*type || pf_catalog_find(cat, type))
        return false;
    bare = strip_ml(type);
    /* One or two slips (a dropped, swapped or wrong character) in a name
     * like p5.48xlarge; a quarter of a short name at most. */
    limit = strlen(bare) >= 8 ? 2 : 1;
    best_d = limit + 1;
    for (int i = 0; i < cat->n; i++) {
        const char *n = cat->items[i].name;
        size_t len = strlen(n);
        if (len > 2 && !strcmp(n + len - 2, ".*"))
            continue;
        int d = edit_distance(bare, n, limit);
        if (d >= 0 && d < best_d) {
            best_d = d;
            best = n;
        }
    }
    if (!best)
        return false;
    snprintf(out, cap, "%s%s", bare != type ? "ml." : "", best);
    return true;
}

static int by_bytes(const void *a, const void *b)
{
    const struct pf_size_floor *x = a, *y = b;
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

/* ------------------------------------------------------------- parsing */

struct ctx {
    yaml_document_t *doc;
    const char *name;
    char *err;
};

static pf_err at(struct ctx *c, yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static pf_err at(struct ctx *c, yaml_node_t *n, const char *fmt, ...)
{
    char what[PF_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return pf_fail(c->err, PF_ERR_CONFIG, "%s:%zu: %s", c->name,
                   n ? n->start_mark.line + 1 : 0, what);
}

static const char *scalar(yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

/* True when a key before pair `upto` of map is the scalar `key` (after
 * stripping "ml." when strip is set). Duplicate keys are errors: a
 * repeated field or instance would otherwise let the last one win without
 * a word. The callers reject unknown keys, so maps stay small. */
static bool key_seen_before(struct ctx *c, yaml_node_t *map,
                            yaml_node_pair_t *upto, const char *key,
                            bool strip)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < upto; p++) {
        const char *k = scalar(yaml_document_get_node(c->doc, p->key));
        if (k && !strcmp(strip ? strip_ml(k) : k, key))
            return true;
    }
    return false;
}

/* Pair p of map, an instance's fields or a floor's: its key node k, the
 * key (text, given once) and its value v. what names the keys in errors
 * ("field", "floor field"). */
static pf_err field_at(struct ctx *c, yaml_node_t *map, yaml_node_pair_t *p,
                       const char *inst, const char *what, yaml_node_t **k,
                       const char **key, yaml_node_t **v)
{
    *k = yaml_document_get_node(c->doc, p->key);
    *v = yaml_document_get_node(c->doc, p->value);
    *key = scalar(*k);
    if (!*key)
        return at(c, *k, "%s: %s names must be text", inst, what);
    if (key_seen_before(c, map, p, *key, false))
        return at(c, *k, "%s: %s '%s' given twice", inst, what, *key);
    return PF_OK;
}

static pf_err get_int(struct ctx *c, yaml_node_t *v, const char *inst,
                      const char *key, int lo, int hi, int *out)
{
    const char *s = scalar(v);
    char *end;
    long x;
    if (!s)
        return at(c, v, "%s: '%s' must be an integer", inst, key);
    errno = 0;
    x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi)
        return at(c, v, "%s: '%s' must be an integer in range", inst, key);
    *out = (int)x;
    return PF_OK;
}

static pf_err get_bool(struct ctx *c, yaml_node_t *v, const char *inst,
                       const char *key, bool *out)
{
    const char *s = scalar(v);
    if (s && (!strcmp(s, "true") || !strcmp(s, "yes")))
        *out = true;
    else if (s && (!strcmp(s, "false") || !strcmp(s, "no")))
        *out = false;
    else
        return at(c, v, "%s: '%s' must be true or false", inst, key);
    return PF_OK;
}

static pf_err get_str(struct ctx *c, yaml_node_t *v, const char *inst,
                      const char *key, char *out, size_t len)
{
    const char *s = scalar(v);
    if (!s)
        return at(c, v, "%s: '%s' must be text", inst, key);
    if (strlen(s) >= len)
        return at(c, v, "%s: '%s' is too long", inst, key);
    memcpy(out, s, strlen(s) + 1);
    return PF_OK;
}

static pf_err get_gbps(struct ctx *c, yaml_node_t *x, const char *inst,
                       const char *what, double *out)
{
    const char *s = scalar(x);
    char *end;
    double gbps;

    if (!s)
        return at(c, x, "%s: %s must be a number", inst, what);
    errno = 0;
    gbps = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(gbps) || gbps < 0 || gbps > 1e6)
        return at(c, x, "%s: %s '%s' is not a bandwidth in GB/s", inst, what, s);
    *out = gbps;
    return PF_OK;
}

/* sizes: {size: GB/s}, the point's floor at other message sizes. */
static pf_err get_sizes(struct ctx *c, yaml_node_t *v, const char *inst,
                        struct pf_floor *f)
{
    if (!v || v->type != YAML_MAPPING_NODE)
        return at(c, v, "%s: 'sizes' must be a mapping of message size: GB/s",
                  inst);
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
         p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *x = yaml_document_get_node(c->doc, p->value);
        const char *sz = scalar(k);
        char sub[PF_ERRLEN];
        struct pf_size_floor e;

        if (!sz || pf_parse_size(sz, &e.bytes, sub) != PF_OK || !e.bytes)
            return at(c, k, "%s: sizes key '%s' is not a size (K, M, G)",
                      inst, sz ? sz : "");
        if (get_gbps(c, x, inst, "a sizes floor", &e.gbps) != PF_OK)
            return PF_ERR_CONFIG;
        if (e.gbps <= 0)
            return at(c, x, "%s: a sizes floor must be above 0 GB/s", inst);
        for (int i = 0; i < f->nsizes; i++)
            if (f->sizes[i].bytes == e.bytes)
                return at(c, k, "%s: size '%s' given twice", inst, sz);
        if (f->nsizes >= PF_MAX_SIZE_FLOORS - 1)
            return at(c, k, "%s: more than %d sizes", inst,
                      PF_MAX_SIZE_FLOORS - 1);
        f->sizes[f->nsizes++] = e;
    }
    return PF_OK;
}

/* The point's size curve: from_bytes/busbw_gbps and its sizes, sorted;
 * a size twice, or sizes without from_bytes, is an error. */
static pf_err finish_sizes(struct ctx *c, yaml_node_t *x, const char *inst,
                           struct pf_floor *f)
{
    if (!f->nsizes)
        return PF_OK;
    if (!f->from_bytes)
        return at(c, x, "%s: 'sizes' needs from_bytes (the size the default "
                  "sweep reaches)", inst);
    for (int i = 0; i < f->nsizes; i++)
        if (f->sizes[i].bytes == f->from_bytes)
            return at(c, x, "%s: sizes repeats from_bytes (its floor is "
                      "busbw_gbps)", inst);
    f->sizes[f->nsizes++] =
        (struct pf_size_floor){ f->from_bytes, f->busbw_gbps };
    qsort(f->sizes, (size_t)f->nsizes, sizeof(f->sizes[0]), by_bytes);
    return PF_OK;
}

/* One floor: a bare number (GB/s, judged at the largest size swept) or
 * {busbw_gbps, from_bytes, sizes, verified, source}. */
static pf_err get_floor(struct ctx *c, yaml_node_t *x, const char *inst,
                        struct pf_floor *f)
{
    bool have_gbps = false;

    f->verified = true;
    if (x && x->type == YAML_SCALAR_NODE)
        return get_gbps(c, x, inst, "floor", &f->busbw_gbps);
    if (!x || x->type != YAML_MAPPING_NODE)
        return at(c, x, "%s: a floor is a number (GB/s) or a mapping with "
                  "busbw_gbps, from_bytes, sizes, verified, source", inst);
    for (yaml_node_pair_t *p = x->data.mapping.pairs.start;
         p < x->data.mapping.pairs.top; p++) {
        yaml_node_t *k, *v;
        const char *key;
        pf_err rc = field_at(c, x, p, inst, "floor field", &k, &key, &v);

        if (rc != PF_OK)
            return rc;
        if (!strcmp(key, "busbw_gbps")) {
            rc = get_gbps(c, v, inst, "busbw_gbps", &f->busbw_gbps);
            have_gbps = true;
        } else if (!strcmp(key, "from_bytes")) {
            char sub[PF_ERRLEN];
            const char *sz = scalar(v);
            if (!sz || pf_parse_size(sz, &f->from_bytes, sub) != PF_OK)
                return at(c, v, "%s: from_bytes '%s' is not a size (K, M, G)",
                          inst, sz ? sz : "");
            rc = PF_OK;
        } else if (!strcmp(key, "verified")) {
            rc = get_bool(c, v, inst, "verified", &f->verified);
        } else if (!strcmp(key, "source")) {
            rc = get_str(c, v, inst, "source", f->source, sizeof(f->source));
        } else if (!strcmp(key, "sizes")) {
            rc = get_sizes(c, v, inst, f);
        } else {
            return at(c, k, "%s: unknown floor field '%s' (busbw_gbps, "
                      "from_bytes, sizes, verified, source)", inst, key);
        }
        if (rc != PF_OK)
            return rc;
    }
    if (!have_gbps)
        return at(c, x, "%s: a floor needs busbw_gbps", inst);
    return finish_sizes(c, x, inst, f);
}

static int by_nodes(const void *a, const void *b)
{
    const struct pf_floor *x = a, *y = b;
    return (x->nodes > y->nodes) - (x->nodes < y->nodes);
}

/* floors: {node count: floor}. Merged by node count into the entry's
 * curve, so an override file may change one point and keep the others; a
 * point of 0 GB/s takes that point out. */
static pf_err get_floors(struct ctx *c, yaml_node_t *v, struct pf_instance *it)
{
    struct pf_floor curve[PF_MAX_FLOORS];
    int n = it->nfloors;

    if (!v || v->type != YAML_MAPPING_NODE)
        return at(c, v, "%s: 'floors' must be a mapping of node count: floor",
                  it->name);
    memcpy(curve, it->floors, sizeof(curve));
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
         p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *x = yaml_document_get_node(c->doc, p->value);
        struct pf_floor f;
        int nodes, i;

        memset(&f, 0, sizeof(f));
        if (get_int(c, k, it->name, "floors key (node count)", 1, 100000,
                    &nodes) != PF_OK)
            return PF_ERR_CONFIG;
        if (get_floor(c, x, it->name, &f) != PF_OK)
            return PF_ERR_CONFIG;
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < p; q++) {
            const char *seen = scalar(yaml_document_get_node(c->doc, q->key));
            if (seen && atoi(seen) == nodes)
                return at(c, k, "%s: floor for %d nodes given twice",
                          it->name, nodes);
        }
        f.nodes = nodes;
        for (i = 0; i < n && curve[i].nodes != nodes; i++)
            ;
        if (f.busbw_gbps <= 0) {
            if (i < n)
                curve[i] = curve[--n];
            continue;
        }
        if (i == n && n >= PF_MAX_FLOORS)
            return at(c, x, "%s: more than %d floors", it->name, PF_MAX_FLOORS);
        curve[i] = f;
        if (i == n)
            n++;
    }
    qsort(curve, (size_t)n, sizeof(curve[0]), by_nodes);
    memset(it->floors, 0, sizeof(it->floors));
    memcpy(it->floors, curve, (size_t)n * sizeof(curve[0]));
    it->nfloors = n;
    return PF_OK;
}

/* host_floors: {NIC count: floor}, each floor as in `floors`. */
static pf_err get_host_floors(struct ctx *c, yaml_node_t *v,
                              struct pf_instance *it)
{
    if (!v || v->type != YAML_MAPPING_NODE)
        return at(c, v, "%s: 'host_floors' must be a mapping of NIC count: "
                  "floor", it->name);
    it->nhost_floors = 0;
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
         p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *x = yaml_document_get_node(c->doc, p->value);
        struct pf_floor f;
        int nics;

        memset(&f, 0, sizeof(f));
        if (get_int(c, k, it->name, "host_floors key (NIC count)", 1,
                    PF_MAX_EFA, &nics) != PF_OK)
            return PF_ERR_CONFIG;
        if (get_floor(c, x, it->name, &f) != PF_OK)
            return PF_ERR_CONFIG;
        for (int i = 0; i < it->nhost_floors; i++)
            if (it->host_floors[i].nodes == nics)
                return at(c, k, "%s: host floor for %d NICs given twice",
                          it->name, nics);
        if (it->nhost_floors >= PF_MAX_FLOORS)
            return at(c, x, "%s: more than %d host floors", it->name,
                      PF_MAX_FLOORS);
        f.nodes = nics;
        it->host_floors[it->nhost_floors++] = f;
    }
    return PF_OK;
}

/* gpu: {nvlinks, pcie_gen, pcie_width, min_driver, min_cuda, mig, verified,
 * source}: an override changes the keys it names. */
static pf_err get_gpu(struct ctx *c, yaml_node_t *x, struct pf_instance *it)
{
    struct pf_gpu_expect *g = &it->gpu;
    const char *inst = it->name;

    if (!x || x->type != YAML_MAPPING_NODE)
        return at(c, x, "%s: 'gpu' must be a mapping (nvlinks, pcie_gen, "
                  "pcie_width, min_driver, min_cuda, min_driver_verified, mig, "
                  "verified, source)", inst);
    for (yaml_node_pair_t *p = x->data.mapping.pairs.start;
         p < x->data.mapping.pairs.top; p++) {
        yaml_node_t *k, *v;
        const char *key;
        pf_err rc = field_at(c, x, p, inst, "gpu field", &k, &key, &v);

        if (rc != PF_OK)
            return rc;
        if (!strcmp(key, "nvlinks"))
            rc = get_int(c, v, inst, key, 0, 1024, &g->nvlinks);
        else if (!strcmp(key, "pcie_gen"))
            rc = get_int(c, v, inst, key, 0, 16, &g->pcie_gen);
        else if (!strcmp(key, "pcie_width"))
            rc = get_int(c, v, inst, key, 0, 32, &g->pcie_width);
        else if (!strcmp(key, "min_driver")) {
            rc = get_str(c, v, inst, key, g->min_driver,
                         sizeof(g->min_driver));
            for (const char *d = g->min_driver; rc == PF_OK && *d; d++)
                if (!((*d >= '0' && *d <= '9') || *d == '.'))
                    rc = at(c, v, "%s: min_driver '%s' is not a version "
                            "(digits and dots)", inst, g->min_driver);
        } else if (!strcmp(key, "min_cuda")) {
            int major = 0, minor = 0, n = 0;
            rc = get_str(c, v, inst, key, g->min_cuda, sizeof(g->min_cuda));
            if (rc == PF_OK &&
                (sscanf(g->min_cuda, "%d.%d%n", &major, &minor, &n) != 2 ||
                 g->min_cuda[n] || major < 1 || minor < 0 || minor > 99))
                rc = at(c, v, "%s: min_cuda '%s' is not a CUDA version "
                        "(MAJOR.MINOR, e.g. 12.4)", inst, g->min_cuda);
        } else if (!strcmp(key, "mig"))
            rc = get_bool(c, v, inst, key, &g->mig_allowed);
        else if (!strcmp(key, "verified"))
            rc = get_bool(c, v, inst, key, &g->verified);
        else if (!strcmp(key, "min_driver_verified"))
            rc = get_bool(c, v, inst, key, &g->driver_verified);
        else if (!strcmp(key, "source"))
            rc = get_str(c, v, inst, key, g->source, sizeof(g->source));
        else
            return at(c, k, "%s: unknown gpu field '%s' (nvlinks, pcie_gen, "
                      "pcie_width, min_driver, min_cuda, min_driver_verified, mig, "
                      "verified, source)", inst, key);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
}

static pf_err get_quirks(struct ctx *c, yaml_node_t *v, struct pf_instance *it)
{
    if (!v || v->type != YAML_SEQUENCE_NODE)
        return at(c, v, "%s: 'quirks' must be a list", it->name);
    it->recount_efa = it->ignore_non_efa = it->no_nccl = false;
    for (yaml_node_item_t *i = v->data.sequence.items.start;
         i < v->data.sequence.items.top; i++) {
        yaml_node_t *q = yaml_document_get_node(c->doc, *i);
        const char *s = scalar(q);
        if (s && !strcmp(s, "recount_efa"))
            it->recount_efa = true;
        else if (s && !strcmp(s, "ignore_non_efa"))
            it->ignore_non_efa = true;
        else if (s && !strcmp(s, "no_nccl"))
            it->no_nccl = true;
        else
            return at(c, q, "%s: unknown quirk '%s' (recount_efa, "
                      "ignore_non_efa, no_nccl)", it->name, s ? s : "?");
    }
    return PF_OK;
}

static pf_err parse_instance(struct ctx *c, yaml_node_t *map,
                             struct pf_instance *it)
{
    if (map->type != YAML_MAPPING_NODE)
        return at(c, map, "%s: entry must be a mapping of fields", it->name);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k, *v;
        const char *key;
        pf_err rc = field_at(c, map, p, it->name, "field", &k, &key, &v);

        if (rc != PF_OK)
            return rc;
        if (!strcmp(key, "efa"))
            rc = get_int(c, v, it->name, key, 0, PF_MAX_EFA, &it->efa_count);
        else if (!strcmp(key, "accelerators"))
            rc = get_int(c, v, it->name, key, 0, 64, &it->accel_count);
        else if (!strcmp(key, "accelerator_model"))
            rc = get_str(c, v, it->name, key, it->accel_model, sizeof(it->accel_model));
        else if (!strcmp(key, "accelerator_kind")) {
            rc = get_str(c, v, it->name, key, it->accel_kind, sizeof(it->accel_kind));
            if (rc == PF_OK && strcmp(it->accel_kind, "gpu") &&
                strcmp(it->accel_kind, "trainium") && strcmp(it->accel_kind, "none"))
                rc = at(c, v, "%s: accelerator_kind '%s' is not gpu, trainium "
                        "or none", it->name, it->accel_kind);
        } else if (!strcmp(key, "network_gbps"))
            rc = get_int(c, v, it->name, key, 0, 1000000, &it->network_gbps);
        else if (!strcmp(key, "gdr_required"))
            rc = get_bool(c, v, it->name, key, &it->gdr_required);
        else if (!strcmp(key, "verified"))
            rc = get_bool(c, v, it->name, key, &it->verified);
        else if (!strcmp(key, "quirks"))
            rc = get_quirks(c, v, it);
        else if (!strcmp(key, "floors"))
            rc = get_floors(c, v, it);
        else if (!strcmp(key, "host_floors"))
            rc = get_host_floors(c, v, it);
        else if (!strcmp(key, "gpu"))
            rc = get_gpu(c, v, it);
        else if (!strcmp(key, "notes"))
            rc = get_str(c, v, it->name, key, it->notes, sizeof(it->notes));
        else
            rc = at(c, k, "%s: unknown field '%s'", it->name, key);
        if (rc != PF_OK)
            return PF_ERR_CONFIG;
    }
    return PF_OK;
}

static bool valid_type_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '-' || (ch == '*' && i == n - 1);
        if (!ok)
            return false;
    }
    return true;
}

static pf_err parse_instances(struct ctx *c, yaml_node_t *map,
                              struct pf_catalog *cat)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return at(c, map, "'instances' must be a mapping of instance type: fields");
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
        const char *name = scalar(k);
        struct pf_instance *existing, entry;

        if (!name || !valid_type_name(strip_ml(name)))
            return at(c, k, "'%s' is not an instance type name",
                      name ? name : "?");
        name = strip_ml(name);
        if (key_seen_before(c, map, p, name, true))
            return at(c, k, "instance type '%s' given twice", name);
        /* An override starts from the entry it overrides, so a file may
         * change one field; it is parsed into a copy so a bad file leaves
         * the catalog whole. */
        existing = find_exact(cat, name);
        if (existing) {
            entry = *existing;
        } else {
            memset(&entry, 0, sizeof(entry));
            snprintf(entry.name, sizeof(entry.name), "%s", name);
            snprintf(entry.accel_kind, sizeof(entry.accel_kind), "none");
            entry.verified = true;
            entry.gpu.nvlinks = -1;
            entry.gpu.verified = true;
            entry.gpu.driver_verified = true;
        }
        if (parse_instance(c, v, &entry) != PF_OK)
            return PF_ERR_CONFIG;
        if (existing) {
            *existing = entry;
        } else {
            if (cat->n >= CATALOG_MAX)
                return at(c, k, "more than %d instance types", CATALOG_MAX);
            /* Doubling: growing by one entry (4 KiB) per type copied the
             * whole array each time, seconds for a file of many types. */
            if (cat->n >= cat->cap) {
                int cap = cat->cap ? cat->cap * 2 : 64;
                struct pf_instance *grown =
                    realloc(cat->items, (size_t)cap * sizeof(*grown));
                if (!grown)
                    return pf_fail(c->err, PF_ERR_NOMEM, "out of memory");
                cat->items = grown;
                cat->cap = cap;
            }
            cat->items[cat->n++] = entry;
        }
    }
    return PF_OK;
}

pf_err pf_catalog_parse(struct pf_catalog *cat, const char *name,
                        const char *buf, size_t len, char *err)
{
    yaml_document_t doc;
    yaml_node_t *root;
    struct ctx c = { &doc, name, err };
    bool have_instances = false;
    pf_err rc = PF_OK;

    rc = pf_yaml_load(&doc, name, buf, len, err);
    if (rc != PF_OK)
        return rc;
    root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        rc = pf_fail(err, PF_ERR_CONFIG, "%s:1: a catalog is a mapping with "
                     "'version: 1' and 'instances'", name);
        goto out;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top && rc == PF_OK; p++) {
        yaml_node_t *k = yaml_document_get_node(&doc, p->key);
        yaml_node_t *v = yaml_document_get_node(&doc, p->value);
        const char *key = scalar(k);
        if (key && key_seen_before(&c, root, p, key, false)) {
            rc = at(&c, k, "key '%s' given twice", key);
        } else if (key && !strcmp(key, "version")) {
            const char *ver = scalar(v);
            if (!ver || strcmp(ver, "1"))
                rc = at(&c, v, "unsupported catalog version '%s' (expected 1)",
                        ver ? ver : "?");
        } else if (key && !strcmp(key, "instances")) {
            have_instances = true;
            rc = parse_instances(&c, v, cat);
        } else {
            rc = at(&c, k, "unknown key '%s'", key ? key : "?");
        }
    }
    if (rc == PF_OK && !have_instances)
        rc = pf_fail(err, PF_ERR_CONFIG, "%s: no 'instances' mapping", name);
out:
    yaml_document_delete(&doc);
    return rc;
}

pf_err pf_catalog_load(struct pf_catalog *cat, const char *override_path,
                       char *err)
{
    char *buf;
    size_t len;
    pf_err rc;

    cat->n = 0;
    cat->cap = 0;
    cat->items = NULL;
    rc = pf_catalog_parse(cat, "catalog.yaml (embedded)", pf_catalog_yaml,
                          strlen(pf_catalog_yaml), err);
    if (rc != PF_OK || !override_path || !*override_path)
        return rc;
    rc = pf_read_file(override_path, 4 << 20, &buf, &len, err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "catalog file");
        pf_catalog_free(cat);
        return PF_ERR_CONFIG;
    }
    rc = pf_catalog_parse(cat, override_path, buf, len, err);
    free(buf);
    if (rc != PF_OK)
        pf_catalog_free(cat);
    return rc;
}

/* YAML double-quoted scalar, so notes with ':' or '#' stay one value. */
static void print_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* floors or host_floors, keyed by node or NIC count (`nodes`). */
static void print_floors(FILE *out, const char *key, const struct pf_floor *fl,
                         int n)
{
    if (n == 0)
        return;
    fprintf(out, "    %s:\n", key);
    for (int f = 0; f < n; f++) {
        fprintf(out, "      %d: {busbw_gbps: %g, from_bytes: %llu, "
                "verified: %s", fl[f].nodes, fl[f].busbw_gbps,
                (unsigned long long)fl[f].from_bytes,
                fl[f].verified ? "true" : "false");
        if (fl[f].nsizes > 1) {
            bool first = true;
            fprintf(out, ", sizes: {");
            for (int k = 0; k < fl[f].nsizes; k++) {
                if (fl[f].sizes[k].bytes == fl[f].from_bytes)
                    continue;
                fprintf(out, "%s%llu: %g", first ? "" : ", ",
                        (unsigned long long)fl[f].sizes[k].bytes,
                        fl[f].sizes[k].gbps);
                first = false;
            }
            fprintf(out, "}");
        }
        if (fl[f].source[0]) {
            fprintf(out, ", source: ");
            print_quoted(out, fl[f].source);
        }
        fprintf(out, "}\n");
    }
}

static bool gpu_stated(const struct pf_gpu_expect *g)
{
    return g->nvlinks >= 0 || g->pcie_gen || g->pcie_width ||
           g->min_driver[0] || g->min_cuda[0] || g->source[0];
}

static void print_gpu(FILE *out, const struct pf_gpu_expect *g)
{
    if (!gpu_stated(g))
        return;
    fprintf(out, "    gpu:\n");
    if (g->nvlinks >= 0)
        fprintf(out, "      nvlinks: %d\n", g->nvlinks);
    if (g->pcie_gen)
        fprintf(out, "      pcie_gen: %d\n", g->pcie_gen);
    if (g->pcie_width)
        fprintf(out, "      pcie_width: %d\n", g->pcie_width);
    if (g->min_cuda[0])
        fprintf(out, "      min_cuda: \"%s\"\n", g->min_cuda);
    if (g->min_driver[0])
        fprintf(out, "      min_driver: \"%s\"\n      min_driver_verified: "
                "%s\n", g->min_driver, g->driver_verified ? "true" : "false");
    fprintf(out, "      mig: %s\n", g->mig_allowed ? "true" : "false");
    fprintf(out, "      verified: %s\n", g->verified ? "true" : "false");
    if (g->source[0]) {
        fprintf(out, "      source: ");
        print_quoted(out, g->source);
        fputc('\n', out);
    }
}

void pf_catalog_print(const struct pf_catalog *cat, FILE *out)
{
    fprintf(out, "version: 1\ninstances:\n");
    for (int i = 0; i < cat->n; i++) {
        const struct pf_instance *it = &cat->items[i];
        fprintf(out, "  %s:\n", it->name);
        fprintf(out, "    efa: %d\n", it->efa_count);
        fprintf(out, "    accelerators: %d\n", it->accel_count);
        if (it->accel_model[0]) {
            fprintf(out, "    accelerator_model: ");
            print_quoted(out, it->accel_model);
            fputc('\n', out);
        }
        fprintf(out, "    accelerator_kind: %s\n", it->accel_kind);
        fprintf(out, "    network_gbps: %d\n", it->network_gbps);
        fprintf(out, "    gdr_required: %s\n", it->gdr_required ? "true" : "false");
        fprintf(out, "    verified: %s\n", it->verified ? "true" : "false");
        if (it->recount_efa || it->ignore_non_efa || it->no_nccl)
            fprintf(out, "    quirks: [%s%s%s]\n",
                    it->recount_efa ? "recount_efa" : "",
                    it->ignore_non_efa ? (it->recount_efa ? ", ignore_non_efa"
                                                          : "ignore_non_efa") : "",
                    it->no_nccl ? (it->recount_efa || it->ignore_non_efa
                                   ? ", no_nccl" : "no_nccl") : "");
        print_floors(out, "floors", it->floors, it->nfloors);
        print_floors(out, "host_floors", it->host_floors, it->nhost_floors);
        print_gpu(out, &it->gpu);
        if (it->notes[0]) {
            fprintf(out, "    notes: ");
            print_quoted(out, it->notes);
            fputc('\n', out);
        }
    }
}

cJSON *pf_catalog_point_json(const struct pf_floor *f, const char *key)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddNumberToObject(o, key, f->nodes);
    cJSON_AddNumberToObject(o, "busbw_gbps", f->busbw_gbps);
    cJSON_AddNumberToObject(o, "from_bytes", (double)f->from_bytes);
    cJSON_AddBoolToObject(o, "verified", f->verified);
    pf_json_add_text(o, "source", f->source);
    if (f->nsizes > 1) {
        cJSON *sizes = cJSON_AddArrayToObject(o, "sizes");
        for (int k = 0; k < f->nsizes && k < PF_MAX_SIZE_FLOORS; k++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "bytes", (double)f->sizes[k].bytes);
            cJSON_AddNumberToObject(e, "busbw_gbps", f->sizes[k].gbps);
            cJSON_AddItemToArray(sizes, e);
        }
    }
    return o;
}

cJSON *pf_instance_json(const struct pf_instance *it)
{
    cJSON *o, *floors;

    if (!it)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", it->name);
    cJSON_AddNumberToObject(o, "efa_count", it->efa_count);
    cJSON_AddNumberToObject(o, "accelerator_count", it->accel_count);
    pf_json_add_text(o, "accelerator_model", it->accel_model);
    pf_json_add_text(o, "accelerator_kind", it->accel_kind);
    cJSON_AddNumberToObject(o, "network_gbps", it->network_gbps);
    cJSON_AddBoolToObject(o, "verified", it->verified);
    cJSON_AddBoolToObject(o, "gdr_required", it->gdr_required);
    cJSON_AddBoolToObject(o, "recount_efa", it->recount_efa);
    cJSON_AddBoolToObject(o, "ignore_non_efa", it->ignore_non_efa);
    cJSON_AddBoolToObject(o, "no_nccl", it->no_nccl);
    floors = cJSON_AddArrayToObject(o, "floors");
    for (int i = 0; i < it->nfloors && i < PF_MAX_FLOORS; i++)
        cJSON_AddItemToArray(floors,
                             pf_catalog_point_json(&it->floors[i], "nodes"));
    floors = cJSON_AddArrayToObject(o, "host_floors");
    for (int i = 0; i < it->nhost_floors && i < PF_MAX_FLOORS; i++)
        cJSON_AddItemToArray(floors,
                             pf_catalog_point_json(&it->host_floors[i], "nics"));
    if (gpu_stated(&it->gpu)) {
        cJSON *g = cJSON_AddObjectToObject(o, "gpu");
        if (it->gpu.nvlinks >= 0)
            cJSON_AddNumberToObject(g, "nvlinks", it->gpu.nvlinks);
        if (it->gpu.pcie_gen)
            cJSON_AddNumberToObject(g, "pcie_gen", it->gpu.pcie_gen);
        if (it->gpu.pcie_width)
            cJSON_AddNumberToObject(g, "pcie_width", it->gpu.pcie_width);
        if (it->gpu.min_cuda[0])
            cJSON_AddStringToObject(g, "min_cuda", it->gpu.min_cuda);
        if (it->gpu.min_driver[0]) {
            cJSON_AddStringToObject(g, "min_driver", it->gpu.min_driver);
            cJSON_AddBoolToObject(g, "min_driver_verified",
                                  it->gpu.driver_verified);
        }
        cJSON_AddBoolToObject(g, "mig", it->gpu.mig_allowed);
        cJSON_AddBoolToObject(g, "verified", it->gpu.verified);
        pf_json_add_text(g, "source", it->gpu.source);
    }
    pf_json_add_text(o, "notes", it->notes);
    return o;
}

cJSON *pf_catalog_json(const struct pf_catalog *cat)
{
    cJSON *root = cJSON_CreateObject(), *list;

    if (!root)
        return NULL;
    cJSON_AddNumberToObject(root, "version", 1);
    list = cJSON_AddArrayToObject(root, "instances");
    for (int i = 0; i < cat->n; i++)
        cJSON_AddItemToArray(list, pf_instance_json(&cat->items[i]));
    return root;
}
