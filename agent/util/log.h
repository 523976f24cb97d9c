/* Leveled logging to stderr. The level is process-wide and set once by main
 * (the one piece of mutable global state the conventions allow, kept here so
 * every module can log without threading a logger through every call). */
#ifndef PF_LOG_H
#define PF_LOG_H

#include <stddef.h>

enum pf_log_level { PF_LOG_ERROR = 0, PF_LOG_WARN, PF_LOG_INFO, PF_LOG_DEBUG };

void pf_log_set_level(enum pf_log_level lvl);
enum pf_log_level pf_log_get_level(void);
/* Prefix each line with a tag such as "rank 3" (copied). */
void pf_log_set_tag(const char *tag);

/* "12:00:01.234 efa-preflight [tag] kind: " into buf: the prefix of every
 * line, for writers that print lines of their own (util/progress.c). */
void pf_log_prefix(char *buf, size_t cap, const char *kind);

void pf_log(enum pf_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "efa-preflight: <message>" on stderr, no prefix of time or level: what
 * the commands tell the operator. Messages quote what the operator gave
 * (flags, env, files), which may hold control bytes: they go through the
 * sanitiser as peer input does. */
void pf_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define pf_error(...) pf_log(PF_LOG_ERROR, __VA_ARGS__)
#define pf_warn(...)  pf_log(PF_LOG_WARN, __VA_ARGS__)
#define pf_info(...)  pf_log(PF_LOG_INFO, __VA_ARGS__)
#define pf_debug(...) pf_log(PF_LOG_DEBUG, __VA_ARGS__)

#endif
