/* review: an admission.k8s.io/v1 AdmissionReview, read with cJSON.
 *
 * The parser never trusts the body: any shape it does not expect is an
 * error with a message, and whatever could be read (the uid above all, which
 * the answer must echo) is kept so the server can still answer
 * allowed:true. */
#ifndef PF_WEBHOOK_REVIEW_H
#define PF_WEBHOOK_REVIEW_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "../util/err.h"

struct pf_review {
    char uid[128];          /* request.uid, "" when absent or unusable */
    char ns[256];           /* request.namespace ("" for cluster-scoped) */
    bool pod_create;        /* a Pod CREATE on the pods resource itself */
    const char *not_pod;    /* why not, when !pod_create (static text) */
    cJSON *doc;             /* the whole review, owned */
    const cJSON *pod;       /* request.object inside doc, when pod_create */
};

/* Parse body (len bytes, need not be NUL-terminated). PF_OK for any well
 * formed review, pod_create telling whether it is one to look at; an error
 * (PF_ERR_PROTOCOL) for anything else, with r->uid filled when it could be
 * read. pf_review_free is safe after either. */
pf_err pf_review_parse(const char *body, size_t len, struct pf_review *r, char *msg);
void pf_review_free(struct pf_review *r);

#endif
