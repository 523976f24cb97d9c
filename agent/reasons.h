/* The one table of reasons.
 *
 * Every reason the agent can emit is a row here: its CamelCase word, its
 * class, the condition it feeds and its one-line remedy. Stages carry the
 * enum value; only the table knows the word. The class alone decides the
 * exit code, the status label and whether a node may be tainted: nothing
 * compares reason strings. Errors become reasons (and classes) in one
 * place too: pf_reason_for_err, pf_err_class.
 *
 * This header is shared vocabulary (like util/err.h): every stage may
 * include it, and it includes nothing of the data model. */
#ifndef PF_REASONS_H
#define PF_REASONS_H

#include <stdbool.h>
#include <stdio.h>

#include "util/err.h"

/* The two Node conditions a reason feeds (and the report lists). */
#define PF_COND_DEVICES "EFADevicesReady"
#define PF_COND_FABRIC "EFAFabricReady"
/* The monitor's condition (agent/monitor/): NIC health between jobs. */
#define PF_COND_NICS "EFANICHealthy"
/* The GPUs' health (NVML, kernel log): verdict/gpu_checks.c. */
#define PF_COND_GPU "GPUHealthy"

enum pf_reason_class {
    PF_CLASS_OK,       /* a pass or a not-applicable: nothing to do */
    PF_CLASS_WARN,     /* worth a look; never fails a run */
    PF_CLASS_NODE,     /* this node is broken (devices, driver, limits) */
    PF_CLASS_FABRIC,   /* the collective was bad here (data, bandwidth) */
    PF_CLASS_GROUP,    /* the collective failed, no node singled out */
    PF_CLASS_PEER,     /* a peer was at fault, not this node */
    PF_CLASS_INFRA,    /* could not test: API, peers absent or gone */
    PF_CLASS_USAGE,    /* the deployment or flags are wrong */
};

/* Identifiers carry the reason word itself so that a grep for the word
 * finds every place that emits it. */
enum pf_reason {
    PF_R_None = 0,                 /* a check that needs no word */
    /* pass and not-applicable */
    PF_R_PreflightPassed,
    PF_R_InstanceTypeKnown,
    PF_R_EFAModuleLoaded,
    PF_R_EFADeviceCountMatches,
    PF_R_EFAPortsActive,
    PF_R_EFADeviceFilesPresent,
    PF_R_EFAProviderAvailable,
    PF_R_NetPluginFound,
    PF_R_LibfabricVersionOK,
    PF_R_MemlockSufficient,
    PF_R_HugePagesAvailable,
    PF_R_GDRSupported,
    PF_R_GPUCountMatches,
    PF_R_NotApplicable,
    PF_R_EFANotRequired,
    PF_R_NotTested,
    PF_R_FabricUntested,
    PF_R_Validating,
    PF_R_EFANICsHealthy,
    PF_R_EFANICRecovered,
    PF_R_RevalidationRequested,
    PF_R_GPUsHealthy,
    /* warnings */
    PF_R_UnknownInstanceType,
    PF_R_HugePagesUnavailable,
    PF_R_GDRUnsupported,
    PF_R_NetPluginNotFound,
    PF_R_LibfabricTooOld,
    PF_R_ProviderFallback,
    PF_R_BandwidthNotJudged,
    PF_R_EFANICErrorsSinceBoot,
    PF_R_TaintCapReached,
    PF_R_TaintBudgetUnavailable,
    PF_R_EFANICCountersUnavailable,
    PF_R_GPUHealthUnchecked,
    PF_R_GPUECCDisabled,
    PF_R_GPUPersistenceModeOff,
    PF_R_PCIeReplaysRising,
    /* node failures */
    PF_R_NotAnEFAInstance,
    PF_R_EFAModuleNotLoaded,
    PF_R_EFADeviceCountMismatch,
    PF_R_EFAPortDown,
    PF_R_EFADeviceFilesMissing,
    PF_R_EFAProviderUnavailable,
    PF_R_MemlockTooLow,
    PF_R_GPUCountMismatch,
    PF_R_FabricUnavailable,
    PF_R_EFANICErrorRate,
    PF_R_EFANICLinkDown,
    PF_R_EFANICDeviceGone,
    PF_R_GPUFellOffBus,
    PF_R_GPUUncorrectableECC,
    PF_R_GPURowRemapPending,
    PF_R_GPURowRemapFailed,
    PF_R_GPUXid,
    PF_R_NVLinkDown,
    PF_R_NVLinkErrors,
    PF_R_PCIeDowntrained,
    PF_R_GPUThrottled,
    PF_R_GPUDriverTooOld,
    PF_R_GPUMIGEnabled,
    /* fabric failures */
    PF_R_BandwidthBelowThreshold,
    PF_R_StragglerNode,
    PF_R_NodeBandwidthBelowThreshold,
    PF_R_DataCorruption,
    PF_R_SocketFallback,
    PF_R_NetPluginMissing,
    PF_R_GDRDisabled,
    PF_R_CollectiveFailed,
    PF_R_DataCorruptionNotLocalised,
    PF_R_EFANICIdle,
    PF_R_EFANICErrors,
    PF_R_EFANICSlow,
    /* a peer at fault */
    PF_R_SlowPeer,
    PF_R_PeerDataCorruption,
    /* infrastructure: could not test */
    PF_R_PeerTimeout,
    PF_R_PeerLost,
    PF_R_PeerRejected,
    PF_R_PeerProtocolError,
    PF_R_RendezvousFailed,
    PF_R_APIUnavailable,
    PF_R_Unauthorized,
    PF_R_Forbidden,
    PF_R_PublishFailed,
    PF_R_ReportFailed,
    PF_R_Interrupted,
    PF_R_GroupNotFormed,
    PF_R_EFAFabricErrorsRising,
    /* usage: the deployment is wrong */
    PF_R_RendezvousPortInUse,
    PF_R_PublishRefused,
    PF_R_ConfigNamesNothing,
    PF_R_COUNT
};

/* A remedy is the table's text, never a check's own. Where it needs a
 * value of the run it holds a placeholder, `{name}` (lower case letters
 * and '_'), that pf_reason_remedy fills with the one value the check
 * passes: a plain copy of that string, never a format, never read again
 * for placeholders (it may quote a peer). */
struct pf_reason_info {
    const char *name;              /* CamelCase word; "" for PF_R_None */
    enum pf_reason_class cls;
    const char *condition;         /* condition it feeds; "" = either */
    const char *remedy;            /* one line; "" when nothing to do */
};

/* The remedy of reason r raised as a warning, where that is another case
 * than its failure; NULL: the remedy. */
const char *pf_reason_remedy_warn(enum pf_reason r);

/* The first failure a stage detects, as it travels to the verdict: stages
 * that must not see the data model (transport, discovery) record here. */
struct pf_fault {
    pf_err err;                    /* PF_OK while nothing failed */
    enum pf_reason reason;
    char msg[PF_ERRLEN];
};

/* Record into f unless something was recorded first; returns err. */
pf_err pf_fault_set(struct pf_fault *f, pf_err err, enum pf_reason reason,
                    const char *msg);

/* Where an error was met. The same code means different things in
 * different places: a timeout is a peer that never came while the ranks
 * meet, an API write that hung while publishing. */
enum pf_stage {
    PF_STAGE_DISCOVER,    /* finding the peers: Kubernetes API, coordinator */
    PF_STAGE_TRANSPORT,   /* the ranks meeting and talking: rendezvous, MPI */
    PF_STAGE_COLLECTIVE,  /* the engine: fabric, all_reduce, re-tests */
    PF_STAGE_PUBLISH,     /* writing the verdict to the Node */
};

/* The one mapping of errors to reasons (a table in reasons_err.c): the reason
 * an error met in that stage gives the verdict. PF_R_None for PF_OK, and
 * for bad input in discovery (the run stops there with exit 2). */
enum pf_reason pf_reason_for_err(pf_err e, enum pf_stage where);
/* The class of an error that ends a command without a verdict to decide
 * it (webhook, history, `local`'s launcher, a report that could not be
 * built): usage for bad input (PF_ERR_USAGE, PF_ERR_CONFIG), ok for
 * PF_OK, infrastructure for anything else. Its exit code is the class's. */
enum pf_reason_class pf_err_class(pf_err e);

const struct pf_reason_info *pf_reason_info(enum pf_reason r);
const char *pf_reason_name(enum pf_reason r);
enum pf_reason_class pf_reason_class_of(enum pf_reason r);
/* PF_R_None when the word is not in the table. */
enum pf_reason pf_reason_by_name(const char *name);

/* The remedy of reason r into out (len bytes, always terminated): the
 * table's text (pf_reason_remedy_warn when warn and the row has one) with every
 * placeholder replaced by arg ("" when NULL). "" when r has none. */
void pf_reason_remedy(enum pf_reason r, bool warn, const char *arg,
                      char *out, size_t len);

const char *pf_class_name(enum pf_reason_class c);
/* Exit code of a run whose deciding failure has this class (README, "Exit codes"):
 * 0 pass, 1 node/fabric failure or a group failure nobody was blamed for,
 * 2 usage, 3 infrastructure, 4 a peer failed and this node did not. */
int pf_class_exit_code(enum pf_reason_class c);
/* The one status word of a class, the same in the Node's status label, the
 * report's verdict.status, the efa_preflight_status metric, `history`, the
 * table's summary and the Event: pass (ok), warn (warn, and peer: a peer
 * failed, this node did not), fail (node, fabric: a fault proven on this
 * node), error (group, infrastructure: this node could not be judged),
 * usage (the deployment is wrong; nothing is written to the cluster). */
const char *pf_class_status_word(enum pf_reason_class c);
/* Node status label the class leaves: its status word; NULL for usage,
 * which writes nothing. */
const char *pf_class_status_label(enum pf_reason_class c);
/* Status of a Node condition decided by a check of this class: "True" for
 * pass and warn, "False" only for a fault proven on this node (node,
 * fabric), "Unknown" (could not judge) for group, peer, infrastructure and
 * usage. */
const char *pf_class_condition_status(enum pf_reason_class c);
/* The same in the report's verdict.conditions: pass, warn, fail, unknown. */
const char *pf_class_condition_word(enum pf_reason_class c);
/* Only a failure proven on this node may taint it. */
bool pf_class_may_taint(enum pf_reason_class c);

/* `efa-preflight reasons`: the table as text, JSON or Markdown. */
void pf_reasons_print(FILE *out, const char *format);

#endif
