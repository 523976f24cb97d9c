#include "json.h"

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
