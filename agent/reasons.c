/* The one table of reasons (reasons.h). docs/diagnosis.md's summary table
 * is generated from it (`efa-preflight reasons --markdown`), and
 * tests/integration/test_diagnosis_doc.sh fails when the two drift. */
#include "reasons.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util/sanitize.h"

#define DEV PF_COND_DEVICES
#define FAB PF_COND_FABRIC
#define NIC PF_COND_NICS
#define GPU PF_COND_GPU

static const struct pf_reason_info table[PF_R_COUNT] = {
    [PF_R_None] = { "", PF_CLASS_OK, "", "" },

    [PF_R_PreflightPassed] = { "PreflightPassed", PF_CLASS_OK, "", "" },
    [PF_R_InstanceTypeKnown] = { "InstanceTypeKnown", PF_CLASS_OK, DEV, "" },
    [PF_R_EFAModuleLoaded] = { "EFAModuleLoaded", PF_CLASS_OK, DEV, "" },
    [PF_R_EFADeviceCountMatches] = { "EFADeviceCountMatches", PF_CLASS_OK,
                                     DEV, "" },
    [PF_R_EFAPortsActive] = { "EFAPortsActive", PF_CLASS_OK, DEV, "" },
    [PF_R_EFADeviceFilesPresent] = { "EFADeviceFilesPresent", PF_CLASS_OK,
                                     DEV, "" },
    [PF_R_EFAProviderAvailable] = { "EFAProviderAvailable", PF_CLASS_OK, DEV,
                                    "" },
    [PF_R_NetPluginFound] = { "NetPluginFound", PF_CLASS_OK, DEV, "" },
    [PF_R_LibfabricVersionOK] = { "LibfabricVersionOK", PF_CLASS_OK, DEV, "" },
    [PF_R_MemlockSufficient] = { "MemlockSufficient", PF_CLASS_OK, DEV, "" },
    [PF_R_HugePagesAvailable] = { "HugePagesAvailable", PF_CLASS_OK, DEV, "" },
    [PF_R_GDRSupported] = { "GDRSupported", PF_CLASS_OK, DEV, "" },
    [PF_R_GPUCountMatches] = { "GPUCountMatches", PF_CLASS_OK, DEV, "" },
    [PF_R_NotApplicable] = { "NotApplicable", PF_CLASS_OK, "", "" },
    [PF_R_EFANotRequired] = { "EFANotRequired", PF_CLASS_OK, DEV, "" },
    [PF_R_NotTested] = { "NotTested", PF_CLASS_OK, "", "" },
    [PF_R_FabricUntested] = { "FabricUntested", PF_CLASS_OK, FAB, "" },
    [PF_R_Validating] = { "Validating", PF_CLASS_OK, "", "" },
    [PF_R_EFANICsHealthy] = { "EFANICsHealthy", PF_CLASS_OK, NIC, "" },
    [PF_R_EFANICRecovered] = { "EFANICRecovered", PF_CLASS_OK, NIC, "" },
    [PF_R_RevalidationRequested] = { "RevalidationRequested", PF_CLASS_OK,
                                     "", "" },
    [PF_R_GPUsHealthy] = { "GPUsHealthy", PF_CLASS_OK, GPU, "" },

    [PF_R_UnknownInstanceType] = {
        "UnknownInstanceType", PF_CLASS_WARN, DEV,
        "pass --instance-type, or add the type to the catalog (--catalog "
        "FILE)" },
    [PF_R_HugePagesUnavailable] = {
        "HugePagesUnavailable", PF_CLASS_WARN, DEV,
        "reserve huge pages (sysctl vm.nr_hugepages) or set "
        "FI_EFA_USE_HUGE_PAGE=0" },
    [PF_R_GDRUnsupported] = {
        "GDRUnsupported", PF_CLASS_WARN, DEV,
        "check the EFA driver version (GPUDirect RDMA needs RDMA read)" },
    [PF_R_NetPluginNotFound] = {
        "NetPluginNotFound", PF_CLASS_WARN, DEV,
        "install aws-ofi-nccl in the image and add its lib folder (e.g. "
        "/opt/amazon/ofi-nccl/lib) to LD_LIBRARY_PATH, or name the library "
        "with NCCL_NET_PLUGIN" },
    [PF_R_LibfabricTooOld] = {
        "LibfabricTooOld", PF_CLASS_WARN, DEV,
        "use the EFA installer's libfabric (>= 1.22) in the image" },
    [PF_R_ProviderFallback] = {
        "ProviderFallback", PF_CLASS_WARN, FAB,
        "drop --fabric-provider (default efa) to test the EFA fabric "
        "itself" },
    [PF_R_EFANICErrorsSinceBoot] = {
        "EFANICErrorsSinceBoot", PF_CLASS_WARN, DEV,
        "look at dmesg | grep efa; errors that move again during a run fail "
        "it with EFANICErrors" },

    [PF_R_TaintCapReached] = {
        "TaintCapReached", PF_CLASS_WARN, "",
        "more nodes failed than --max-tainted lets carry the taint or "
        "recovery label at once (the taint budget ConfigMap holds them): "
        "look at those first; a cluster-wide cause (image, security group) "
        "fails many nodes together" },
    [PF_R_TaintBudgetUnavailable] = {
        "TaintBudgetUnavailable", PF_CLASS_WARN, "",
        "the taint budget ConfigMap (--taint-budget) could not be read or "
        "written, so the node was not tainted: grant get, create and update "
        "on configmaps in its namespace (k8s/10-rbac.yaml) and check the "
        "API server" },

    [PF_R_BandwidthNotJudged] = {
        "BandwidthNotJudged", PF_CLASS_WARN, FAB,
        "sweep up to the floor's message size (drop -e, or raise it) so the "
        "bandwidth is judged where the floor holds" },

    [PF_R_GPUHealthUnchecked] = {
        "GPUHealthUnchecked", PF_CLASS_WARN, GPU,
        "mount the NVIDIA driver's libnvidia-ml.so.1 in the container (the "
        "NVIDIA device plugin or container toolkit does with "
        "NVIDIA_DRIVER_CAPABILITIES=utility) or point EFA_PREFLIGHT_NVML at "
        "it; the message names what was not checked" },
    [PF_R_GPUECCDisabled] = {
        "GPUECCDisabled", PF_CLASS_WARN, GPU,
        "enable ECC (nvidia-smi -e 1) and reset the GPU or reboot: without "
        "it memory errors go unseen" },
    [PF_R_GPUPersistenceModeOff] = {
        "GPUPersistenceModeOff", PF_CLASS_WARN, GPU,
        "run nvidia-persistenced on the host (or nvidia-smi -pm 1): without "
        "it every process pays the GPU's initialisation" },
    [PF_R_PCIeReplaysRising] = {
        "PCIeReplaysRising", PF_CLASS_WARN, GPU,
        "the GPU's PCIe replay counter rose during the run: watch it (the "
        "monitor exports it); drain and replace the node if it keeps "
        "rising" },

    [PF_R_NotAnEFAInstance] = {
        "NotAnEFAInstance", PF_CLASS_NODE, DEV,
        "run on an EFA-capable instance type, pass --instance-type, or pass "
        "--fabric-provider tcp to test without EFA" },
    [PF_R_EFAModuleNotLoaded] = {
        "EFAModuleNotLoaded", PF_CLASS_NODE, DEV,
        "load the driver on the host: modprobe efa (installed by the EFA "
        "installer / EKS GPU AMI)" },
    [PF_R_EFADeviceCountMismatch] = {
        "EFADeviceCountMismatch", PF_CLASS_NODE, DEV,
        "check that every EFA interface was attached at launch and the efa "
        "driver is healthy (dmesg | grep efa); replace the node if devices "
        "are missing" },
    [PF_R_EFAPortDown] = {
        "EFAPortDown", PF_CLASS_NODE, DEV,
        "check the network interface attachment and the efa driver log "
        "(dmesg | grep efa); replace the node if it stays down" },
    [PF_R_EFADeviceFilesMissing] = {
        "EFADeviceFilesMissing", PF_CLASS_NODE, DEV,
        "give the container /dev/infiniband: request vpc.amazonaws.com/efa "
        "resources (EFA device plugin) or run privileged" },
    [PF_R_EFAProviderUnavailable] = {
        "EFAProviderUnavailable", PF_CLASS_NODE, DEV,
        "install the EFA software (aws-efa-installer) so libfabric with the "
        "efa provider is in /opt/amazon/efa, or point --libfabric-path at "
        "it" },
    [PF_R_MemlockTooLow] = {
        "MemlockTooLow", PF_CLASS_NODE, DEV,
        "raise the locked-memory limit: ulimit -l unlimited, or the "
        "container runtime's memlock ulimit" },
    [PF_R_GPUCountMismatch] = {
        "GPUCountMismatch", PF_CLASS_NODE, DEV,
        "request all the node's GPUs (nvidia.com/gpu) and check the NVIDIA "
        "driver (nvidia-smi)" },
    [PF_R_FabricUnavailable] = {
        "FabricUnavailable", PF_CLASS_NODE, FAB,
        "install libfabric with the provider asked for (the EFA installer "
        "for efa), or pick one with --fabric-provider" },

    [PF_R_BandwidthBelowThreshold] = {
        "BandwidthBelowThreshold", PF_CLASS_GROUP, FAB,
        "no node was singled out: run `efa-preflight node` on each host "
        "(EFA count, GDR, NCCL plugin), check the security group and "
        "placement, and re-run with 3 or more nodes to localise" },
    [PF_R_StragglerNode] = {
        "StragglerNode", PF_CLASS_FABRIC, FAB,
        "drain this node and run `efa-preflight node` on it (EFA count, "
        "ports, GDR, NCCL plugin; dmesg for EFA errors); its ring peers are "
        "fine" },
    [PF_R_NodeBandwidthBelowThreshold] = {
        "NodeBandwidthBelowThreshold", PF_CLASS_FABRIC, FAB,
        "every rank ran on this node: check its GPUs' NVLink/PCIe topology "
        "(nvidia-smi topo -m), its EFA devices and NCCL's transport log" },
    [PF_R_DataCorruption] = {
        "DataCorruption", PF_CLASS_FABRIC, FAB,
        "this node's GPU memory, NIC or driver corrupts data: drain it, run "
        "`efa-preflight node` on it and check dmesg for EFA and Xid errors" },
    [PF_R_DataCorruptionNotLocalised] = {
        "DataCorruptionNotLocalised", PF_CLASS_GROUP, FAB,
        "wrong data and no node singled out: run `efa-preflight node` on "
        "every host, check dmesg for EFA and Xid errors, re-run with 3 or "
        "more nodes to localise" },
    [PF_R_SocketFallback] = {
        "SocketFallback", PF_CLASS_FABRIC, FAB,
        "put aws-ofi-nccl (libnccl-net-ofi.so) in the image and on "
        "LD_LIBRARY_PATH; unset NCCL_NET=Socket, NCCL_P2P_DISABLE and "
        "NCCL_SHM_DISABLE" },
    [PF_R_NetPluginMissing] = {
        "NetPluginMissing", PF_CLASS_FABRIC, FAB,
        "install aws-ofi-nccl in the image and add its lib folder (e.g. "
        "/opt/amazon/ofi-nccl/lib) to LD_LIBRARY_PATH, or set "
        "NCCL_NET_PLUGIN" },
    [PF_R_GDRDisabled] = {
        "GDRDisabled", PF_CLASS_FABRIC, FAB,
        "load the GPU peer-memory support (nvidia-peermem or dma-buf), "
        "check FI_EFA_USE_DEVICE_RDMA and NCCL_NET_GDR_LEVEL" },
    [PF_R_CollectiveFailed] = {
        "CollectiveFailed", PF_CLASS_FABRIC, FAB,
        "read the message and the rank logs; re-run with --log-level "
        "debug" },
    [PF_R_EFANICIdle] = {
        "EFANICIdle", PF_CLASS_FABRIC, FAB,
        "check that every EFA device reaches the container (EFA device "
        "plugin request) and that NCCL's plugin uses them all (NCCL_DEBUG="
        "INFO 'found N nics'); replace the node if a NIC stays idle" },
    [PF_R_EFANICErrors] = {
        "EFANICErrors", PF_CLASS_FABRIC, FAB,
        "look at dmesg | grep efa and the NIC's counters (ports/1/"
        "hw_counters); re-run, and replace the node if they move again on "
        "the same NIC" },
    [PF_R_EFANICCountersUnavailable] = {
        "EFANICCountersUnavailable", PF_CLASS_WARN, NIC,
        "the EFA driver exposes no hw_counters: update the EFA driver (EFA "
        "installer) so the monitor can judge error rates" },
    [PF_R_EFANICErrorRate] = {
        "EFANICErrorRate", PF_CLASS_NODE, NIC,
        "an error counter of one NIC rose for several intervals in a row "
        "while its siblings stayed quiet: drain the node, look at dmesg | "
        "grep efa, and replace it if the errors persist after a reboot" },
    [PF_R_EFANICLinkDown] = {
        "EFANICLinkDown", PF_CLASS_NODE, NIC,
        "an EFA port left ACTIVE: drain the node; a reboot or a stop/start "
        "of the instance usually brings the link back, else replace it" },
    [PF_R_EFANICDeviceGone] = {
        "EFANICDeviceGone", PF_CLASS_NODE, NIC,
        "an EFA device disappeared (or fewer than the instance type has are "
        "present): drain and reboot the node, replace it if it persists" },
    [PF_R_GPUFellOffBus] = {
        "GPUFellOffBus", PF_CLASS_NODE, GPU,
        "the GPU named no longer answers (XID 79, NVML_ERROR_GPU_IS_LOST): "
        "drain the node and reboot it; replace it if the GPU falls off "
        "again" },
    [PF_R_GPUUncorrectableECC] = {
        "GPUUncorrectableECC", PF_CLASS_NODE, GPU,
        "uncorrectable ECC errors since the driver loaded: drain the node "
        "and reset the GPU (nvidia-smi -r) or reboot; replace it if they come "
        "back" },
    [PF_R_GPURowRemapPending] = {
        "GPURowRemapPending", PF_CLASS_NODE, GPU,
        "a row remap (or page retirement) waits for a reset: drain the node "
        "and reset the GPU (nvidia-smi -r) or reboot before the next job" },
    [PF_R_GPURowRemapFailed] = {
        "GPURowRemapFailed", PF_CLASS_NODE, GPU,
        "the GPU ran out of spare rows (remap failure): drain the node and "
        "replace it; a reset does not repair this" },
    [PF_R_GPUXid] = {
        "GPUXid", PF_CLASS_NODE, GPU,
        "a node-fault XID during the run: drain the node and reset the GPU "
        "or reboot; replace it if the XID comes back (the message names the "
        "XID and what it means)" },
    [PF_R_NVLinkDown] = {
        "NVLinkDown", PF_CLASS_NODE, GPU,
        "fewer NVLink links active than the type has: drain the node, check "
        "nvidia-fabricmanager, reset the GPUs or reboot; replace the node if "
        "links stay down" },
    [PF_R_NVLinkErrors] = {
        "NVLinkErrors", PF_CLASS_NODE, GPU,
        "NVLink recovery errors during the all_reduce: drain the node and "
        "reset the GPUs; replace the node if they rise again" },
    [PF_R_PCIeDowntrained] = {
        "PCIeDowntrained", PF_CLASS_NODE, GPU,
        "the GPU's PCIe link trained narrower or slower than the type's "
        "slot: drain the node and reboot it; replace it if the link trains "
        "low again" },
    [PF_R_GPUThrottled] = {
        "GPUThrottled", PF_CLASS_NODE, GPU,
        "hardware slowdown, thermal slowdown or power brake held the GPU's "
        "clocks: drain the node and check cooling and power (nvidia-smi -q "
        "-d PERFORMANCE); replace it if it persists" },
    [PF_R_GPUDriverTooOld] = {
        "GPUDriverTooOld", PF_CLASS_NODE, GPU,
        "the NVIDIA driver is older than the type needs: update the node's "
        "AMI or driver, then drain and replace the node" },
    [PF_R_GPUMIGEnabled] = {
        "GPUMIGEnabled", PF_CLASS_NODE, GPU,
        "MIG is on where the type runs whole GPUs: disable it (nvidia-smi "
        "-mig 0) and reset the GPU, or fix the node's MIG configuration" },
    [PF_R_EFANICSlow] = {
        "EFANICSlow", PF_CLASS_FABRIC, FAB,
        "re-run to confirm, then replace the node: one NIC (or its link) "
        "carries its share of the traffic far slower than its siblings" },

    [PF_R_SlowPeer] = {
        "SlowPeer", PF_CLASS_PEER, FAB,
        /* the reason the slow node's report fails with: StragglerNode
         * (its ring links), EFANICSlow (one of its NICs) */
        "nothing to fix here: the slow node's own report fails with "
        "{culprit_reason}; re-run once it is drained or replaced" },

    [PF_R_PeerDataCorruption] = {
        "PeerDataCorruption", PF_CLASS_PEER, FAB,
        "nothing to fix here: the corrupting node's own report fails with "
        "DataCorruption; re-run once it is drained or replaced" },

    [PF_R_PeerTimeout] = {
        "PeerTimeout", PF_CLASS_INFRA, FAB,
        "check that every rank started and reaches rank 0's rendezvous "
        "port: no NetworkPolicy in the way (the chart's "
        "networkPolicy.enabled admits the pods to each other), a security "
        "group allowing all traffic to and from itself" },
    [PF_R_PeerLost] = {
        "PeerLost", PF_CLASS_INFRA, FAB,
        "a rank exited or its node failed mid-run: read that rank's log, "
        "then re-run" },
    [PF_R_PeerRejected] = {
        "PeerRejected", PF_CLASS_INFRA, FAB,
        "give every rank the same --secret-file, run id and world size" },
    [PF_R_PeerProtocolError] = {
        "PeerProtocolError", PF_CLASS_INFRA, FAB,
        "run the same efa-preflight version on every rank" },
    [PF_R_RendezvousFailed] = {
        "RendezvousFailed", PF_CLASS_INFRA, FAB,
        "read the message: the ranks could not meet (socket error); re-run "
        "with --log-level debug" },
    [PF_R_APIUnavailable] = {
        "APIUnavailable", PF_CLASS_INFRA, "",
        "check that the pod reaches the Kubernetes API server (address, "
        "network policy, CA)" },
    [PF_R_Unauthorized] = {
        "Unauthorized", PF_CLASS_INFRA, "",
        "the API server refused the token (401): check the service account "
        "token mount and its expiry" },
    [PF_R_Forbidden] = {
        "Forbidden", PF_CLASS_INFRA, "",
        "grant the service account the RBAC in k8s/ (pods get/list/watch, "
        "nodes get/patch, nodes/status patch, events create)" },
    [PF_R_PublishFailed] = {
        "PublishFailed", PF_CLASS_INFRA, "",
        "the verdict could not be written to the Node: read the message "
        "(API error) and re-run" },
    [PF_R_ReportFailed] = {
        "ReportFailed", PF_CLASS_INFRA, "",
        "the --report file could not be written: check its directory "
        "(exists, writable, space left); the Node was written first" },
    [PF_R_Interrupted] = {
        "Interrupted", PF_CLASS_INFRA, "",
        "the run was stopped (SIGTERM/SIGINT: pod deleted, node shut down) "
        "before its verdict: re-run it (a DaemonSet node stays pending and "
        "is validated again)" },

    [PF_R_EFAFabricErrorsRising] = {
        "EFAFabricErrorsRising", PF_CLASS_GROUP, NIC,
        "remote-side error counters (retransmit timeouts, unresponsive or "
        "impaired remotes) rise on most NICs of this node at once: the "
        "fabric or the peers, not this node; look at the job's other "
        "nodes and the security group" },
    [PF_R_GroupNotFormed] = {
        "GroupNotFormed", PF_CLASS_INFRA, FAB,
        "other nodes of this pool are pending, but no group formed (Lease "
        "or coordinator trouble: read the warnings): the node stays pending "
        "and the agent exits so that the kubelet starts it again" },

    [PF_R_RendezvousPortInUse] = {
        "RendezvousPortInUse", PF_CLASS_USAGE, FAB,
        "another process holds rank 0's rendezvous port: pick a free one "
        "with --port (same on every rank)" },
    [PF_R_PublishRefused] = {
        "PublishRefused", PF_CLASS_USAGE, "",
        "the API server refused the Node write as invalid (400/422): check "
        "--label-prefix and the node name" },
    [PF_R_ConfigNamesNothing] = {
        "ConfigNamesNothing", PF_CLASS_USAGE, "",
        "a value names nothing on this host: --fabric-provider must be a "
        "libfabric provider (efa, tcp, shm), --bind-addr and every "
        "--fabric-addrs entry an address of this node; nothing was written" },
};

/* Remedies of reasons raised as a warning where that is another case than
 * their failure (a row of its own, so the table's rows stay four fields). */
static const char *const warn_remedy[PF_R_COUNT] = {
    /* more devices than expected: the expectation is wrong */
    [PF_R_EFADeviceCountMismatch] =
        "fix the catalog entry (--catalog FILE) or set --expect-efa",
    [PF_R_GPUXid] =
        "an XID of the node class in the kernel log since boot, or another "
        "XID during the run: look at dmesg | grep Xid; reset the GPU if it "
        "misbehaves, replace it if node-class XIDs repeat",
    [PF_R_GPUUncorrectableECC] =
        "uncorrectable errors in the GPU's lifetime (aggregate) but none "
        "since the driver loaded: watch it; replace the GPU if they grow",
    [PF_R_NVLinkErrors] =
        "NVLink CRC or replay errors rose during the all_reduce (corrected "
        "by retransmission): watch them; reset the GPUs if they keep "
        "rising",
    [PF_R_PCIeDowntrained] =
        "the PCIe link ran below its maximum generation right after the "
        "all_reduce: re-run to confirm; reboot the node if it stays low",
    [PF_R_GPUThrottled] =
        "hardware slowdown seen in one read only: re-run; drain the node if "
        "it comes back",
    [PF_R_GPUDriverTooOld] =
        "the driver is below the catalog's minimum, which is an estimate "
        "for this type: update the driver, or fix the catalog (--catalog)",
    /* fewer efa domains than EFA devices */
    [PF_R_EFAProviderUnavailable] =
        "check FI_EFA_* / FI_PROVIDER settings and the uverbs files of the "
        "missing devices",
};

const char *pf_reason_remedy_warn(enum pf_reason r)
{
    return (unsigned)r < PF_R_COUNT ? warn_remedy[r] : NULL;
}

pf_err pf_fault_set(struct pf_fault *f, pf_err err, enum pf_reason reason,
                    const char *msg)
{
    if (f && f->err == PF_OK && f->reason == PF_R_None) {
        f->err = err;
        f->reason = reason;
        /* A transport message may quote what a peer sent. */
        pf_sanitize(f->msg, sizeof(f->msg), msg ? msg : "");
    }
    return err;
}

/* A placeholder: '{', one or more of [a-z_], '}'. Its length, else 0. */
static size_t placeholder_len(const char *p)
{
    size_t n = 1;

    if (*p != '{')
        return 0;
    while ((p[n] >= 'a' && p[n] <= 'z') || p[n] == '_')
        n++;
    return n > 1 && p[n] == '}' ? n + 1 : 0;
}

void pf_reason_remedy(enum pf_reason r, bool warn, const char *arg,
                      char *out, size_t len)
{
    const struct pf_reason_info *ri = pf_reason_info(r);
    const char *t = warn && pf_reason_remedy_warn(r) ? pf_reason_remedy_warn(r)
                                                 : ri->remedy;
    size_t o = 0;

    if (!out || len == 0)
        return;
    if (!arg)
        arg = "";
    /* A copy, character by character: the value is text, not a format,
     * and is not scanned for placeholders of its own. */
    while (*t && o + 1 < len) {
        size_t n = placeholder_len(t);
        if (n == 0) {
            out[o++] = *t++;
            continue;
        }
        for (const char *a = arg; *a && o + 1 < len; a++)
            out[o++] = *a;
        t += n;
    }
    out[o] = '\0';
}

const struct pf_reason_info *pf_reason_info(enum pf_reason r)
{
    if ((int)r < 0 || r >= PF_R_COUNT)
        r = PF_R_None;
    return &table[r];
}

const char *pf_reason_name(enum pf_reason r)
{
    return pf_reason_info(r)->name;
}

enum pf_reason_class pf_reason_class_of(enum pf_reason r)
{
    return pf_reason_info(r)->cls;
}

enum pf_reason pf_reason_by_name(const char *name)
{
    if (!name || !*name)
        return PF_R_None;
    for (int i = 1; i < PF_R_COUNT; i++)
        if (!strcmp(table[i].name, name))
            return (enum pf_reason)i;
    return PF_R_None;
}

const char *pf_class_name(enum pf_reason_class c)
{
    switch (c) {
    case PF_CLASS_OK: return "ok";
    case PF_CLASS_WARN: return "warn";
    case PF_CLASS_NODE: return "node";
    case PF_CLASS_FABRIC: return "fabric";
    case PF_CLASS_GROUP: return "group";
    case PF_CLASS_PEER: return "peer";
    case PF_CLASS_INFRA: return "infrastructure";
    case PF_CLASS_USAGE: return "usage";
    }
    return "?";
}

int pf_class_exit_code(enum pf_reason_class c)
{
    switch (c) {
    case PF_CLASS_NODE:
    case PF_CLASS_FABRIC:
    case PF_CLASS_GROUP: return 1;
    case PF_CLASS_USAGE: return 2;
    case PF_CLASS_INFRA: return 3;
    case PF_CLASS_PEER: return 4;
    case PF_CLASS_OK:
    case PF_CLASS_WARN: return 0;
    }
    return 1;
}

const char *pf_class_status_word(enum pf_reason_class c)
{
    switch (c) {
    case PF_CLASS_OK: return "pass";
    case PF_CLASS_WARN:
    case PF_CLASS_PEER: return "warn";
    case PF_CLASS_NODE:
    case PF_CLASS_FABRIC: return "fail";
    case PF_CLASS_GROUP:
    case PF_CLASS_INFRA: return "error";
    case PF_CLASS_USAGE: return "usage";
    }
    return "error";
}

const char *pf_class_status_label(enum pf_reason_class c)
{
    return c == PF_CLASS_USAGE ? NULL : pf_class_status_word(c);
}

const char *pf_class_condition_status(enum pf_reason_class c)
{
    switch (c) {
    case PF_CLASS_OK:
    case PF_CLASS_WARN: return "True";
    case PF_CLASS_NODE:
    case PF_CLASS_FABRIC: return "False";
    case PF_CLASS_GROUP:
    case PF_CLASS_PEER:
    case PF_CLASS_INFRA:
    case PF_CLASS_USAGE: return "Unknown";
    }
    return "Unknown";
}

const char *pf_class_condition_word(enum pf_reason_class c)
{
    const char *st = pf_class_condition_status(c);
    return !strcmp(st, "Unknown") ? "unknown" : pf_class_status_word(c);
}

bool pf_class_may_taint(enum pf_reason_class c)
{
    return c == PF_CLASS_NODE || c == PF_CLASS_FABRIC;
}

static void print_json(FILE *out)
{
    cJSON *arr = cJSON_CreateArray();
    char *s;

    for (int i = 1; i < PF_R_COUNT; i++) {
        const struct pf_reason_info *r = &table[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "reason", r->name);
        cJSON_AddStringToObject(o, "class", pf_class_name(r->cls));
        cJSON_AddNumberToObject(o, "exit_code", pf_class_exit_code(r->cls));
        cJSON_AddStringToObject(o, "status", pf_class_status_word(r->cls));
        if (pf_class_status_label(r->cls))
            cJSON_AddStringToObject(o, "status_label",
                                    pf_class_status_label(r->cls));
        else
            cJSON_AddNullToObject(o, "status_label");
        cJSON_AddStringToObject(o, "condition", r->condition);
        cJSON_AddStringToObject(o, "condition_status",
                                pf_class_condition_status(r->cls));
        cJSON_AddBoolToObject(o, "may_taint", pf_class_may_taint(r->cls));
        cJSON_AddStringToObject(o, "remedy", r->remedy);
        if (warn_remedy[i])
            cJSON_AddStringToObject(o, "remedy_warn", warn_remedy[i]);
        cJSON_AddItemToArray(arr, o);
    }
    s = cJSON_Print(arr);
    if (s)
        fprintf(out, "%s\n", s);
    cJSON_free(s);
    cJSON_Delete(arr);
}

/* Text in a Markdown table cell: '|' would end the cell, '*' start an
 * emphasis. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '*')
            fputc('\\', out);
        fputc(*s, out);
    }
}

void pf_reasons_print(FILE *out, const char *format)
{
    if (!strcmp(format, "json")) {
        print_json(out);
        return;
    }
    if (!strcmp(format, "markdown")) {
        fprintf(out, "| reason | class | exit | status | condition | "
                     "may taint | remedy |\n|---|---|---|---|---|---|---|\n");
        for (int i = 1; i < PF_R_COUNT; i++) {
            const struct pf_reason_info *r = &table[i];
            /* a pass-class reason raised as a skip leaves Unknown */
            fprintf(out, "| `%s` | %s | %d | %s%s | %s=%s%s | %s | ",
                    r->name, pf_class_name(r->cls), pf_class_exit_code(r->cls),
                    pf_class_status_word(r->cls),
                    pf_class_status_label(r->cls) ? ""
                                                  : " (nothing written)",
                    r->condition[0] ? r->condition : "either",
                    pf_class_condition_status(r->cls),
                    r->cls == PF_CLASS_OK ? " (Unknown when skipped)" : "",
                    pf_class_may_taint(r->cls) ? "yes" : "no");
            md_cell(out, r->remedy);
            if (warn_remedy[i]) {
                fputs("; as a warning: ", out);
                md_cell(out, warn_remedy[i]);
            }
            fputs(" |\n", out);
        }
        return;
    }
    fprintf(out, "%-26s %-14s %4s  %s\n", "REASON", "CLASS", "EXIT", "REMEDY");
    for (int i = 1; i < PF_R_COUNT; i++) {
        const struct pf_reason_info *r = &table[i];
        fprintf(out, "%-26s %-14s %4d  %s", r->name, pf_class_name(r->cls),
                pf_class_exit_code(r->cls), r->remedy[0] ? r->remedy : "-");
        if (warn_remedy[i])
            fprintf(out, "; as a warning: %s", warn_remedy[i]);
        fputc('\n', out);
    }
}
