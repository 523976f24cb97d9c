/* One sanitiser for every string that comes from outside the agent: peers
 * (HELLO facts, the peer table), the API server (names, messages), the
 * environment and the host (hostname). It runs before such a string
 * reaches a log line, the table, a label, a condition, an Event or the
 * JSON report.
 *
 * What comes out is valid UTF-8 with no control character in it: C0 and
 * C1 controls, DEL, ESC, the line and paragraph separators and the
 * bidirectional embeddings, overrides and isolates (which reorder what a
 * terminal shows) become '?', a tab a space, and so does every byte that is
 * not part of a well-formed UTF-8 sequence (overlong forms, surrogates,
 * beyond U+10FFFF, cut sequences). The output is never longer than the
 * input, so the sanitiser can work in place, and it is cut at a character
 * boundary to fit. */
#ifndef PF_SANITIZE_H
#define PF_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Longest string the JSON walker leaves in a document. */
#define PF_SAN_JSON_MAX 4096

/* Sanitise src into dst (dstlen bytes, NUL included; dst may be src).
 * Returns the length written. */
size_t pf_sanitize(char *dst, size_t dstlen, const char *src);
/* Same, keeping '\n' (multi-line text such as the table). */
size_t pf_sanitize_text(char *dst, size_t dstlen, const char *src);
/* In place, cut to at most max - 1 bytes. */
void pf_sanitize_inplace(char *s, size_t max);
/* True when s needs nothing done (valid UTF-8, no control characters). */
bool pf_is_clean(const char *s);
/* Every string value and key of a cJSON tree, in place, each cut to
 * PF_SAN_JSON_MAX bytes: a document built from outside strings is then
 * valid UTF-8 JSON whatever they held. */
void pf_sanitize_json(cJSON *item);

#endif
