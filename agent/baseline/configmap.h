/* The fleet baseline in a ConfigMap: one data key per baseline key
 * (pf_base_key), its value the entry's JSON (pf_base_entry_json), at most
 * PF_BASE_K values each, so the object stays a few hundred bytes per key
 * whatever the fleet's size. Written only with the resourceVersion read
 * (PUT) or as a new object (POST): a 409 means another leader wrote first,
 * and the fold is done again on what it wrote, a bounded number of times. */
#ifndef PF_BASELINE_CONFIGMAP_H
#define PF_BASELINE_CONFIGMAP_H

#include <stdbool.h>

#include "../types/config.h"
#include "../k8s/session.h"
#include "baseline.h"

/* Tries of one fold before it gives up (each after a jittered backoff). */
#define PF_BASE_CM_ATTEMPTS 16

struct pf_base_cm {
    struct pf_kube *k;
    char ns[PF_NAME_MAX], name[PF_NAME_MAX];
    int64_t deadline;                 /* absolute, 0 = none */
    int conflicts;                    /* 409s seen by the last fold */
};

/* cfg.baseline_configmap and the API options; deadline bounds it all. */
pf_err pf_base_cm_open(const struct pf_config *cfg, int64_t deadline,
                       const atomic_int *cancel, struct pf_base_cm *cm,
                       char *err);
void pf_base_cm_close(struct pf_base_cm *cm);

/* GET the ConfigMap into b (none: b stays empty, *found false). A data
 * key that does not parse is left out, with a warning. */
pf_err pf_base_cm_read(struct pf_base_cm *cm, struct pf_baseline *b,
                       bool *found, char *err);
/* Fold nobs values in (read, fold, write; 409 retried). */
pf_err pf_base_cm_fold(struct pf_base_cm *cm, const struct pf_base_obs *obs,
                       int nobs, char *err);
/* DELETE the ConfigMap (*deleted false when there was none). */
pf_err pf_base_cm_reset(struct pf_base_cm *cm, bool *deleted, char *err);

/* The ConfigMap's data from b, and b from data (the pure halves, for
 * tests). */
cJSON *pf_base_cm_data(const struct pf_baseline *b);
void pf_base_cm_parse_data(const cJSON *data, const char *where,
                           struct pf_baseline *b);

#endif
