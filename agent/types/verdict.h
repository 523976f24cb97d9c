/* What the verdict stage produces (verdict/verdict.h): every check with its
 * reason, the one that decided the run, its class and the exit code. */
#ifndef PF_TYPES_VERDICT_H
#define PF_TYPES_VERDICT_H

#include "../reasons.h"

enum pf_status { PF_PASS = 0, PF_WARN, PF_FAIL, PF_SKIP };

#define PF_MAX_CHECKS 64

struct pf_check {
    char name[48];                    /* efa_devices, memlock, ... */
    enum pf_status status;
    enum pf_reason reason;            /* reasons.h, e.g. EFADeviceCountMismatch */
    char message[384];                /* what was seen vs expected */
    char remedy[256];                 /* one-line fix */
    char condition[24];               /* EFADevicesReady | EFAFabricReady */
};

struct pf_verdict {
    int n;
    struct pf_check checks[PF_MAX_CHECKS];
    enum pf_status overall;
    enum pf_reason headline;          /* the reason that decided the run */
    enum pf_reason_class cls;         /* its class: exit code, label, taint */
    int exit_code;                    /* pf_class_exit_code(cls) */
};

/* Exit codes (README, "Exit codes"). */
enum { PF_EXIT_PASS = 0, PF_EXIT_FAIL = 1, PF_EXIT_USAGE = 2, PF_EXIT_INFRA = 3,
       PF_EXIT_PEER = 4 };
/* The same, as --help prints them. */
#define PF_EXIT_CODES_HELP                                                   \
    "exit codes: 0 pass, 1 validation failed (this node or the fabric), "   \
    "2 usage/config error,\n  3 infrastructure error (not judged), "        \
    "4 a peer failed, not this node\n"

const char *pf_status_name(enum pf_status s);

#endif
