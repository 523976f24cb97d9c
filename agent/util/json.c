#include "json.h"

#include <string.h>

void pf_json_add_text(cJSON *o, const char *key, const char *s)
{
    if (s && s[0])
        cJSON_AddStringToObject(o, key, s);
    else
        cJSON_AddNullToObject(o, key);
}

void pf_json_add_number_if(cJSON *o, const char *key, bool known, double v)
{
    if (known)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

const cJSON *pf_json_at(const cJSON *obj, const char *path)
{
    char key[128];
    const char *p = path;

    while (obj && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        obj = cJSON_GetObjectItemCaseSensitive(obj, key);
        p = dot ? dot + 1 : p + n;
    }
    return obj;
}

const char *pf_json_str(const cJSON *obj, const char *path)
{
    const cJSON *v = pf_json_at(obj, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
