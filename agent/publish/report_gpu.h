/* The report's node.gpu_health (docs/report-schema.md): what NVML and the
 * kernel log said of every GPU, each field with its outcome. */
#ifndef PF_REPORT_GPU_H
#define PF_REPORT_GPU_H

#include <cjson/cJSON.h>

#include "../types/gpu_health.h"

cJSON *pf_report_gpu_health(const struct pf_gpu_health *h);

#endif
