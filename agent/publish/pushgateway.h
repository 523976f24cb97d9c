/* Push the metrics text (metrics.h) to a Prometheus Pushgateway. */
#ifndef PF_PUSHGATEWAY_H
#define PF_PUSHGATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* <base>/metrics/job/efa_preflight/instance/<instance>; the instance in
 * Pushgateway's base64url form when it is not a plain name. */
pf_err pf_metrics_push_url(const char *base, const char *instance, char *out,
                           size_t cap, char *err);

/* PUT text to the Pushgateway (replacing this node's group), bounded by
 * deadline_ms (monotonic). Messages name the URL without any password. */
pf_err pf_metrics_push(const char *base, const char *instance,
                       const char *text, int64_t deadline_ms, char *err);

#endif
