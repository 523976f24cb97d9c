/* The fleet baseline as data: keys, folding a run in, the median, and the
 * JSON both the ConfigMap (one key per entry) and a --baseline file (every
 * entry) hold. Parsing is strict: a bad file names itself and the field,
 * PF_ERR_USAGE (exit 2). No I/O here but reading a file. */
#ifndef PF_BASELINE_H
#define PF_BASELINE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "../types/baseline.h"
#include "../util/err.h"

/* The node-count bucket of a ring of n nodes: the power of two >= n (2 for
 * pairs and 2-node rings), so 60 and 64 nodes share a key. */
int pf_base_bucket(int n);

/* The ConfigMap data key of an entry: "<type>.<engine>.<kind>.n<N>.<bytes>"
 * ([-._a-zA-Z0-9] only: other characters become '-'). */
void pf_base_key(const char *type, const char *engine, const char *kind,
                 int nodes, uint64_t bytes, char *out, size_t len);

struct pf_base_entry *pf_base_find(const struct pf_baseline *b,
                                   const char *type, const char *engine,
                                   const char *kind, int nodes,
                                   uint64_t bytes);
/* Fold one run's value in: appended, the oldest dropped beyond PF_BASE_K.
 * now: RFC 3339 or NULL. */
pf_err pf_base_fold(struct pf_baseline *b, const struct pf_base_obs *o,
                    const char *now, char *err);
/* The median of an entry's values (0 when none). */
double pf_base_median(const struct pf_base_entry *e);
void pf_base_free(struct pf_baseline *b);

/* One entry <-> JSON {"type","engine","kind","nodes","bytes","values",
 * "runs","updated"}. Parsing: what names the source in errors ("file.json:
 * entries[3]"); unknown fields, wrong types, values out of range are
 * PF_ERR_USAGE. */
cJSON *pf_base_entry_json(const struct pf_base_entry *e);
pf_err pf_base_entry_parse(const cJSON *o, const char *what,
                           struct pf_base_entry *e, char *err);
/* The whole baseline: {"version":1,"entries":[...]}; parse is strict and
 * adds to b (a key twice is an error). */
cJSON *pf_base_json(const struct pf_baseline *b);
pf_err pf_base_parse(const char *name, const char *buf, size_t len,
                     struct pf_baseline *b, char *err);
/* A --baseline file, read and parsed strictly. */
pf_err pf_base_load_file(const char *path, struct pf_baseline *b, char *err);

/* Add an entry (a copy) or replace the one with its key. */
pf_err pf_base_put(struct pf_baseline *b, const struct pf_base_entry *e,
                   char *err);

#endif
