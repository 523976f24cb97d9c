/* response: the AdmissionReview answer, the patch base64-encoded. */
#include "response.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *pf_base64(const unsigned char *in, size_t n)
{
    static const char tbl[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > (SIZE_MAX - 1) / 4 * 3 - 3)
        return NULL;
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = tbl[v >> 6 & 63];
        *o++ = tbl[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = i + 1 < n ? tbl[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

pf_err pf_admission_response(const char *uid, const cJSON *patch, const char *warning,
                             char **out, size_t *len, char *msg)
{
    *out = NULL;
    *len = 0;
    char *patch_text = NULL, *patch_b64 = NULL;
    pf_err e = PF_OK;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "apiVersion", "admission.k8s.io/v1");
    cJSON_AddStringToObject(doc, "kind", "AdmissionReview");
    cJSON *r = cJSON_AddObjectToObject(doc, "response");
    cJSON_AddStringToObject(r, "uid", uid ? uid : "");
    cJSON_AddBoolToObject(r, "allowed", 1);
    if (patch) {
        patch_text = cJSON_PrintUnformatted(patch);
        patch_b64 = patch_text ? pf_base64((const unsigned char *)patch_text,
                                           strlen(patch_text)) : NULL;
        if (!patch_b64) {
            e = pf_fail(msg, PF_ERR_NOMEM, "out of memory encoding the patch");
            goto out;
        }
        cJSON_AddStringToObject(r, "patchType", "JSONPatch");
        cJSON_AddStringToObject(r, "patch", patch_b64);
    }
    if (warning) {
        cJSON *w = cJSON_AddArrayToObject(r, "warnings");
        cJSON_AddItemToArray(w, cJSON_CreateString(warning));
    }
    *out = cJSON_PrintUnformatted(doc);
    if (!*out) {
        e = pf_fail(msg, PF_ERR_NOMEM, "out of memory writing the response");
        goto out;
    }
    *len = strlen(*out);
out:
    free(patch_b64);
    free(patch_text);
    cJSON_Delete(doc);
    return e;
}
