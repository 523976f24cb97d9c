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
/* The floor curve at a node count, into out (out->nodes = nodes): linear
 * in log2 N between the points around it, flat below the first multi-node
 * point and beyond the last; one node takes the 1-node point only (NVLink,
 * not EFA). Between two points from_bytes is the larger, verified both,
 * and source says which points. false (out zeroed) when no point applies. */
bool pf_instance_floor(const struct pf_instance *it, int nodes,
                       struct pf_floor *out);

/* A size curve (ascending) at bytes: linear in log2 size between two
 * points, flat beyond the last, 0 below the first or when n is 0. */
double pf_size_floor_at(const struct pf_size_floor *s, int n, uint64_t bytes);
/* A rule's floor at a message size: its size curve, or gbps from
 * from_bytes on; 0 where none holds. */
double pf_floor_rule_at(const struct pf_floor_rule *r, uint64_t bytes);
/* The smallest size at which the rule holds (0: any). */
uint64_t pf_floor_rule_min_bytes(const struct pf_floor_rule *r);

/* The node counts `catalog` shows the effective floor at. */
extern const int pf_floor_show_nodes[];
extern const int pf_floor_show_count;

/* The host engine's floor over nics NICs: the host_floors entry with the
 * largest count <= nics; NULL when none applies. */
const struct pf_floor *pf_instance_host_floor(const struct pf_instance *it,
                                              int nics);

/* The one busbw floor rule, used by the sweep's sizing, the verdict, the
 * straggler re-test and publishing alike: cfg.min_busbw_gbps (from
 * cfg.min_busbw_from_bytes) when set, else the catalog's floor for the
 * instance type and node count where it measures the same thing (provider
 * efa: fallback_provider NULL; the engine the floors were set for: nccl on
 * GPU types, host elsewhere). The host engine across 2+ nodes takes the
 * entry's host_floors by the NICs it striped over (nics; 0 = not known
 * yet) where it has them, its node-count floors otherwise. */
void pf_floor_for(const struct pf_config *cfg, const struct pf_instance *it,
                  enum pf_engine_kind engine, const char *fallback_provider,
                  int nnodes, int nics, struct pf_floor_rule *out);

/* The largest size to sweep: -e when given, else 64 MiB or the floor's
 * size when that is larger (so a catalogued type is judged by default),
 * and never below -b. rule NULL: no floor known (the local launcher, before
 * any rank has probed its instance type). */
uint64_t pf_sweep_max_bytes(const struct pf_config *cfg,
                            const struct pf_floor_rule *rule);

/* Print the effective catalog as YAML, then each floor curve at
 * pf_floor_show_nodes as YAML comments (so the output stays a catalog). */
void pf_catalog_print(const struct pf_catalog *cat, FILE *out);
/* The same as JSON: {"version", "instances": [...]}, each instance as the
 * report has it plus "effective_floors". */
pf_err pf_catalog_print_json(const struct pf_catalog *cat, FILE *out,
                             char *err);

/* An instance as JSON (the report's "instance", `catalog --json`). */
cJSON *pf_instance_json(const struct pf_instance *it);

#endif
