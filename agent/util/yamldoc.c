#include "yamldoc.h"

/* line:column of a byte offset, for reader errors (bad UTF-8, control
 * characters), where libyaml fills problem_offset but not problem_mark. */
static void offset_position(const char *buf, size_t len, size_t offset,
                            size_t *line, size_t *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (buf[i] == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

static pf_err parse_error(const yaml_parser_t *parser, const char *name,
                          const char *buf, size_t len, char *err)
{
    size_t line = parser->problem_mark.line + 1;
    size_t column = parser->problem_mark.column + 1;

    if (parser->error == YAML_READER_ERROR) {
        offset_position(buf, len, parser->problem_offset, &line, &column);
        if (parser->problem_value >= 0)
            return pf_fail(err, PF_ERR_CONFIG, "%s:%zu:%zu: invalid YAML: %s "
                           "(byte 0x%02X)", name, line, column,
                           parser->problem ? parser->problem : "read error",
                           (unsigned)parser->problem_value & 0xFFu);
    }
    return pf_fail(err, PF_ERR_CONFIG, "%s:%zu:%zu: invalid YAML: %s", name,
                   line, column,
                   parser->problem ? parser->problem : "parse error");
}

pf_err pf_yaml_load(yaml_document_t *doc, const char *name, const char *buf,
                    size_t len, char *err)
{
    yaml_parser_t parser;
    yaml_document_t next;
    pf_err rc = PF_OK;

    if (!yaml_parser_initialize(&parser))
        return pf_fail(err, PF_ERR_NOMEM, "%s: YAML parser init failed", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    if (!yaml_parser_load(&parser, doc)) {
        rc = parse_error(&parser, name, buf, len, err);
        yaml_parser_delete(&parser);
        return rc;
    }
    /* Only the first document is read: a second one (after "---") would
     * be dropped without a word, so it is an error, as is anything after
     * the first document that does not parse. */
    if (!yaml_parser_load(&parser, &next)) {
        rc = parse_error(&parser, name, buf, len, err);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&next);
        if (root)
            rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu: a second YAML document "
                         "(after '---'); put everything in one", name,
                         next.start_mark.line + 1);
        yaml_document_delete(&next);
    }
    if (rc != PF_OK)
        yaml_document_delete(doc);
    yaml_parser_delete(&parser);
    return rc;
}
