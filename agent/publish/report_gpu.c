/* node.gpu_health in the report (report_gpu.h). */
#include "report_gpu.h"

#include "../probe/gpu_health.h"
#include "../probe/xid.h"
#include "../util/json.h"

static cJSON *xids_json(const struct pf_xid_list *l)
{
    cJSON *arr = cJSON_CreateArray();

    for (int k = 0; k < l->n && k < PF_MAX_XIDS; k++) {
        const struct pf_xid_info *xi = pf_xid_info(l->x[k].xid);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "xid", l->x[k].xid);
        cJSON_AddNumberToObject(x, "count", l->x[k].count);
        cJSON_AddStringToObject(x, "class", pf_xid_kind_name(xi->kind));
        pf_json_add_text(x, "what", xi->what);
        cJSON_AddItemToArray(arr, x);
    }
    return arr;
}

static cJSON *nvl_json(const struct pf_nvlink_errs *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "replay", (double)e->replay);
    cJSON_AddNumberToObject(o, "recovery", (double)e->recovery);
    cJSON_AddNumberToObject(o, "crc_flit", (double)e->crc_flit);
    cJSON_AddNumberToObject(o, "crc_data", (double)e->crc_data);
    return o;
}

/* A value only where its field read; null otherwise. */
#define NUM_IF(o, key, field, v)                                            \
    do {                                                                    \
        if (g->f[field] == PF_GFS_OK)                                       \
            cJSON_AddNumberToObject(o, key, (double)(v));                   \
        else                                                                \
            cJSON_AddNullToObject(o, key);                                  \
    } while (0)

static cJSON *gpu_json(const struct pf_gpu_state *g)
{
    cJSON *o = cJSON_CreateObject(), *f, *x;

    cJSON_AddNumberToObject(o, "index", g->index);
    pf_json_add_text(o, "bus_id", g->bus_id);
    pf_json_add_text(o, "uuid", g->uuid);
    pf_json_add_text(o, "serial", g->serial);
    pf_json_add_text(o, "name", g->name);
    cJSON_AddBoolToObject(o, "lost", g->lost);
    pf_json_add_text(o, "error", g->field_err);
    f = cJSON_AddObjectToObject(o, "fields");
    for (int k = 0; k < PF_GF_COUNT; k++)
        cJSON_AddStringToObject(f, pf_gpu_field_name((enum pf_gpu_field)k),
                                pf_gpu_field_state_name(g->f[k]));
    NUM_IF(o, "ecc_enabled", PF_GF_ECC_MODE, g->ecc_current);
    NUM_IF(o, "ecc_volatile_uncorrected", PF_GF_ECC_VOLATILE,
           g->ecc_volatile_unc);
    NUM_IF(o, "ecc_aggregate_uncorrected", PF_GF_ECC_AGGREGATE,
           g->ecc_aggregate_unc);
    NUM_IF(o, "retired_pages_sbe", PF_GF_RETIRED_PAGES, g->retired_sbe);
    NUM_IF(o, "retired_pages_dbe", PF_GF_RETIRED_PAGES, g->retired_dbe);
    NUM_IF(o, "retired_pending", PF_GF_RETIRED_PENDING, g->retired_pending);
    NUM_IF(o, "remapped_rows_correctable", PF_GF_REMAPPED_ROWS, g->remap_corr);
    NUM_IF(o, "remapped_rows_uncorrectable", PF_GF_REMAPPED_ROWS,
           g->remap_unc);
    NUM_IF(o, "remap_pending", PF_GF_REMAPPED_ROWS, g->remap_pending);
    NUM_IF(o, "remap_failure", PF_GF_REMAPPED_ROWS, g->remap_failure);
    x = cJSON_AddObjectToObject(o, "nvlink");
    cJSON_AddNumberToObject(x, "links", g->nvlinks);
    cJSON_AddNumberToObject(x, "active", g->nvlinks_active);
    if (g->f[PF_GF_NVLINK_ERRORS] == PF_GFS_OK) {
        cJSON_AddItemToObject(x, "errors_before", nvl_json(&g->nvl_before));
        cJSON_AddItemToObject(x, "errors_after", nvl_json(&g->nvl_after));
    }
    x = cJSON_AddObjectToObject(o, "pcie");
    NUM_IF(x, "gen", PF_GF_PCIE_LINK, g->pcie_gen);
    NUM_IF(x, "width", PF_GF_PCIE_LINK, g->pcie_width);
    NUM_IF(x, "gen_after_run", PF_GF_PCIE_LINK, g->pcie_gen_run);
    NUM_IF(x, "width_after_run", PF_GF_PCIE_LINK, g->pcie_width_run);
    NUM_IF(x, "max_gen", PF_GF_PCIE_MAX, g->pcie_max_gen);
    NUM_IF(x, "max_width", PF_GF_PCIE_MAX, g->pcie_max_width);
    NUM_IF(x, "replay_before", PF_GF_PCIE_REPLAY, g->pcie_replay_before);
    NUM_IF(x, "replay_after", PF_GF_PCIE_REPLAY, g->pcie_replay_after);
    NUM_IF(o, "clock_events_before", PF_GF_CLOCK_EVENTS, g->clocks_before);
    NUM_IF(o, "clock_events_after", PF_GF_CLOCK_EVENTS, g->clocks_after);
    NUM_IF(o, "persistence", PF_GF_PERSISTENCE, g->persistence);
    NUM_IF(o, "mig", PF_GF_MIG, g->mig_current);
    cJSON_AddItemToObject(o, "xid_run", xids_json(&g->xid_run));
    cJSON_AddItemToObject(o, "xid_since_boot", xids_json(&g->xid_boot));
    return o;
}

cJSON *pf_report_gpu_health(const struct pf_gpu_health *h)
{
    cJSON *o = cJSON_CreateObject(), *arr;

    cJSON_AddBoolToObject(o, "nvml_loaded", h->nvml_loaded);
    pf_json_add_text(o, "nvml_error", h->nvml_error);
    pf_json_add_text(o, "nvml_path", h->nvml_path);
    pf_json_add_text(o, "nvml_missing", h->nvml_missing);
    pf_json_add_text(o, "driver_version", h->driver_version);
    cJSON_AddNumberToObject(o, "cuda_driver_version", h->cuda_driver_version);
    cJSON_AddNumberToObject(o, "count", h->count);
    cJSON_AddBoolToObject(o, "events_armed", h->events_armed);
    pf_json_add_text(o, "events_note", h->events_note);
    cJSON_AddStringToObject(o, "window", h->window ? "all_reduce" : "run");
    cJSON_AddNumberToObject(o, "window_s", h->window_s);
    cJSON_AddBoolToObject(o, "kernel_log_read", h->kmsg_read);
    pf_json_add_text(o, "kernel_log_note", h->kmsg_note);
    cJSON_AddNumberToObject(o, "read_ms", h->probe_ms);
    pf_json_add_text(o, "xid_table_source", pf_xid_source);
    arr = cJSON_AddArrayToObject(o, "devices");
    for (int i = 0; i < h->stored && i < PF_MAX_GPUS; i++)
        cJSON_AddItemToArray(arr, gpu_json(&h->gpus[i]));
    arr = cJSON_AddArrayToObject(o, "kernel_xids_unmatched");
    for (int i = 0; i < h->nstray && i < PF_MAX_XIDS; i++) {
        cJSON *x = cJSON_CreateObject();
        pf_json_add_text(x, "bus", h->stray[i].bus);
        cJSON_AddNumberToObject(x, "xid", h->stray[i].xid);
        cJSON_AddNumberToObject(x, "count", h->stray[i].count);
        cJSON_AddItemToArray(arr, x);
    }
    return o;
}
