#include "yamldoc.h"

pf_err pf_yaml_load(yaml_document_t *doc, const char *name, const char *buf,
                    size_t len, char *err)
{
    yaml_parser_t parser;
    pf_err rc = PF_OK;

    if (!yaml_parser_initialize(&parser))
        return pf_fail(err, PF_ERR_NOMEM, "%s: YAML parser init failed", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, doc))
        rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu:%zu: invalid YAML: %s", name,
                     parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                     parser.problem ? parser.problem : "parse error");
    yaml_parser_delete(&parser);
    return rc;
}
