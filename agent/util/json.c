#include "json.h"

void pf_json_add_text(cJSON *o, const char *key, const char *s)
{
    if (s && s[0])
        cJSON_AddStringToObject(o, key, s);
    else
        cJSON_AddNullToObject(o, key);
}
