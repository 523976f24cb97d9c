/* The AdmissionReview answer: always allowed, the uid echoed, the patch as
 * base64 of its JSON text, warnings when given. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/response.h"

Test(response, base64_follows_rfc4648_vectors)
{
    const char *in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
    const char *out[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char *b = pf_base64((const unsigned char *)in[i], strlen(in[i]));
        cr_assert_str_eq(b, out[i]);
        free(b);
    }
    const unsigned char bin[] = { 0xff, 0xfe, 0x00, 0x80 };
    char *b = pf_base64(bin, sizeof bin);
    cr_assert_str_eq(b, "//4AgA==");
    free(b);
}

Test(response, patch_and_warning_are_carried)
{
    cJSON *patch = cJSON_Parse("[{\"op\":\"add\",\"path\":\"/a\",\"value\":1}]");
    char *out, msg[PF_ERRLEN] = "";
    size_t len;
    cr_assert_eq(pf_admission_response("u-1", patch, "be warned", &out, &len, msg), PF_OK);
    cr_assert_eq(len, strlen(out));
    cJSON *doc = cJSON_Parse(out);
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "apiVersion")->valuestring, "admission.k8s.io/v1");
    cr_assert_str_eq(cJSON_GetObjectItem(doc, "kind")->valuestring, "AdmissionReview");
    cJSON *r = cJSON_GetObjectItem(doc, "response");
    cr_assert_str_eq(cJSON_GetObjectItem(r, "uid")->valuestring, "u-1");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "allowed")));
    cr_assert_str_eq(cJSON_GetObjectItem(r, "patchType")->valuestring, "JSONPatch");
    char *text = cJSON_PrintUnformatted(patch);
    char *want = pf_base64((unsigned char *)text, strlen(text));
    cr_assert_str_eq(cJSON_GetObjectItem(r, "patch")->valuestring, want);
    cr_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "warnings"), 0)->valuestring,
                     "be warned");
    free(want);
    free(text);
    free(out);
    cJSON_Delete(doc);
    cJSON_Delete(patch);
}

Test(response, no_patch_means_no_patch_fields)
{
    char *out, msg[PF_ERRLEN] = "";
    size_t len;
    cr_assert_eq(pf_admission_response("", NULL, NULL, &out, &len, msg), PF_OK);
    cJSON *doc = cJSON_Parse(out);
    cJSON *r = cJSON_GetObjectItem(doc, "response");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "allowed")));
    cr_assert_null(cJSON_GetObjectItem(r, "patch"));
    cr_assert_null(cJSON_GetObjectItem(r, "patchType"));
    cr_assert_null(cJSON_GetObjectItem(r, "warnings"));
    cJSON_Delete(doc);
    free(out);
}
