/* The monitor's GPU health (gpu.c): every interval it reads what the
 * pre-flight reads from NVML (probe/gpu_health.h: one NVML session for
 * the monitor's life, XID events armed once), judges each GPU with the
 * same hysteresis as the NICs (a fault raised after raise_after bad
 * intervals in a row, cleared after clear_after good ones), exports every
 * field as efa_preflight_gpu_* metrics, and gives the GPUHealthy
 * condition. Kept apart from the NIC health (health.c). */
#ifndef PF_MON_GPU_H
#define PF_MON_GPU_H

#include "monitor.h"

struct pf_gpu_session;

struct pf_mon_gpu_state {
    int bad, good;                    /* intervals in a row */
    bool faulted;
    enum pf_reason reason;            /* the standing fault */
    char why[200];
    struct pf_xid_list xids;          /* XIDs since the monitor started */
};

struct pf_mon_gpu {
    struct pf_gpu_session *s;
    struct pf_gpu_health h;           /* the last read */
    int raise_after, clear_after;
    int nvlinks;                      /* the type's links, -1 unknown */
    bool gpu_type;                    /* the type has GPUs */
    int intervals;
    struct pf_mon_gpu_state g[PF_MAX_GPUS];
    int nchanges;
    struct pf_mon_change changes[PF_MAX_GPUS];
};

void pf_mon_gpu_init(struct pf_mon_gpu *m, int raise_after, int clear_after,
                     const struct pf_instance *it);
/* Read and judge one interval; m->changes holds what was raised or
 * cleared. */
void pf_mon_gpu_step(struct pf_mon_gpu *m);
/* The condition's reason and message; PF_R_None when there is nothing to
 * say (no NVML and no GPU type: the condition is not written). */
enum pf_reason pf_mon_gpu_condition(const struct pf_mon_gpu *m, char *msg,
                                    size_t len);
/* Whether a GPU fault stands. */
bool pf_mon_gpu_faulted(const struct pf_mon_gpu *m);
/* Append the efa_preflight_gpu_* families to out. */
void pf_mon_gpu_expose(const struct pf_mon_gpu *m, const char *node,
                       struct pf_mon_buf *out);
void pf_mon_gpu_free(struct pf_mon_gpu *m);

#endif
