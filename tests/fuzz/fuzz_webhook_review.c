/* libFuzzer target: a request body through the webhook's whole answer
 * (AdmissionReview parser, patch builder, response). The first byte picks
 * the input's role: odd, the rest is the body as sent; even, the rest is the
 * Pod object inside a well-formed review, so the patch builder sees most
 * inputs (DRA claims of the names efa-* and gpu* count as devices). Invariants: the answer is JSON with allowed:true and the uid
 * echoed as a string; a patch is present exactly when the outcome is
 * "injected", and then decodes from base64 to a JSON array of "add"
 * operations whose paths start with /spec/ or /metadata. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "webhook/webhook.h"

static const struct pf_webhook_opts opts = {
    .own_namespace = "efa-preflight",
    .gate = { .agent_image = "a:1", .prefix = "efa-preflight.io/", .timeout_s = 60,
              .port = 29600, .dra_claims = "efa-*,gpu*" },
};

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static char *unbase64(const char *s)
{
    size_t n = strlen(s), o = 0;
    if (n % 4)
        abort();
    char *out = malloc(n / 4 * 3 + 1);
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++)
            v[k] = s[i + k] == '=' ? 0 : b64val(s[i + k]);
        if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
            abort();
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (char)(w >> 16);
        if (s[i + 2] != '=') out[o++] = (char)(w >> 8);
        if (s[i + 3] != '=') out[o++] = (char)w;
    }
    out[o] = '\0';
    return out;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    pf_log_set_level(PF_LOG_ERROR); /* a warning per malformed input would dominate */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    char *wrapped = NULL;
    if (!(data[0] & 1)) {
        static const char head[] =
            "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
            "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
            "\"namespace\":\"ns\",\"operation\":\"CREATE\",\"object\":";
        wrapped = malloc(sizeof head + len + 3);
        memcpy(wrapped, head, sizeof head - 1);
        memcpy(wrapped + sizeof head - 1, body, len);
        memcpy(wrapped + sizeof head - 1 + len, "}}", 2);
        body = wrapped;
        len = sizeof head - 1 + len + 2;
    }
    char *out = NULL, msg[PF_ERRLEN];
    size_t out_len = 0;
    enum pf_webhook_outcome oc;
    if (pf_webhook_review(&opts, body, len, &out, &out_len, &oc, msg) != PF_OK) {
        free(wrapped);
        return 0; /* out of memory only */
    }
    cJSON *doc = cJSON_ParseWithLength(out, out_len);
    if (!doc)
        abort();
    cJSON *r = cJSON_GetObjectItem(doc, "response");
    if (!cJSON_IsTrue(cJSON_GetObjectItem(r, "allowed")) ||
        !cJSON_IsString(cJSON_GetObjectItem(r, "uid")))
        abort();
    cJSON *patch = cJSON_GetObjectItem(r, "patch");
    if ((oc == PF_WH_INJECTED) != (patch != NULL))
        abort();
    if (patch) {
        char *text = unbase64(patch->valuestring);
        cJSON *ops = cJSON_Parse(text);
        if (!cJSON_IsArray(ops) || cJSON_GetArraySize(ops) < 2)
            abort();
        const cJSON *op;
        cJSON_ArrayForEach(op, ops) {
            const cJSON *o = cJSON_GetObjectItem(op, "op"), *p = cJSON_GetObjectItem(op, "path");
            if (!cJSON_IsString(o) || strcmp(o->valuestring, "add") || !cJSON_IsString(p) ||
                (strncmp(p->valuestring, "/spec/", 6) && strncmp(p->valuestring, "/metadata", 9)) ||
                !cJSON_GetObjectItem(op, "value"))
                abort();
        }
        cJSON_Delete(ops);
        free(text);
    }
    cJSON_Delete(doc);
    free(out);
    free(wrapped);
    return 0;
}
