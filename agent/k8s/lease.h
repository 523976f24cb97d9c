/* A coordination.k8s.io/v1 Lease used as a lock, the way client-go's
 * leaderelection (resourcelock.LeaseLock) uses one:
 *
 *   - GET the Lease; 404: POST one naming us holder (409 AlreadyExists: a
 *     rival created it first, try again later).
 *   - held by someone else: it is theirs until the record has stayed
 *     unchanged, as seen by *us* (local clock), for leaseDurationSeconds
 *     (at most PF_LEASE_HONOUR_MAX_S); no comparison of our clock with the
 *     holder's renewTime. A holder whose pod is gone (l->gone, set by the
 *     caller that looked) loses it at once.
 *   - empty holderIdentity (released) or expired: PUT ourselves as holder
 *     with the resourceVersion we read; 409 means a rival won the race.
 *   - held by us: renew with a PUT of the last resourceVersion (one
 *     request); a 409 falls back to GET + decide.
 *   - release: PUT holderIdentity "" and leaseDurationSeconds 1, so the
 *     next candidate takes it at once.
 * The Lease strategy allows no unconditional update, so every PUT carries a
 * resourceVersion. */
#ifndef PF_K8S_LEASE_H
#define PF_K8S_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "../util/sizes.h"
#include "object.h"
#include "session.h"

struct pf_lease {
    char ns[PF_NAME_MAX];
    char name[PF_K8S_NAME_MAX + 1];
    char identity[PF_NAME_MAX];       /* "<pod>_<random hex>" */
    int duration_s;                   /* ours, written when we hold it */

    /* The record as last seen. */
    char rv[64];
    char holder[PF_NAME_MAX];
    int holder_duration_s;            /* the holder's leaseDurationSeconds */
    int transitions;
    char acquire_time[40];
    int64_t observed_ms;              /* local time the record last changed */
    bool held;
    /* A holder known dead (its pod is gone): its record is taken at once,
     * whatever duration it claims. */
    char gone[PF_NAME_MAX];
};

/* The longest a foreign record is honoured unchanged, whatever its
 * leaseDurationSeconds: no efa-preflight agent writes more than 15 s, so a
 * live holder renews well within it, and a dead holder's record claiming
 * an hour (an older agent, a hand edit) does not stall the pool for one. */
#define PF_LEASE_HONOUR_MAX_S 30

enum pf_lease_state {
    PF_LEASE_HELD,                    /* we hold it now */
    PF_LEASE_OTHER,                   /* a live holder: l->holder */
    PF_LEASE_RETRY,                   /* lost a race or expired but not
                                         taken yet: ask again soon */
};

/* Name a Lease "<base>-<a>-<b>" as a DNS subdomain: lowercase, characters
 * other than [a-z0-9.-] become '-', too long ends in a hash. */
void pf_lease_name(const char *base, const char *a, const char *b, char *out,
                   size_t len);

/* One step of try-acquire-or-renew at local time now_ms. Errors are API
 * failures (403 names the RBAC rule). */
pf_err pf_lease_try(struct pf_kube *k, struct pf_lease *l, int64_t now_ms,
                    enum pf_lease_state *st, char *err);
/* Give the Lease up if we hold it (best effort, one PUT). */
pf_err pf_lease_release(struct pf_kube *k, struct pf_lease *l, char *err);

/* Decision of the slow path, pure (unit-tested): may we take a Lease held
 * by holder, last changed at observed_ms, with that duration (honoured up
 * to PF_LEASE_HONOUR_MAX_S)? */
bool pf_lease_takeable(const char *holder, const char *me, int64_t observed_ms,
                       int duration_s, int64_t now_ms);
/* A MicroTime, "2026-01-02T03:04:05.123456Z", of the wall clock. */
void pf_lease_microtime(char out[40]);

#endif
