/* The fleet baseline in a ConfigMap (configmap.h). */
#include "configmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../config/config.h"
#include "../k8s/backoff.h"
#include "../k8s/configmap.h"
#include "../k8s/object.h"
#include "../util/clock.h"
#include "../util/json.h"
#include "../util/log.h"

#define BACKOFF_BASE_MS 20
#define BACKOFF_CAP_MS 1000

pf_err pf_base_cm_open(const struct pf_config *cfg, int64_t deadline,
                       const atomic_int *cancel, struct pf_base_cm *cm,
                       char *err)
{
    struct pf_k8s_target t;
    const char *spec = cfg->baseline_configmap, *slash = strchr(spec, '/');

    memset(cm, 0, sizeof(*cm));
    if (!slash || (size_t)(slash - spec) >= sizeof(cm->ns) ||
        strlen(slash + 1) >= sizeof(cm->name))
        return pf_fail(err, PF_ERR_USAGE, "baseline_configmap '%s' is not "
                       "namespace/name", spec);
    snprintf(cm->ns, sizeof(cm->ns), "%.*s", (int)(slash - spec), spec);
    snprintf(cm->name, sizeof(cm->name), "%s", slash + 1);
    if (!pf_k8s_name_ok(cm->ns) || !pf_k8s_name_ok(cm->name))
        return pf_fail(err, PF_ERR_USAGE, "baseline_configmap '%s' is not "
                       "namespace/name", spec);
    cm->deadline = deadline;
    pf_config_target(cfg, &t);
    return pf_k8s_open(&t, deadline, cancel, &cm->k, err);
}

void pf_base_cm_close(struct pf_base_cm *cm)
{
    pf_k8s_close(cm->k);
    cm->k = NULL;
}

static pf_err hint(pf_err rc, const struct pf_base_cm *cm, const char *verb,
                   char *err)
{
    if (rc == PF_ERR_FORBIDDEN)
        pf_err_prefix(err, "the fleet baseline needs %s on configmaps in "
                      "namespace %s", verb, cm->ns);
    else
        pf_err_prefix(err, "baseline ConfigMap %s/%s", cm->ns, cm->name);
    return rc;
}

cJSON *pf_base_cm_data(const struct pf_baseline *b)
{
    cJSON *data = cJSON_CreateObject();

    for (int i = 0; data && i < b->n; i++) {
        const struct pf_base_entry *e = &b->e[i];
        char key[256], *text;
        cJSON *o = pf_base_entry_json(e);

        text = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        if (!text) {
            cJSON_Delete(data);
            return NULL;
        }
        pf_base_key(e->type, e->engine, e->kind, e->nodes, e->bytes, key,
                    sizeof(key));
        cJSON_AddStringToObject(data, key, text);
        cJSON_free(text);
    }
    return data;
}

void pf_base_cm_parse_data(const cJSON *data, const char *where,
                           struct pf_baseline *b)
{
    const cJSON *f;

    cJSON_ArrayForEach(f, data) {
        struct pf_base_entry e;
        char what[PF_ERRLEN / 2], msg[PF_ERRLEN];
        cJSON *o = cJSON_IsString(f) ? cJSON_Parse(f->valuestring) : NULL;

        snprintf(what, sizeof(what), "%s: data key '%s'", where, f->string);
        if (!o) {
            pf_warn("%s: not JSON; left out", what);
            continue;
        }
        if (pf_base_entry_parse(o, what, &e, msg) != PF_OK)
            pf_warn("%s; left out", msg);
        else if (pf_base_put(b, &e, msg) != PF_OK)
            pf_warn("%s", msg);
        cJSON_Delete(o);
    }
}

/* GET: *cm_out NULL when there is none. */
static pf_err get_cm(struct pf_base_cm *cm, cJSON **out, char *err)
{
    pf_err rc = pf_k8s_configmap_read(cm->k, cm->ns, cm->name, out, err);

    return rc == PF_OK ? PF_OK : hint(rc, cm, "get", err);
}

pf_err pf_base_cm_read(struct pf_base_cm *cm, struct pf_baseline *b,
                       bool *found, char *err)
{
    cJSON *obj = NULL;
    char where[2 * PF_NAME_MAX + 16];
    pf_err rc = get_cm(cm, &obj, err);

    *found = obj != NULL;
    if (rc != PF_OK || !obj)
        return rc;
    snprintf(where, sizeof(where), "ConfigMap %s/%s", cm->ns, cm->name);
    pf_base_cm_parse_data(pf_json_at(obj, "data"), where, b);
    cJSON_Delete(obj);
    return PF_OK;
}

/* PUT with rv, or POST when rv is NULL. *won false on 409 (someone wrote
 * first, or created it first) and on 404 to a PUT (deleted meanwhile). */
static pf_err put_cm(struct pf_base_cm *cm, const char *rv, cJSON *data,
                     bool *won, char *err)
{
    pf_err rc = pf_k8s_configmap_write(cm->k, cm->ns, cm->name, rv, data,
                                        "efa-preflight", won, err);

    return rc == PF_OK ? PF_OK : hint(rc, cm, rv ? "update" : "create", err);
}

static uint64_t seed(void)
{
    uint64_t h = (uint64_t)pf_now_ms() ^ ((uint64_t)getpid() << 32) ^
                 0x9e3779b97f4a7c15ull;
    return h ? h : 1;
}

pf_err pf_base_cm_fold(struct pf_base_cm *cm, const struct pf_base_obs *obs,
                       int nobs, char *err)
{
    uint64_t rng = seed();
    char now[32];
    pf_err rc = PF_OK;

    pf_rfc3339(now, 0);
    cm->conflicts = 0;
    for (int attempt = 1; attempt <= PF_BASE_CM_ATTEMPTS; attempt++) {
        struct pf_baseline b = { 0 };
        char where[2 * PF_NAME_MAX + 16];
        cJSON *obj = NULL, *data;
        const char *rv;
        bool won = false;
        int64_t d;

        if ((rc = get_cm(cm, &obj, err)) != PF_OK)
            return rc;
        rv = obj ? pf_json_str(obj, "metadata.resourceVersion") : NULL;
        if (obj && !rv) {
            cJSON_Delete(obj);
            return pf_fail(err, PF_ERR_PROTOCOL, "baseline ConfigMap %s/%s "
                           "has no resourceVersion", cm->ns, cm->name);
        }
        snprintf(where, sizeof(where), "ConfigMap %s/%s", cm->ns, cm->name);
        pf_base_cm_parse_data(pf_json_at(obj, "data"), where, &b);
        for (int i = 0; i < nobs && rc == PF_OK; i++)
            rc = pf_base_fold(&b, &obs[i], now, err);
        data = rc == PF_OK ? pf_base_cm_data(&b) : NULL;
        pf_base_free(&b);
        if (rc == PF_OK && !data)
            rc = pf_fail(err, PF_ERR_NOMEM, "baseline: out of memory");
        if (rc == PF_OK)
            rc = put_cm(cm, rv, data, &won, err);
        cJSON_Delete(obj);
        if (rc != PF_OK || won)
            return rc;
        cm->conflicts++;
        pf_debug("baseline ConfigMap %s/%s changed under us (attempt %d); "
                 "folding again", cm->ns, cm->name, attempt);
        d = pf_k8s_backoff_ms(attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS, &rng);
        if (cm->deadline && pf_ms_left(cm->deadline) <= d)
            break;
        pf_sleep_ms(d);
    }
    return pf_fail(err, PF_ERR_TIMEOUT, "baseline ConfigMap %s/%s: still "
                   "contended after %d conflict(s); this run's values are "
                   "left out", cm->ns, cm->name, cm->conflicts);
}

pf_err pf_base_cm_reset(struct pf_base_cm *cm, bool *deleted, char *err)
{
    pf_err rc = pf_k8s_configmap_delete(cm->k, cm->ns, cm->name, deleted, err);

    return rc == PF_OK ? PF_OK : hint(rc, cm, "delete", err);
}
