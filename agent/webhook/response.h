/* response: the AdmissionReview answer. Always allowed: the gate is added by
 * patch, never by refusing a Pod (a webhook outage or a bug must not stop
 * pod creation). */
#ifndef PF_WEBHOOK_RESPONSE_H
#define PF_WEBHOOK_RESPONSE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "../util/err.h"

/* {"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":
 * {"uid":uid,"allowed":true[,"patchType":"JSONPatch","patch":base64(patch)]
 * [,"warnings":[warning]]}} into *out (malloc'd, *len bytes). patch and
 * warning may be NULL. */
pf_err pf_admission_response(const char *uid, const cJSON *patch, const char *warning,
                             char **out, size_t *len, char *msg);

/* Standard base64 (RFC 4648, padded) of n bytes into a malloc'd string. */
char *pf_base64(const unsigned char *in, size_t n);

#endif
