/* Where a run's baseline comes from and what a run gives back to it.
 *
 *   pf_base_observe   what a finished run measured, as baseline values
 *   pf_base_load      before the collective (pipeline): the ConfigMap in
 *                     k8s mode (the leader, rank 0, the one that judges the
 *                     links), then --baseline FILE and --history-dir
 *   pf_base_fold_run  after a run that passed (publish): the leader folds
 *                     its values into the ConfigMap
 * A baseline that cannot be read is not an error of the run: the catalog
 * floor alone judges, and run->baseline.note says why. */
#ifndef PF_BASELINE_SOURCE_H
#define PF_BASELINE_SOURCE_H

#include <cjson/cJSON.h>

#include "../types/run.h"
#include "baseline.h"

/* At most: one pair and one ring value per run. */
#define PF_BASE_MAX_OBS 2

/* What the run measured that the baseline keeps: its median pair link (a
 * pairwise test ran) and its ring's judged busbw, keyed by type, engine,
 * size and node bucket. None for an unknown type or over a provider the
 * judgement holds to no catalog floor (run->coll.judgement.other_provider).
 * Returns how many (<= max). */
int pf_base_observe(const struct pf_run *run, struct pf_base_obs *obs,
                    int max);
/* The same from a JSON report's "baseline.observed", only when the report
 * passed (verdict.exit_code 0). Returns how many; -1 when the report has
 * no such list. */
int pf_base_obs_from_report(const cJSON *report, struct pf_base_obs *obs,
                            int max);
/* The report's "baseline" object: what was observed, what the links were
 * held to, where the baseline came from. */
cJSON *pf_base_report_json(const struct pf_run *run);

/* Fold the passed runs of a history directory, oldest first. */
pf_err pf_base_from_history(const char *dir, struct pf_baseline *b,
                            char *err);

/* Before the collective: fill run->baseline. A bad --baseline file is a
 * usage error (exit 2); anything else only leaves a note. */
pf_err pf_base_load(struct pf_run *run, char *err);

/* After a run that passed, k8s mode, rank 0: fold its values into the
 * ConfigMap (read, fold, write with resourceVersion; 409 retried,
 * bounded). Logged, never a change of the verdict. */
void pf_base_fold_run(const struct pf_run *run);

#endif
