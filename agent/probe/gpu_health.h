/* GPU health from NVML (util/nvmllib.h) and the kernel log (xid.h), into
 * run->node.gpuh. No daemon: the agent's own NVML session, opened by the
 * probe and kept (run->gpu_session) so that XID events and the NVLink and
 * PCIe counters can be read around the all_reduce:
 *
 *   pf_probe_gpu_health   probe: names, ECC, remaps, links, PCIe, modes,
 *                         driver; counters "before"; XID events armed;
 *                         the kernel log's XIDs since boot
 *   pf_gpu_health_begin   collective, before the sweep: counters "before"
 *   pf_gpu_health_end     after the sweep: counters "after", the clock
 *                         event reasons and the PCIe link under load, the
 *                         XID events so far
 *   pf_gpu_health_finish  before the verdict: the last read where no
 *                         sweep ran (over the agent's run), the events,
 *                         and the session closed
 *
 * Every field has its own outcome (types/gpu_health.h): a field a driver
 * does not support is recorded so, never an error; NVML missing is a fact
 * (nvml_loaded false, nvml_error) that the verdict turns into a warning. */
#ifndef PF_GPU_HEALTH_H
#define PF_GPU_HEALTH_H

#include "../types/run.h"

void pf_probe_gpu_health(struct pf_run *run);
void pf_gpu_health_begin(struct pf_run *run);
void pf_gpu_health_end(struct pf_run *run);
void pf_gpu_health_finish(struct pf_run *run);
/* Close without reading (idempotent): every path out of the run. */
void pf_gpu_health_close(struct pf_run *run);

/* The monitor's read: open, read every field and the XID events armed in
 * *s (opened on the first call), leave it open; pf_gpu_watch_close ends
 * it. The counters' "before" is the previous read's "after". */
void pf_gpu_watch_read(struct pf_gpu_session **s, struct pf_gpu_health *out);
void pf_gpu_watch_close(struct pf_gpu_session **s);

/* Field names for the report and the bench ("ecc_volatile", ...). */
const char *pf_gpu_field_name(enum pf_gpu_field f);
const char *pf_gpu_field_state_name(enum pf_gpu_field_state s);
/* "GPU 3 (00000000:1b:00.0, serial 1652922000123)" */
void pf_gpu_label(const struct pf_gpu_state *g, char *out, size_t len);

#endif
