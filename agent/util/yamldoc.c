#include "yamldoc.h"

#include <stdbool.h>
#include <string.h>

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

/* libyaml's loader slows down with the square of the nesting (7 s at
 * 40k levels, 33 s at 100k): walk the events first and stop at the first
 * collection nested deeper than PF_YAML_MAX_DEPTH, before anything is
 * built. A syntax error found here is left to the loader, which reports
 * it the same way. */
static pf_err check_depth(const char *name, const char *buf, size_t len,
                          char *err)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    pf_err rc = PF_OK;
    int depth = 0;

    if (!yaml_parser_initialize(&parser))
        return pf_fail(err, PF_ERR_NOMEM, "%s: YAML parser init failed", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    /* Each event consumes input, so the loop ends with the buffer. */
    for (;;) {
        bool end;

        if (!yaml_parser_parse(&parser, &ev))
            break;
        end = ev.type == YAML_STREAM_END_EVENT;
        if (ev.type == YAML_SEQUENCE_START_EVENT ||
            ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > PF_YAML_MAX_DEPTH)
                rc = pf_fail(err, PF_ERR_CONFIG, "%s:%zu:%zu: YAML nested "
                             "deeper than %d levels", name,
                             ev.start_mark.line + 1, ev.start_mark.column + 1,
                             PF_YAML_MAX_DEPTH);
        } else if (ev.type == YAML_SEQUENCE_END_EVENT ||
                   ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        yaml_event_delete(&ev);
        if (end || rc != PF_OK)
            break;
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* A document that is only a null ("---", "~", "null") says nothing, like
 * an empty file. */
static bool null_root(yaml_document_t *doc)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
    yaml_node_t *root = yaml_document_get_root_node(doc);

    if (!root || root->type != YAML_SCALAR_NODE ||
        root->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
        (root->tag && strcmp((const char *)root->tag, YAML_NULL_TAG) &&
         strcmp((const char *)root->tag, YAML_DEFAULT_SCALAR_TAG)))
        return false;
    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
        if (!strcmp((const char *)root->data.scalar.value, nulls[i]))
            return true;
    return false;
}

pf_err pf_yaml_load(yaml_document_t *doc, const char *name, const char *buf,
                    size_t len, char *err)
{
    yaml_parser_t parser;
    yaml_document_t next;
    pf_err rc = PF_OK;

    rc = check_depth(name, buf, len, err);
    if (rc != PF_OK)
        return rc;
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
    if (rc != PF_OK) {
        yaml_document_delete(doc);
    } else if (null_root(doc)) {
        yaml_document_delete(doc);
        if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1))
            rc = pf_fail(err, PF_ERR_NOMEM, "%s: out of memory", name);
    }
    yaml_parser_delete(&parser);
    return rc;
}
