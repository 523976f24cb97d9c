#!/bin/bash
# `efa-preflight node --json` on every fixture tree: exact exit code and
# headline reason (verdict.reason), plus the DMI path, the report file and
# the memlock requirement. Libfabric is the fake one (domains = devices),
# GPUs are not expected (--expect-gpus 0): each broken tree fails for its
# own reason only. NCCL and the CUDA runtime are pinned to "absent" so
# this machine's own libraries cannot change a verdict (NVML too: GPU
# health is tests/integration/test_gpu_health.sh's); the net plugin
# cases load the NCCL/CUDA double instead.
. "$(dirname "$0")/lib_test.sh"
pf_fixtures
pf_need "$FAKE"
DOUBLE=$B/double/libgpu-double.so
pf_need "$DOUBLE"
export EFA_PREFLIGHT_NCCL=/nonexistent/libnccl.so.2
export EFA_PREFLIGHT_CUDART=/nonexistent/libcudart.so
export EFA_PREFLIGHT_NVML=/nonexistent/libnvidia-ml.so.1
unset NCCL_NET_PLUGIN
fails=0

# run_fx FIXTURE DOMAINS [flags...]: run the binary on a fixture, JSON to $tmp/out.json
run_fx() {
    local fx=$1 domains=$2; shift 2
    PF_FAKE_FI_EFA_DOMAINS=$domains "$PF_BIN" node --sysfs-root "$FX/$fx" \
        --dev-root "$FX/$fx" --no-imds --libfabric-path "$FAKE" \
        --expect-gpus 0 --min-memlock-mib 0 --efa-recount-ms 0 --json "$@" \
        >"$tmp/out.json" 2>"$tmp/err.txt"
}

# expect FIXTURE DOMAINS EXIT REASON [flags...]
expect() {
    local fx=$1 domains=$2 want_rc=$3 want_reason=$4; shift 4
    run_fx "$fx" "$domains" --instance-type "$(cat "$FX/$fx/sys/devices/virtual/dmi/id/product_name")" "$@"
    local rc=$? reason
    reason=$(pf_field "$tmp/out.json" verdict.reason 2>/dev/null)
    if [ "$rc" = "$want_rc" ] && [ "$reason" = "$want_reason" ]; then
        echo "ok   $fx: exit $rc, reason $reason"
    else
        echo "FAIL $fx: exit $rc (want $want_rc), reason '$reason' (want '$want_reason')"
        cat "$tmp/err.txt"
        fails=$((fails + 1))
    fi
}

expect p4d.24xlarge      4 0 None
expect p5.48xlarge      32 0 None
expect p5en.48xlarge    16 0 None
expect p6-b200.48xlarge  8 0 None
expect g5.48xlarge       1 0 None
expect p5-31            31 1 EFADeviceCountMismatch
expect p5-nomodule       0 1 EFAModuleNotLoaded
expect p5-nouverbs      32 1 EFADeviceFilesMissing
expect p5-portdown      32 1 EFAPortDown
expect p5en-15          15 1 EFADeviceCountMismatch
expect p5.48xlarge       0 1 EFAProviderUnavailable
expect p5-31            31 0 None --expect-efa 31
# an old libfabric on a GPU type is a warning, not a failure
PF_FAKE_FI_VERSION=1.17 expect p5.48xlarge 32 0 LibfabricTooOld
# the provider asked for is tcp: EFA checks skip, nothing fails
expect p5-nomodule       0 0 None --fabric-provider tcp

# NCCL's net plugin, looked up as NCCL does, with NCCL and 8 GPUs from the
# double. check_plugin STATUS REASON MESSAGE-PART: the nccl_net_plugin check.
check_plugin() {
    local got
    got=$(python3 -c 'import json,sys
c = [c for c in json.load(open(sys.argv[1]))["checks"] if c["name"] == "nccl_net_plugin"][0]
print(c["status"], c["reason"], sys.argv[2] in c["message"])' "$tmp/out.json" "$3")
    if [ "$got" = "$1 $2 True" ]; then
        echo "ok   net plugin: $1 $2 ($3)"
    else
        echo "FAIL net plugin: got '$got', want '$1 $2 True' for '$3'"
        fails=$((fails + 1))
    fi
}
with_gpus() { # run "$@" with NCCL, 8 healthy GPUs (NVML too) and the plugin stand-ins
    EFA_PREFLIGHT_NCCL=$DOUBLE EFA_PREFLIGHT_CUDART=$DOUBLE PF_DOUBLE_GPUS=8 \
        EFA_PREFLIGHT_NVML=$B/double/libnvml-double.so PF_NVML_FIXTURE= \
        LD_LIBRARY_PATH=$B/test-helpers "$@"
}
NCCL_NET_PLUGIN=fake with_gpus expect p5.48xlarge 32 0 None --expect-gpus 8
check_plugin pass NetPluginFound "libnccl-net-fake.so (ncclNetPlugin_v9)"
with_gpus expect p5.48xlarge 32 0 NetPluginNotFound --expect-gpus 8
check_plugin warn NetPluginNotFound "libnccl-net.so: cannot open shared object file"
NCCL_NET_PLUGIN=broken with_gpus expect p5.48xlarge 32 0 NetPluginNotFound --expect-gpus 8
check_plugin warn NetPluginNotFound "libpf-plugin-dep.so: cannot open shared object file"

# p6-b200: exactly 8 EFA counted, the 2 ibp* devices reported apart
run_fx p6-b200.48xlarge 8
if [ "$(pf_field "$tmp/out.json" node.efa.count)" = 8 ] &&
   [ "$(pf_field "$tmp/out.json" node.efa.non_efa_rdma_devices)" = 2 ]; then
    echo "ok   p6-b200: 8 EFA, 2 non-EFA"
else
    echo "FAIL p6-b200 counts"; fails=$((fails + 1))
fi

# no --instance-type: the type comes from DMI product_name
run_fx p5.48xlarge 32
if [ "$(pf_field "$tmp/out.json" node.instance_type)" = p5.48xlarge ] &&
   [ "$(pf_field "$tmp/out.json" node.instance_source)" = dmi ]; then
    echo "ok   instance type from DMI"
else
    echo "FAIL instance type from DMI"; fails=$((fails + 1))
fi

# --report writes the same document the --json flag prints
run_fx p5-31 31 --report "$tmp/report.json"
rc=$?
if [ $rc = 1 ] && cmp -s <(python3 -m json.tool "$tmp/out.json") \
                          <(python3 -m json.tool "$tmp/report.json"); then
    echo "ok   --report file equals --json output"
else
    echo "FAIL --report (exit $rc)"; fails=$((fails + 1))
fi

# the table: check lines, remedy and the summary, exit 1
PF_FAKE_FI_EFA_DOMAINS=31 "$PF_BIN" node --sysfs-root "$FX/p5-31" --dev-root "$FX/p5-31" \
    --no-imds --libfabric-path "$FAKE" --expect-gpus 0 --min-memlock-mib 0 >"$tmp/table.txt"
rc=$?
if [ $rc = 1 ] && grep -q '^FAIL   efa_devices        EFADeviceCountMismatch   found 31 of 32' "$tmp/table.txt" &&
   grep -q 'remedy: check that every EFA interface' "$tmp/table.txt" &&
   grep -q '^summary: FAIL EFADeviceCountMismatch' "$tmp/table.txt"; then
    echo "ok   table output"
else
    echo "FAIL table output (exit $rc)"; cat "$tmp/table.txt"; fails=$((fails + 1))
fi

# memlock: the default requires unlimited; a limit above any finite one fails
if [ "$(ulimit -l)" = unlimited ]; then
    echo "ok   memlock case skipped: this shell's memlock is unlimited"
else
    run_fx p5.48xlarge 32 --min-memlock-mib 1073741823
    rc=$?
    if [ $rc = 1 ] && [ "$(pf_field "$tmp/out.json" verdict.reason)" = MemlockTooLow ]; then
        echo "ok   MemlockTooLow"
    else
        echo "FAIL MemlockTooLow (exit $rc)"; fails=$((fails + 1))
    fi
fi

# bad input: a sysfs root that does not exist is exit 2 with its name
"$PF_BIN" node --sysfs-root /nonexistent/fixture --no-imds >/dev/null 2>"$tmp/err.txt"
rc=$?
if [ $rc = 2 ] && grep -q "sysfs_root '/nonexistent/fixture': No such file or directory" "$tmp/err.txt"; then
    echo "ok   missing sysfs root: exit 2"
else
    echo "FAIL missing sysfs root (exit $rc)"; cat "$tmp/err.txt"; fails=$((fails + 1))
fi

[ $fails = 0 ] || { echo "$fails case(s) failed"; exit 1; }
echo "all node fixture cases passed"
