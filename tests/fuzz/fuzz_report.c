/* libFuzzer target: the JSON report and the stdout table, written from a
 * run whose text fields hold whatever sysfs, NCCL, a peer or the API put
 * there (quotes, control bytes, invalid UTF-8) and whose numbers may be
 * NaN or infinite. There is no report reader in the agent, so the round
 * trip is through cJSON: the report must always parse back, and the
 * strings checked must come back byte for byte. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "publish/publish.h"
#include "util/json.h"
#include "util/sanitize.h"
#include "k8s/client.h"

struct src {
    const uint8_t *p;
    size_t n;
};

static uint8_t byte(struct src *s)
{
    uint8_t b = 0;
    if (s->n) {
        b = *s->p++;
        s->n--;
    }
    return b;
}

static double num(struct src *s)
{
    double d = 0;
    uint8_t b[sizeof(d)] = { 0 };
    for (size_t i = 0; i < sizeof(b); i++)
        b[i] = byte(s);
    memcpy(&d, b, sizeof(d));
    return d;
}

/* A string up to the next NUL of the input (or the field's size). */
static void text(struct src *s, char *out, size_t cap)
{
    size_t i = 0;
    while (s->n && i + 1 < cap) {
        uint8_t b = byte(s);
        if (!b)
            break;
        out[i++] = (char)b;
    }
    out[i] = '\0';
}

/* The report holds outside strings sanitised (util/sanitize.h, cut to
 * PF_SAN_JSON_MAX): compare with the same treatment. */
static void same(const cJSON *doc, const char *path, const char *want)
{
    static char clean[PF_SAN_JSON_MAX];
    const char *got = pf_json_str(doc, path);

    pf_sanitize(clean, sizeof(clean), want);
    if (clean[0] && (!got || strcmp(got, clean)))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct pf_run run;
    struct src s = { data, size };
    char *json, *table = NULL;
    size_t tlen = 0;
    cJSON *doc, *checks;
    FILE *out;

    memset(&run, 0, sizeof(run));
    run.cfg.command = (enum pf_command)(byte(&s) % 5);
    text(&s, run.cfg.fabric_provider, sizeof(run.cfg.fabric_provider));
    text(&s, run.node.hostname, sizeof(run.node.hostname));
    text(&s, run.node.instance_type, sizeof(run.node.instance_type));
    text(&s, run.node.libfabric_error, sizeof(run.node.libfabric_error));
    run.node.efa_count = (int)(byte(&s) % (PF_MAX_EFA + 8));
    for (int i = 0; i < run.node.efa_count && i < PF_MAX_EFA && s.n; i++)
        text(&s, run.node.efa[i].name, sizeof(run.node.efa[i].name));
    run.node.memlock_soft = byte(&s) & 1 ? UINT64_MAX : 65536;
    run.node.gpu_count = (int)(byte(&s) % (PF_MAX_GPUS + 4));
    run.node.gpuh.nvml_loaded = byte(&s) & 1;
    text(&s, run.node.gpuh.nvml_error, sizeof(run.node.gpuh.nvml_error));
    text(&s, run.node.gpuh.driver_version,
         sizeof(run.node.gpuh.driver_version));
    run.node.gpuh.stored = (int)(byte(&s) % (PF_MAX_GPUS + 4));
    for (int i = 0; i < run.node.gpuh.stored && i < PF_MAX_GPUS && s.n; i++) {
        struct pf_gpu_state *g = &run.node.gpuh.gpus[i];
        text(&s, g->serial, sizeof(g->serial));
        text(&s, g->bus_id, sizeof(g->bus_id));
        text(&s, g->field_err, sizeof(g->field_err));
        g->f[byte(&s) % PF_GF_COUNT] = (enum pf_gpu_field_state)(byte(&s) % 4);
        g->xid_run.n = (int)(byte(&s) % (PF_MAX_XIDS + 4));
        for (int k = 0; k < PF_MAX_XIDS && s.n; k++)
            g->xid_run.x[k].xid = (int)byte(&s) - 8;
    }
    run.coll.ran = byte(&s) & 1;
    run.coll.fault.err = (pf_err)(byte(&s) % 17);
    run.coll.fault.reason = (enum pf_reason)(byte(&s) % (PF_R_COUNT + 2));
    text(&s, run.coll.fault.msg, sizeof(run.coll.fault.msg));
    text(&s, run.coll.fabric.transport, sizeof(run.coll.fabric.transport));
    run.coll.nranks = byte(&s);
    run.coll.nnodes = byte(&s);
    run.coll.slow_rank = (int)byte(&s) - 1;
    run.coll.nrows = byte(&s) % (PF_MAX_ROWS + 4);
    for (int i = 0; i < run.coll.nrows && i < PF_MAX_ROWS && s.n; i++) {
        run.coll.rows[i].bytes = (uint64_t)1 << (byte(&s) % 40);
        run.coll.rows[i].oop_us = num(&s);
        run.coll.rows[i].oop_busbw = num(&s);
        run.coll.rows[i].ip_wrong = (long)byte(&s) - 1;
    }
    run.coll.avg_busbw = num(&s);
    run.coll.peak_busbw = num(&s);
    run.verdict.n = byte(&s) % (PF_MAX_CHECKS + 1);
    for (int i = 0; i < run.verdict.n; i++) {
        struct pf_check *c = &run.verdict.checks[i];
        c->status = (enum pf_status)(byte(&s) % 4);
        snprintf(c->condition, sizeof(c->condition), "%s",
                 i % 2 ? "EFAFabricReady" : "EFADevicesReady");
        text(&s, c->name, sizeof(c->name));
        c->reason = (enum pf_reason)(byte(&s) % (PF_R_COUNT + 2));
        text(&s, c->message, sizeof(c->message));
        text(&s, c->remedy, sizeof(c->remedy));
    }
    run.verdict.overall = (enum pf_status)(byte(&s) % 4);
    run.verdict.headline = (enum pf_reason)(byte(&s) % (PF_R_COUNT + 2));
    run.verdict.cls = (enum pf_reason_class)(byte(&s) % 8);
    run.verdict.exit_code = byte(&s) % 4;

    json = pf_report_json(&run);
    if (!json)
        __builtin_trap();
    doc = cJSON_Parse(json);
    if (!doc)
        __builtin_trap();
    same(doc, "node.hostname", run.node.hostname);
    same(doc, "node.libfabric.error", run.node.libfabric_error);
    same(doc, "node.gpu_health.nvml_error", run.node.gpuh.nvml_error);
    checks = cJSON_GetObjectItemCaseSensitive(doc, "checks");
    if (cJSON_GetArraySize(checks) != run.verdict.n)
        __builtin_trap();
    for (int i = 0; i < run.verdict.n; i++) {
        const cJSON *c = cJSON_GetArrayItem(checks, i);
        same(c, "reason", pf_reason_name(run.verdict.checks[i].reason));
        same(c, "message", run.verdict.checks[i].message);
    }
    cJSON_Delete(doc);
    free(json);

    out = open_memstream(&table, &tlen);
    if (out) {
        pf_publish_table(&run, out);
        fclose(out);
        free(table);
    }
    return 0;
}
