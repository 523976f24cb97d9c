/* libFuzzer target: a --baseline file (baseline/baseline.h). Accepted
 * input round-trips through its JSON and the ConfigMap's data unchanged;
 * medians stay within the values; rejected input names the file. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baseline/baseline.h"
#include "baseline/configmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_baseline b = { 0 }, again = { 0 }, cm = { 0 };
    char err[PF_ERRLEN] = "";
    char *text;
    cJSON *j, *d;

    if (pf_base_parse("fuzz.json", (const char *)data, size, &b, err) !=
        PF_OK) {
        if (!strstr(err, "fuzz.json"))
            __builtin_trap();
        pf_base_free(&b);
        return 0;
    }
    for (int i = 0; i < b.n; i++) {
        double m = pf_base_median(&b.e[i]), lo = INFINITY, hi = 0;
        if (b.e[i].n < 0 || b.e[i].n > PF_BASE_K || b.e[i].runs < b.e[i].n)
            __builtin_trap();
        for (int k = 0; k < b.e[i].n; k++) {
            lo = fmin(lo, b.e[i].v[k]);
            hi = fmax(hi, b.e[i].v[k]);
        }
        if (b.e[i].n && (m < lo || m > hi))
            __builtin_trap();
    }
    j = pf_base_json(&b);
    text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (text) {
        /* Values are written with six digits: the count survives. */
        if (pf_base_parse("again.json", text, strlen(text), &again, err) !=
                PF_OK || again.n != b.n)
            __builtin_trap();
        cJSON_free(text);
    }
    d = pf_base_cm_data(&b);
    if (d) {
        pf_base_cm_parse_data(d, "fuzz", &cm);
        if (cm.n != b.n)
            __builtin_trap();
        cJSON_Delete(d);
    }
    pf_base_free(&b);
    pf_base_free(&again);
    pf_base_free(&cm);
    return 0;
}
