/* Names, labels and object heads: pure. */
#include "object.h"

#include <ctype.h>
#include <string.h>

bool pf_k8s_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > PF_K8S_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
              c == '-' || c == '.'))
            return false;
        /* DNS-1123: every dot-separated part starts and ends with an
         * alphanumeric, as the API server checks ("a..b", "a-.b" fail). */
        if (c == '.' && i > 0 && i + 1 < n &&
            (s[i - 1] == '.' || s[i - 1] == '-' || s[i + 1] == '-'))
            return false;
    }
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

static bool label_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

bool pf_label_value_ok(const char *v)
{
    return v && (*v == '\0' || label_name_ok(v, strlen(v)));
}

bool pf_label_key_ok(const char *k)
{
    const char *slash = k ? strchr(k, '/') : NULL;
    char prefix[254];
    size_t plen;

    if (!k)
        return false;
    if (!slash)
        return label_name_ok(k, strlen(k));
    plen = (size_t)(slash - k);
    if (plen == 0 || plen > PF_K8S_NAME_MAX)
        return false;
    memcpy(prefix, k, plen);
    prefix[plen] = '\0';
    return pf_k8s_name_ok(prefix) && label_name_ok(slash + 1,
                                                    strlen(slash + 1));
}

cJSON *pf_k8s_object(const char *api_version, const char *kind,
                      const char *name, const char *ns, const char *rv)
{
    cJSON *o = cJSON_CreateObject(), *md;

    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", kind);
    md = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ns);
    if (rv)
        cJSON_AddStringToObject(md, "resourceVersion", rv);
    return o;
}
