/* Load one YAML document from memory, with a file:line:column message on
 * syntax errors. Used by the config and catalog parsers. */
#ifndef PF_YAMLDOC_H
#define PF_YAMLDOC_H

#include <stddef.h>
#include <yaml.h>

#include "err.h"

/* Deepest nesting of mappings and lists accepted; the config and the
 * catalog need 3. */
#define PF_YAML_MAX_DEPTH 64

/* Checks the nesting depth before building anything (PF_ERR_CONFIG past
 * PF_YAML_MAX_DEPTH); a document that is only a null ("---", "~") comes
 * back empty (no root node), as an empty input does.
 * On PF_OK the caller owns doc and frees it with yaml_document_delete. */
pf_err pf_yaml_load(yaml_document_t *doc, const char *name, const char *buf,
                    size_t len, char *err);

#endif
