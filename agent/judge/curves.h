/* The `catalog` command's output: the catalog, then each type's floor
 * curve at the node counts users plan for, so what a 64-node job will be
 * held to is readable before it runs. */
#ifndef PF_JUDGE_CURVES_H
#define PF_JUDGE_CURVES_H

#include <stdio.h>

#include "../types/catalog.h"
#include "../util/err.h"

/* The catalog as YAML (config/catalog.h pf_catalog_print), then the
 * curves as YAML comments (so the output stays a catalog). */
void pf_curves_print(const struct pf_catalog *cat, FILE *out);
/* The same as JSON: {"version", "instances": [...]}, each instance as the
 * report has it plus "effective_floors". */
pf_err pf_curves_print_json(const struct pf_catalog *cat, FILE *out,
                            char *err);

#endif
