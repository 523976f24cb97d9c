/* What the publish stage keeps of the Node it writes (publish/publish.h),
 * what publishing itself came to, the report's schema and the time
 * publishing may take past the deadline. */
#ifndef PF_TYPES_PUBLISH_H
#define PF_TYPES_PUBLISH_H

#include <stdbool.h>

#include "../util/sizes.h"
#include "verdict.h"

#define PF_REPORT_SCHEMA "efa-preflight.io/report/v1"

/* The Node a k8s run writes, and how it was before the run marked it as
 * being validated (publish/node.c): a run that ends in a usage error puts
 * it back; the verdict keeps a condition's lastTransitionTime from it. */
struct pf_node_mark {
    char node[PF_NAME_MAX];           /* "" = not resolved yet */
    bool marked;                      /* status=validating was written */
    char *undo_labels;                /* merge patch: our labels as found */
    char *undo_conditions;            /* strategic merge patch: our
                                         conditions as found */
    char instance_type_label[64];     /* its node.kubernetes.io/instance-type,
                                         for the probe when DMI is absent */
};

/* What publishing came to, kept apart from the verdict it published (which
 * it only reads): that verdict with publishing's own checks added (the
 * Node write failed, the report file could not be written, a taint or
 * reboot mark withheld) and settled again. The report, the table, the
 * metrics and the exit code show `shown`; run->verdict stays as judged. */
struct pf_publish_outcome {
    struct pf_verdict shown;
    bool node_written;                /* the Node got the verdict */
};

/* After the run deadline, publishing the verdict may take this much longer
 * (docs/internals/reliability.md, Deadlines); then the agent exits whatever the API does. */
#define PF_PUBLISH_GRACE_MS 20000
/* After SIGTERM/SIGINT, the verdict being written may finish, or the Node
 * is rolled forward to status=error, within this much (docs/internals/reliability.md,
 * Deadlines); it fits a terminationGracePeriodSeconds of 10. */
#define PF_SIGNAL_GRACE_MS 8000
/* Metrics go to a Pushgateway last, once the verdict is on the Node and in
 * the report, within this much (and within the publishing grace): a
 * Pushgateway that never answers holds the exit this long at most and
 * never changes the exit code (docs/internals/reliability.md, Deadlines). */
#define PF_PUSH_BUDGET_MS 5000

#endif
