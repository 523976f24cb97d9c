/* The instance-type catalog: agent/catalog.yaml is embedded at build time;
 * --catalog FILE overrides entries by name and adds new ones. */
#ifndef PF_CATALOG_H
#define PF_CATALOG_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "../types/catalog.h"
#include "../types/config.h"
#include "../util/err.h"

/* The embedded catalog.yaml text (NUL-terminated), from catalog_blob.S. */
extern const char pf_catalog_yaml[];

/* Parse catalog YAML text and merge it into cat (entries with the same name
 * are replaced). name is used in error messages ("catalog.yaml:12: ..."). */
pf_err pf_catalog_parse(struct pf_catalog *cat, const char *name,
                        const char *buf, size_t len, char *err);
/* Embedded catalog, then the override file if path is non-empty. */
pf_err pf_catalog_load(struct pf_catalog *cat, const char *override_path,
                       char *err);
void pf_catalog_free(struct pf_catalog *cat);

/* Look up a type ("ml." prefix ignored, "hpc7a.*" patterns honoured). */
const struct pf_instance *pf_catalog_find(const struct pf_catalog *cat,
                                          const char *type);
/* For a type the catalog lacks: the nearest catalog name by edit distance
 * (one or two slips, "ml." kept), for a "did you mean"; false when none is
 * that near or the type is in the catalog. */
bool pf_catalog_suggest(const struct pf_catalog *cat, const char *type,
                        char *out, size_t cap);
/* Print the effective catalog as YAML (the `catalog` command adds the
 * floor curves: judge/curves.h). */
void pf_catalog_print(const struct pf_catalog *cat, FILE *out);
/* The same as JSON: {"version", "instances": [...]}, each instance as the
 * report has it; NULL when out of memory. */
cJSON *pf_catalog_json(const struct pf_catalog *cat);
/* A floor point as JSON ({key: nodes, busbw_gbps, from_bytes, verified,
 * source, sizes}), as the catalog's JSON writes its points. */
cJSON *pf_catalog_point_json(const struct pf_floor *f, const char *key);

/* An instance as JSON (the report's "instance", `catalog --json`). */
cJSON *pf_instance_json(const struct pf_instance *it);

#endif
