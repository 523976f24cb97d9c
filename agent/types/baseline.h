/* The fleet's baseline (baseline/baseline.h): what healthy runs of a type
 * measured, per (instance type, engine, pair|ring, node-count bucket,
 * message size), as the last PF_BASE_K runs' values of each key (how a
 * run's pair links are held to it: judge/judge.h). Released by
 * pf_base_free. */
#ifndef PF_TYPES_BASELINE_H
#define PF_TYPES_BASELINE_H

#include <stdbool.h>
#include <stdint.h>

/* Runs a key keeps (the oldest falls out): a bounded summary whatever the
 * fleet's size, and one that follows a fleet-wide shift within K runs. */
#define PF_BASE_K 16
/* Runs a key needs before it judges anything: below, the catalog floor
 * alone. */
#define PF_BASE_MIN_RUNS 3

struct pf_base_entry {
    char type[64];                    /* instance type */
    char engine[8];                   /* nccl|host */
    char kind[8];                     /* pair|ring */
    int nodes;                        /* pairs: 2; ring: pf_base_bucket(N) */
    uint64_t bytes;                   /* message size measured at */
    int n;                            /* values held, oldest first */
    double v[PF_BASE_K];              /* GB/s, one per run: a run's median
                                         pair link, or its ring busbw */
    long runs;                        /* runs folded in, all time */
    char updated[32];                 /* RFC 3339, the last fold */
};

struct pf_baseline {
    int n, cap;
    struct pf_base_entry *e;          /* heap */
    char source[320];                 /* where it came from; "" = none */
    char note[256];                   /* why none, or what went wrong */
};

/* One value a passed run contributes (pf_base_observe). */
struct pf_base_obs {
    char type[64], engine[8], kind[8];
    int nodes;
    uint64_t bytes;
    double gbps;
};

/* What this run's pair links were held to (judge/links.h
 * pf_base_pair_floor). */
struct pf_base_held {
    bool applied;                     /* the baseline raised the bar */
    double catalog_gbps;              /* the 2-node catalog floor, 0 = none */
    double median_gbps;               /* the key's median, 0 = no key */
    int runs;                         /* values behind the median */
    double fraction;                  /* cfg.baseline_fraction */
    double floor_gbps;                /* fraction x median */
    uint64_t bytes;
    char note[256];                   /* in words: what it was held to */
};

#endif
