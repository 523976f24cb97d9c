/* The raw client (client.h): its state, the token, open and close, and
 * query escaping. One request and its retries are request.c's, a watch
 * stream watch.c's. */
#include "client_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../util/clock.h"
#include "../util/fsutil.h"

pf_err pf_kube_query_escape(const char *in, char *out, size_t len, char *err)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        bool plain = isalnum(*p) || *p == '-' || *p == '_' || *p == '.' ||
                     *p == '~';
        if (o + (plain ? 1 : 3) >= len)
            return pf_fail(err, PF_ERR_USAGE, "query value too long: %.64s",
                           in);
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (len == 0)
        return pf_fail(err, PF_ERR_USAGE, "no room for query value");
    out[o] = '\0';
    return PF_OK;
}

void pf_kc_wipe(char *p, size_t n)
{
    volatile char *v = p;
    while (n--)
        *v++ = 0;
}

pf_err pf_kc_load_token(struct pf_kube *k, char *err)
{
    char *data = NULL, why[PF_ERRLEN] = "";
    size_t len = 0;
    pf_err rc;

    if (!k->o.token_file[0])
        return PF_OK;
    /* why starts with the path: "<path>: not a regular file (a FIFO)" */
    rc = pf_read_file(k->o.token_file, TOKEN_MAX, &data, &len, why);
    if (rc != PF_OK)
        return pf_fail(err, rc, "cannot read token file %s", why);
    while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' ||
                       data[len - 1] == ' '))
        data[--len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)data[i] < 0x21 || (unsigned char)data[i] > 0x7e) {
            pf_kc_wipe(data, len);
            free(data);
            return pf_fail(err, PF_ERR_USAGE,
                           "token file %s holds a character not allowed in "
                           "an HTTP header", k->o.token_file);
        }
    }
    if (k->token) {
        pf_kc_wipe(k->token, strlen(k->token));
        free(k->token);
    }
    k->token = data;
    k->token_read_ms = pf_now_ms();
    return PF_OK;
}

void pf_kube_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

pf_err pf_kube_open(const struct pf_kube_opts *o, struct pf_kube **out,
                    char *err)
{
    struct pf_kube *k = calloc(1, sizeof(*k));
    pf_err rc;

    *out = NULL;
    if (!k)
        return pf_fail(err, PF_ERR_NOMEM, "out of memory");
    k->o = *o;
    if (k->o.max_attempts < 1)
        k->o.max_attempts = 1;
    k->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^
             (uint64_t)pf_now_ms();
    rc = pf_kc_load_token(k, err);
    if (rc != PF_OK) {
        free(k);
        return rc;
    }
    k->curl = curl_easy_init();
    if (!k->curl) {
        pf_kube_close(k);
        return pf_fail(err, PF_ERR_SYS, "curl_easy_init failed");
    }
    *out = k;
    return PF_OK;
}

void pf_kube_close(struct pf_kube *k)
{
    if (!k)
        return;
    if (k->curl)
        curl_easy_cleanup(k->curl);
    if (k->token) {
        pf_kc_wipe(k->token, strlen(k->token));
        free(k->token);
    }
    free(k);
}

void pf_kube_resp_free(struct pf_kube_resp *r)
{
    if (r->json)
        cJSON_Delete(r->json);
    memset(r, 0, sizeof(*r));
}
