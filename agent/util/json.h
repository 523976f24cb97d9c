/* Small helpers for the JSON the agent reads and writes (cJSON). */
#ifndef PF_JSON_H
#define PF_JSON_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/* key: s, or null when s is NULL or empty (the report's and the catalog's
 * "not known"). */
void pf_json_add_text(cJSON *o, const char *key, const char *s);
/* key: v when known, else null. */
void pf_json_add_number_if(cJSON *o, const char *key, bool known, double v);

/* Readers that tolerate missing fields: the item at a dotted path
 * ("a.b.c"), or the string there (NULL when absent or not a string). */
const cJSON *pf_json_at(const cJSON *obj, const char *path);
const char *pf_json_str(const cJSON *obj, const char *path);

#endif
