/* Where a run's baseline comes from and what a run gives back (source.h). */
#include "source.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../config/run_clock.h"
#include "../publish/history.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/json.h"
#include "../util/log.h"
#include "configmap.h"

#define REPORT_MAX (64u << 20)
/* Time the leader gives the ConfigMap before the collective: a slow API
 * server never holds the gang back for long. */
#define LOAD_BUDGET_MS 5000

static int by_gbps(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the ring links that carried right data. */
static double median_link(const struct pf_straggler *s)
{
    double *v = calloc((size_t)(s->nlinks > 0 ? s->nlinks : 1), sizeof(*v));
    double m = 0;
    int n = 0;

    if (!v)
        return 0;
    for (int i = 0; i < s->nlinks && s->links; i++)
        if (!s->links[i].confirm && !s->links[i].wrong &&
            isfinite(s->links[i].gbps) && s->links[i].gbps > 0)
            v[n++] = s->links[i].gbps;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof(*v), by_gbps);
        m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    free(v);
    return m;
}

static const char *type_of(const struct pf_run *run)
{
    return run->instance ? run->instance->name : run->node.instance_type;
}

int pf_base_observe(const struct pf_run *run, struct pf_base_obs *obs,
                    int max)
{
    const struct pf_coll *c = &run->coll;
    const struct pf_straggler *s = &c->strag;
    const char *type = type_of(run);
    int n = 0;

    if (!c->ran || !type[0] || !c->engine[0] || c->nnodes < 2 ||
        c->wrong_total > 0 || c->judgement.other_provider)
        return 0;
    if (n < max && !strcmp(s->method, "pairwise") && s->pair_bytes > 0) {
        double m = median_link(s);
        if (m > 0) {
            memset(&obs[n], 0, sizeof(obs[n]));
            snprintf(obs[n].type, sizeof(obs[n].type), "%s", type);
            snprintf(obs[n].engine, sizeof(obs[n].engine), "%s", c->engine);
            snprintf(obs[n].kind, sizeof(obs[n].kind), "pair");
            obs[n].nodes = 2;
            obs[n].bytes = s->pair_bytes;
            obs[n++].gbps = m;
        }
    }
    if (n < max && c->judgement.busbw_gbps > 0 && c->judgement.busbw_bytes) {
        memset(&obs[n], 0, sizeof(obs[n]));
        snprintf(obs[n].type, sizeof(obs[n].type), "%s", type);
        snprintf(obs[n].engine, sizeof(obs[n].engine), "%s", c->engine);
        snprintf(obs[n].kind, sizeof(obs[n].kind), "ring");
        obs[n].nodes = pf_base_bucket(c->nnodes);
        obs[n].bytes = c->judgement.busbw_bytes;
        obs[n++].gbps = c->judgement.busbw_gbps;
    }
    return n;
}

static cJSON *obs_json(const struct pf_base_obs *o)
{
    cJSON *j = cJSON_CreateObject();

    cJSON_AddStringToObject(j, "type", o->type);
    cJSON_AddStringToObject(j, "engine", o->engine);
    cJSON_AddStringToObject(j, "kind", o->kind);
    cJSON_AddNumberToObject(j, "nodes", o->nodes);
    cJSON_AddNumberToObject(j, "bytes", (double)o->bytes);
    cJSON_AddNumberToObject(j, "gbps", o->gbps);
    return j;
}

cJSON *pf_base_report_json(const struct pf_run *run)
{
    const struct pf_base_held *h = &run->coll.strag.held;
    struct pf_base_obs obs[PF_BASE_MAX_OBS];
    int n = pf_base_observe(run, obs, PF_BASE_MAX_OBS);
    cJSON *o = cJSON_CreateObject(), *list, *held;

    if (!o)
        return NULL;
    pf_json_add_text(o, "source", run->baseline.source);  /* null: none */
    pf_json_add_text(o, "note", run->baseline.note);
    cJSON_AddNumberToObject(o, "keys", run->baseline.n);
    list = cJSON_AddArrayToObject(o, "observed");
    for (int i = 0; list && i < n; i++)
        cJSON_AddItemToArray(list, obs_json(&obs[i]));
    held = cJSON_AddObjectToObject(o, "pair_links_held_to");
    if (held) {
        cJSON_AddBoolToObject(held, "applied", h->applied);
        cJSON_AddNumberToObject(held, "catalog_floor_gbps", h->catalog_gbps);
        cJSON_AddNumberToObject(held, "median_gbps", h->median_gbps);
        cJSON_AddNumberToObject(held, "runs", h->runs);
        cJSON_AddNumberToObject(held, "fraction", h->fraction);
        cJSON_AddNumberToObject(held, "floor_gbps", h->floor_gbps);
        cJSON_AddNumberToObject(held, "bytes", (double)h->bytes);
        pf_json_add_text(held, "note", h->note);
    }
    return o;
}

/* One observation from the report's JSON; false when malformed. */
static bool obs_parse(const cJSON *j, struct pf_base_obs *o)
{
    const char *type = pf_json_str(j, "type"), *eng = pf_json_str(j, "engine");
    const char *kind = pf_json_str(j, "kind");
    const cJSON *nodes = pf_json_at(j, "nodes"), *bytes = pf_json_at(j, "bytes");
    const cJSON *gbps = pf_json_at(j, "gbps");

    memset(o, 0, sizeof(*o));
    if (!type || !eng || !kind || !cJSON_IsNumber(nodes) ||
        !cJSON_IsNumber(bytes) || !cJSON_IsNumber(gbps) ||
        strlen(type) >= sizeof(o->type) || strlen(eng) >= sizeof(o->engine) ||
        (strcmp(kind, "pair") && strcmp(kind, "ring")) ||
        (strcmp(eng, "nccl") && strcmp(eng, "host")) ||
        nodes->valuedouble < 2 || nodes->valuedouble > (1 << 30) ||
        bytes->valuedouble < 1 || bytes->valuedouble > (double)(1ull << 40) ||
        !(gbps->valuedouble > 0) || gbps->valuedouble > 1e6)
        return false;
    snprintf(o->type, sizeof(o->type), "%s", type);
    snprintf(o->engine, sizeof(o->engine), "%s", eng);
    snprintf(o->kind, sizeof(o->kind), "%s", kind);
    o->nodes = pf_base_bucket((int)nodes->valuedouble);
    o->bytes = (uint64_t)bytes->valuedouble;
    o->gbps = gbps->valuedouble;
    return true;
}

int pf_base_obs_from_report(const cJSON *report, struct pf_base_obs *obs,
                            int max)
{
    const cJSON *list = pf_json_at(report, "baseline.observed");
    const cJSON *code = pf_json_at(report, "verdict.exit_code");
    const cJSON *j;
    int n = 0;

    if (!cJSON_IsArray(list))
        return -1;
    if (!cJSON_IsNumber(code) || code->valuedouble != 0)
        return 0;                     /* only what passed */
    cJSON_ArrayForEach(j, list)
        if (n < max && obs_parse(j, &obs[n]))
            n++;
    return n;
}

pf_err pf_base_from_history(const char *dir, struct pf_baseline *b,
                            char *err)
{
    char **names = NULL;
    size_t n = 0;
    pf_err rc = pf_history_list(dir, &names, &n, err);

    /* Newest first on disk: fold oldest first, so the newest K stay. */
    for (size_t i = n; rc == PF_OK && i-- > 0;) {
        struct pf_base_obs obs[PF_BASE_MAX_OBS];
        char path[PF_PATH_MAX + 64], msg[PF_ERRLEN], *text;
        cJSON *root;
        int k;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (pf_read_file(path, REPORT_MAX, &text, NULL, msg) != PF_OK)
            continue;                 /* a history file we cannot read */
        root = cJSON_Parse(text);
        free(text);
        k = root ? pf_base_obs_from_report(root, obs, PF_BASE_MAX_OBS) : 0;
        cJSON_Delete(root);
        for (int j = 0; j < k && rc == PF_OK; j++)
            rc = pf_base_fold(b, &obs[j], NULL, err);
    }
    pf_history_names_free(names, n);
    return rc;
}

/* "what where" appended to the sources, comma-separated. */
static void add_source(struct pf_baseline *b, const char *what,
                       const char *where)
{
    size_t used = strlen(b->source);

    snprintf(b->source + used, sizeof(b->source) - used, "%s%s %s",
             used ? ", " : "", what, where);
}

pf_err pf_base_load(struct pf_run *run, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_baseline *b = &run->baseline;
    char msg[PF_ERRLEN];
    pf_err rc;

    pf_base_free(b);
    b->source[0] = b->note[0] = '\0';
    /* The leader judges the links: only it needs the baseline. */
    if (run->peers.rank > 0)
        return PF_OK;
    if (cfg->baseline_file[0]) {
        if ((rc = pf_base_load_file(cfg->baseline_file, b, err)) != PF_OK)
            return rc;
        add_source(b, "file", cfg->baseline_file);
    }
    if (cfg->history_dir[0]) {
        int before = b->n;
        if (pf_base_from_history(cfg->history_dir, b, msg) == PF_OK) {
            if (b->n > before || !before)
                add_source(b, "history", cfg->history_dir);
        } else {
            snprintf(b->note, sizeof(b->note), "history %s: %s",
                     cfg->history_dir, msg);
        }
    }
    if (cfg->baseline_configmap[0] && run->peers.bootstrap == PF_BOOT_K8S) {
        struct pf_base_cm cm;
        int64_t until = pf_deadline_in(LOAD_BUDGET_MS);
        int64_t last = pf_run_deadline(run);
        bool found = false;

        rc = pf_base_cm_open(cfg, until < last ? until : last, run->cancel,
                             &cm, msg);
        if (rc == PF_OK)
            rc = pf_base_cm_read(&cm, b, &found, msg);
        pf_base_cm_close(&cm);
        if (rc != PF_OK) {
            pf_warn("baseline: %s; the catalog floor alone judges", msg);
            snprintf(b->note, sizeof(b->note), "%s", msg);
        } else if (found) {
            add_source(b, "ConfigMap", cfg->baseline_configmap);
        } else if (!b->note[0]) {
            snprintf(b->note, sizeof(b->note), "no ConfigMap %s yet: the "
                     "first passed runs make it", cfg->baseline_configmap);
        }
    }
    if (!b->source[0] && !b->note[0])
        snprintf(b->note, sizeof(b->note), "no baseline (--baseline, "
                 "--history-dir or, in k8s, the baseline ConfigMap)");
    return PF_OK;
}

void pf_base_fold_run(const struct pf_run *run)
{
    struct pf_base_obs obs[PF_BASE_MAX_OBS];
    struct pf_base_cm cm;
    char msg[PF_ERRLEN];
    int n = pf_base_observe(run, obs, PF_BASE_MAX_OBS);
    int64_t until = pf_deadline_in(LOAD_BUDGET_MS);
    int64_t last = pf_run_deadline(run) + PF_PUBLISH_GRACE_MS;
    pf_err rc;

    if (n == 0)
        return;
    rc = pf_base_cm_open(&run->cfg, until < last ? until : last, run->cancel,
                         &cm, msg);
    if (rc == PF_OK)
        rc = pf_base_cm_fold(&cm, obs, n, msg);
    if (rc == PF_OK)
        pf_info("baseline: folded %d value(s) into ConfigMap %s (%d "
                "conflict(s) retried)", n, run->cfg.baseline_configmap,
                cm.conflicts);
    else
        pf_warn("baseline: %s", msg);
    pf_base_cm_close(&cm);
}
