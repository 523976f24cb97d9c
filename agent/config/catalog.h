/* The instance-type catalog: agent/catalog.yaml is embedded at build time;
 * --catalog FILE overrides entries by name and adds new ones. */
#ifndef PF_CATALOG_H
#define PF_CATALOG_H

#include <stdio.h>

#include "../pf.h"

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
/* The busbw floor (GB/s) for n nodes: the entry with the largest
 * nodes <= n; 0 when none applies. */
double pf_instance_floor(const struct pf_instance *it, int nodes);

/* The one busbw floor rule, used by the verdict, the straggler re-test and
 * publishing alike: cfg.min_busbw_gbps when set, else the catalog's floor
 * for the instance type and node count where it measures the same thing
 * (provider efa: fallback_provider NULL; the engine the floors were set
 * for: nccl on GPU types, host elsewhere). 0 = none, and src says why. */
double pf_floor_for(const struct pf_config *cfg, const struct pf_instance *it,
                    const char *engine, const char *fallback_provider,
                    int nnodes, char *src, size_t len);

/* Print the effective catalog as YAML. */
void pf_catalog_print(const struct pf_catalog *cat, FILE *out);

#endif
