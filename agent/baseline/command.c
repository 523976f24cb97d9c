/* `efa-preflight baseline` (command.h). */
#include "command.h"

#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "configmap.h"
#include "source.h"

#define REPORT_MAX (64u << 20)
#define CM_BUDGET_MS 30000

static void size_words(uint64_t b, char *out, size_t len)
{
    if (b >= (1ull << 30) && !(b % (1ull << 30)))
        snprintf(out, len, "%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= (1ull << 20) && !(b % (1ull << 20)))
        snprintf(out, len, "%llu MiB", (unsigned long long)(b >> 20));
    else if (b >= 1024 && !(b % 1024))
        snprintf(out, len, "%llu KiB", (unsigned long long)(b >> 10));
    else
        snprintf(out, len, "%llu B", (unsigned long long)b);
}

void pf_base_print(const struct pf_baseline *b, double fraction, FILE *out)
{
    fprintf(out, "%-20s %-6s %-5s %6s %9s %6s %6s %12s %12s\n", "TYPE",
            "ENGINE", "KIND", "NODES", "SIZE", "RUNS", "KEPT", "MEDIAN GB/s",
            "HELD TO GB/s");
    for (int i = 0; i < b->n; i++) {
        const struct pf_base_entry *e = &b->e[i];
        char size[24], held[24];
        double m = pf_base_median(e);

        size_words(e->bytes, size, sizeof(size));
        if (strcmp(e->kind, "pair"))
            snprintf(held, sizeof(held), "-");
        else if (e->n < PF_BASE_MIN_RUNS)
            snprintf(held, sizeof(held), "(< %d runs)", PF_BASE_MIN_RUNS);
        else
            snprintf(held, sizeof(held), "%.3f", fraction * m);
        fprintf(out, "%-20s %-6s %-5s %6d %9s %6ld %6d %12.3f %12s\n",
                e->type, e->engine, e->kind, e->nodes, size, e->runs, e->n, m,
                held);
    }
}

/* In a pod, or told where the API server is. */
static bool k8s_reachable(const struct pf_config *cfg)
{
    return cfg->api_server[0] || getenv("KUBERNETES_SERVICE_HOST");
}

static int fold_report(struct pf_base_cm *cm, const char *path)
{
    struct pf_base_obs obs[PF_BASE_MAX_OBS];
    char err[PF_ERRLEN] = "", *text;
    cJSON *root;
    int n;

    if (pf_read_file(path, REPORT_MAX, &text, NULL, err) != PF_OK) {
        pf_say("baseline --fold: %s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    root = cJSON_Parse(text);
    free(text);
    n = root ? pf_base_obs_from_report(root, obs, PF_BASE_MAX_OBS) : -1;
    cJSON_Delete(root);
    if (n < 0) {
        pf_say("baseline --fold: %s: not an efa-preflight report with "
               "'baseline.observed'", path);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    if (n == 0) {
        pf_say("baseline --fold: %s: the run did not pass, or measured "
               "nothing the baseline keeps: nothing folded", path);
        return PF_EXIT_PASS;
    }
    if (pf_base_cm_fold(cm, obs, n, err) != PF_OK) {
        pf_say("baseline --fold: %s", err);
        return pf_class_exit_code(PF_CLASS_INFRA);
    }
    printf("folded %d value(s) from %s into ConfigMap %s/%s (%d "
           "conflict(s) retried)\n", n, path, cm->ns, cm->name,
           cm->conflicts);
    return PF_EXIT_PASS;
}

int pf_baseline_command(struct pf_run *run)
{
    const struct pf_config *cfg = &run->cfg;
    struct pf_baseline *b = &run->baseline;
    struct pf_base_cm cm = { 0 };
    char err[PF_ERRLEN] = "";
    bool k8s = k8s_reachable(cfg) && cfg->baseline_configmap[0];
    int code = PF_EXIT_PASS;
    pf_err rc;

    if ((cfg->baseline_reset || cfg->baseline_fold[0]) && !k8s) {
        pf_say("baseline: --reset and --fold work on the ConfigMap: run in "
               "a pod or give --api-server (outside Kubernetes, delete or "
               "edit the --baseline file, or the --history-dir reports)");
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    if (cfg->baseline_file[0] &&
        (rc = pf_base_load_file(cfg->baseline_file, b, err)) != PF_OK) {
        pf_say("%s", err);
        return pf_class_exit_code(PF_CLASS_USAGE);
    }
    if (cfg->history_dir[0] &&
        (rc = pf_base_from_history(cfg->history_dir, b, err)) != PF_OK) {
        pf_say("baseline: %s", err);
        return pf_class_exit_code(pf_err_class(rc));
    }
    if (k8s) {
        bool found = false, deleted = false;

        rc = pf_base_cm_open(cfg, pf_deadline_in(CM_BUDGET_MS), NULL, &cm,
                             err);
        if (rc == PF_OK && cfg->baseline_reset) {
            rc = pf_base_cm_reset(&cm, &deleted, err);
            if (rc == PF_OK)
                printf("%s ConfigMap %s: the baseline starts again from the "
                       "next passed runs\n", deleted ? "deleted" : "no",
                       cfg->baseline_configmap);
        } else if (rc == PF_OK && cfg->baseline_fold[0]) {
            code = fold_report(&cm, cfg->baseline_fold);
        } else if (rc == PF_OK) {
            rc = pf_base_cm_read(&cm, b, &found, err);
            if (rc == PF_OK && !found)
                pf_say("baseline: no ConfigMap %s yet",
                       cfg->baseline_configmap);
        }
        pf_base_cm_close(&cm);
        if (rc != PF_OK) {
            pf_say("baseline: %s", err);
            return pf_class_exit_code(pf_err_class(rc));
        }
        if (cfg->baseline_reset || cfg->baseline_fold[0])
            return code;
    }
    if (cfg->json) {
        cJSON *j = pf_base_json(b);
        char *text = j ? cJSON_Print(j) : NULL;
        cJSON_Delete(j);
        if (!text) {
            pf_say("baseline: out of memory");
            return pf_class_exit_code(PF_CLASS_INFRA);
        }
        printf("%s\n", text);
        cJSON_free(text);
    } else if (b->n == 0) {
        printf("no baseline yet: the catalog floor alone judges (give "
               "--baseline FILE or --history-dir DIR, or run in Kubernetes "
               "where passed runs fill ConfigMap %s)\n",
               cfg->baseline_configmap);
    } else {
        pf_base_print(b, cfg->baseline_fraction, stdout);
        printf("pair links are held to the larger of the catalog floor and "
               "%.2f x the median, from %d runs on\n", cfg->baseline_fraction,
               PF_BASE_MIN_RUNS);
    }
    return code;
}
