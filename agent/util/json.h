/* Small helpers for the JSON the agent writes (cJSON). */
#ifndef PF_JSON_H
#define PF_JSON_H

#include <cjson/cJSON.h>

/* key: s, or null when s is NULL or empty (the report's and the catalog's
 * "not known"). */
void pf_json_add_text(cJSON *o, const char *key, const char *s);

#endif
