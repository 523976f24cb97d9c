/* EFA hardware counters: what each NIC moved and which errors it saw.
 *
 * The driver keeps them per device and port, one file per counter under
 *   <sysfs_root>/sys/class/infiniband/<dev>/ports/<port>/hw_counters/
 * A device's ports are summed (EFA has one). The kernel caches what it
 * read from the device for `lifespan` ms (10 by default), so a read right
 * after traffic may lag by that much: pf_hwc_settle_ms says how long to
 * wait before an "after" read. `lifespan` is that cache period, not the
 * counters' age: they run from when the device came up, which the host's
 * uptime bounds. */
#ifndef PF_HW_COUNTERS_H
#define PF_HW_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>

#include "../types/node.h"

struct pf_nic_delta;

/* File name of counter c ("retrans_timeout_events"). */
const char *pf_hwc_name(enum pf_hwc c);
/* Counters that only move when something went wrong: retransmit
 * timeouts, unresponsive and impaired remotes, receive drops and
 * work-request errors. */
bool pf_hwc_is_error(enum pf_hwc c);

/* Read device dev's counters under root ("" = /). A device without
 * hw_counters, or with some files missing, is a fact (present bits),
 * never an error. */
void pf_hwc_read(const char *root, const char *dev, struct pf_hwc_snap *out);

/* Every EFA device of node, in node->efa order (n = stored devices). */
void pf_hwc_read_all(const char *root, const struct pf_node *node,
                     struct pf_hwc_snap *out, int n);

/* after - before, counter by counter; a counter present in only one of
 * the two is absent, one that decreased (device reset) counts 0 and sets
 * went_back. */
void pf_hwc_delta(const struct pf_hwc_snap *before,
                  const struct pf_hwc_snap *after, struct pf_nic_delta *d);

/* Bytes a NIC moved: tx_bytes + rx_bytes, or where the driver lacks
 * those, send + recv + rdma read + rdma write bytes. *known = false when
 * none of them is present. */
uint64_t pf_hwc_bytes(const uint64_t *v, uint32_t present, bool *known);

/* Sum of the error counters present. */
uint64_t pf_hwc_errors(const uint64_t *v, uint32_t present);

/* "retrans_timeout_events +3, rx_drops +1": the error counters present
 * and non-zero (sign "+" for deltas, "" for totals); "" when none. */
void pf_hwc_errors_text(const uint64_t *v, uint32_t present, const char *sign,
                        char *out, size_t len);

/* Counters absent on every one of n snapshots, comma-separated into out;
 * returns how many. */
int pf_hwc_absent_text(const struct pf_hwc_snap *s, int n, char *out,
                       size_t len);

/* "384.1 MB": bytes in SI units, as GB/s are (GB = 1e9). */
void pf_hwc_fmt_bytes(char *out, size_t len, double b);

/* How long to wait after traffic before an "after" read, from the
 * largest lifespan seen (capped at 1 s). */
int pf_hwc_settle_ms(const struct pf_hwc_snap *s, int n);

#endif
