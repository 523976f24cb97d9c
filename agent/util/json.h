/* Small helpers for the JSON the agent writes (cJSON). */
#ifndef PF_JSON_H
#define PF_JSON_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/* key: s, or null when s is NULL or empty (the report's and the catalog's
 * "not known"). */
void pf_json_add_text(cJSON *o, const char *key, const char *s);
/* key: v when known, else null. */
void pf_json_add_number_if(cJSON *o, const char *key, bool known, double v);

#endif
