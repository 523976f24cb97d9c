/* Load one YAML document from memory, with a file:line:column message on
 * syntax errors. Used by the config and catalog parsers. */
#ifndef PF_YAMLDOC_H
#define PF_YAMLDOC_H

#include <stddef.h>
#include <yaml.h>

#include "err.h"

/* On PF_OK the caller owns doc and frees it with yaml_document_delete. */
pf_err pf_yaml_load(yaml_document_t *doc, const char *name, const char *buf,
                    size_t len, char *err);

#endif
