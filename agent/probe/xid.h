/* XIDs: what each means for a training job, and the kernel's record of
 * them (`NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the
 * bus.` in /dev/kmsg or dmesg output).
 *
 * The class table follows NVIDIA's public XID catalogue
 * (docs.nvidia.com/deploy/xid-errors) and the node-fault sets HyperPod
 * and NVSentinel act on: 48, 63, 64, 74, 79, 92, 94, 95, 119, 120 are
 * faults of the node; 13, 31, 43, 45 are usually the application's; any
 * other XID is a warning. */
#ifndef PF_XID_H
#define PF_XID_H

#include <stdbool.h>
#include <stddef.h>

#include "../types/gpu_health.h"
#include "../util/err.h"

enum pf_xid_kind {
    PF_XID_OTHER = 0,                 /* not in the table: a warning */
    PF_XID_NODE,                      /* a fault of the node's GPU */
    PF_XID_APP,                       /* usually the application's */
};

struct pf_xid_info {
    int xid;
    enum pf_xid_kind kind;
    const char *what;                 /* NVIDIA's description, short */
    const char *action;               /* reset | drain | replace | "" */
};

/* The row for xid; a row with kind PF_XID_OTHER and what "" when the
 * table lacks it. */
const struct pf_xid_info *pf_xid_info(int xid);
/* Where the table comes from, for the report and the docs. */
extern const char pf_xid_source[];
const char *pf_xid_kind_name(enum pf_xid_kind k);

/* One `NVRM: Xid (PCI:DDDD:BB:DD): N` found in a line. */
struct pf_xid_hit {
    unsigned domain, bus, dev;        /* parsed from the PCI tuple */
    char busid[16];                   /* as written, e.g. "0000:18:00" */
    int xid;
};

/* Parse one line (len bytes, no NUL needed); false when it is no XID line
 * or the tuple or number is malformed. */
bool pf_xid_parse_line(const char *line, size_t len, struct pf_xid_hit *out);

/* Every XID line of a buffer (dmesg text or /dev/kmsg records, lines
 * separated by '\n'); cb is called for each hit. Returns the hits. */
typedef void (*pf_xid_cb)(void *ctx, const struct pf_xid_hit *hit);
int pf_xid_scan(const char *buf, size_t len, pf_xid_cb cb, void *ctx);

/* Read a kernel log: /dev/kmsg (one record per read, non-blocking, to its
 * end) or a plain file (tests: a dmesg dump), at most max_bytes. */
pf_err pf_xid_read_log(const char *path, size_t max_bytes, pf_xid_cb cb,
                       void *ctx, int *hits, char *err);

/* NVML's "00000000:18:00.0" against a hit's domain, bus and device. */
bool pf_xid_bus_matches(const char *nvml_bus_id, const struct pf_xid_hit *h);

/* Count xid into a list (kept distinct, more counted past the cap). */
void pf_xid_list_add(struct pf_xid_list *l, int xid);

#endif
