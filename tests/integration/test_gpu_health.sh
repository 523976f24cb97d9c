#!/bin/bash
# GPU health through the binary, on the NVML double (build/double/
# libnvml-double.so, one fixture per case) with the CUDA/NCCL double for
# the GPU count:
#  1. `node` on 8 healthy H200s (p5e.48xlarge, provider tcp so no EFA is
#     needed): exit 0, every GPU check passes, the report's
#     node.gpu_health lists 8 GPUs with serials, GPUHealthy=pass, the read
#     well under the 1 s budget;
#  2. a pending row remap on GPU 2: exit 1, GPURowRemapPending naming GPU 2
#     (index, bus id, serial) in the table and the report, GPUHealthy=fail;
#  3. NVML missing: exit 0 with the GPUHealthUnchecked warning naming what
#     was not checked;
#  4. the kernel log since boot (--dev-root fixture with dev/kmsg): an XID 79
#     on GPU 0's bus warns;
#  5. `local`: an XID 48 raised on GPU 3 while the agent runs fails the run
#     with GPUXid "during the all_reduce".
. "$(dirname "$0")/lib_test.sh"
build=${BUILD:-build}
nvml=$root/$build/double/libnvml-double.so
gpu=$root/$build/double/libgpu-double.so
fail() { echo "FAIL $*"; tail -n 20 "$tmp/out" "$tmp/err" 2>/dev/null; exit 1; }
report() { json "$tmp/r.json" "$1"; }
check() { pf_check_said "$1"; }   # name -> "status reason message"
[ -r "$nvml" ] && [ -r "$gpu" ] || fail "test doubles missing (make test-helpers)"
unset CUDA_VISIBLE_DEVICES NCCL_DEBUG NCCL_DEBUG_FILE
mkdir -p "$tmp/root/dev"

node() { # fixture-text [extra flags...]
    printf '%s\n' "$1" >"$tmp/fixture"
    shift
    pf_agent 60 env EFA_PREFLIGHT_NVML="${NVML:-$nvml}" PF_NVML_FIXTURE="$tmp/fixture" \
        EFA_PREFLIGHT_CUDART="$gpu" EFA_PREFLIGHT_NCCL="$gpu" PF_DOUBLE_GPUS=8 \
        "$bin" node --no-imds --instance-type p5e.48xlarge \
        --fabric-provider tcp --dev-root "$tmp/root" "$@"
}

# 1. healthy
node "gpus 8"
[ $rc -eq 0 ] || fail "healthy GPUs: exit $rc"
got=$(report '[c["status"] for c in r["checks"] if c["condition"] == "GPUHealthy"]')
[[ "$got" != *fail* && "$got" != *warn* && "$got" == *pass* ]] || fail "healthy: GPU checks $got"
got=$(report '(r["node"]["gpu_health"]["count"], r["node"]["gpu_health"]["devices"][2]["serial"], r["node"]["gpu_health"]["devices"][2]["bus_id"], r["verdict"]["conditions"]["GPUHealthy"])')
[ "$got" = "(8, '1650000000002', '00000000:38:00.0', 'pass')" ] || fail "healthy: report says $got"
ms=$(report 'r["node"]["gpu_health"]["read_ms"]')
python3 -c "import sys; sys.exit(not float(sys.argv[1]) < 1000)" "$ms" || fail "reading 8 GPUs took $ms ms"
echo "ok   8 healthy GPUs: exit 0, GPUHealthy=pass, read in $ms ms"

# 2. pending row remap on GPU 2
node "gpu.2.remap_pending 1"
[ $rc -eq 1 ] || fail "remap pending: exit $rc, want 1"
got=$(check gpu_row_remap)
[[ "$got" == "fail GPURowRemapPending GPU 2 (00000000:38:00.0, serial 1650000000002): row remap pending"* ]] ||
    fail "remap pending: check is: $got"
got=$(report '(r["verdict"]["reason"], r["verdict"]["status"], r["verdict"]["class"], r["verdict"]["conditions"]["GPUHealthy"])')
[ "$got" = "('GPURowRemapPending', 'fail', 'node', 'fail')" ] || fail "remap pending: verdict $got"
grep -q "GPURowRemapPending" "$tmp/out" && grep -q "reset the GPU" "$tmp/out" ||
    fail "remap pending: the table lacks the reason or its remedy"
echo "ok   pending remap on GPU 2: exit 1, GPURowRemapPending names the GPU, remedy says reset"

# 3. NVML missing
NVML=/nonexistent/libnvidia-ml.so.1 node ""
[ $rc -eq 0 ] || fail "NVML missing: exit $rc, want 0 (a warning)"
got=$(check gpu_nvml)
[[ "$got" == "warn GPUHealthUnchecked NVML not found"*"not checked: XIDs during the run, ECC"* ]] ||
    fail "NVML missing: check is: $got"
echo "ok   NVML missing: exit 0, GPUHealthUnchecked names what was not checked"

# 4. an XID in the kernel log since boot
printf '6,10,100,-;NVRM: Xid (PCI:0000:18:00): 79, pid=9, GPU has fallen off the bus.\n' >"$tmp/root/dev/kmsg"
node "gpus 8"
[ $rc -eq 0 ] || fail "XID since boot: exit $rc, want 0 (a warning)"
got=$(check gpu_xid)
[[ "$got" == "warn GPUXid GPU 0 (00000000:18:00.0, serial 1650000000000): XID 79 (GPU has fallen off the bus) x1 in the kernel log since boot"* ]] ||
    fail "XID since boot: check is: $got"
rm -f "$tmp/root/dev/kmsg"
echo "ok   XID 79 in the kernel log since boot: a warning naming GPU 0"

# 5. an XID while the all_reduce runs (local, one process, 8 GPUs)
printf 'gpu.3.xid 48\n' >"$tmp/fixture"
pf_agent 60 env EFA_PREFLIGHT_NVML="$nvml" PF_NVML_FIXTURE="$tmp/fixture" \
    EFA_PREFLIGHT_CUDART="$gpu" EFA_PREFLIGHT_NCCL="$gpu" PF_DOUBLE_GPUS=8 \
    "$bin" local --ranks 1 --no-imds --expect-efa 0 \
    --dev-root "$tmp/root" --timeout 30 -b 8 -e 64K -n 2 -w 1
[ $rc -eq 1 ] || fail "XID 48 in the run: exit $rc, want 1"
got=$(check gpu_xid)
[[ "$got" == "fail GPUXid GPU 3 (00000000:48:00.0, serial 1650000000003): XID 48 (double-bit ECC error) x1 during the all_reduce"* ]] ||
    fail "XID 48 in the run: check is: $got"
got=$(report '(r["node"]["gpu_health"]["window"], r["collective"]["ran"] if "ran" in r["collective"] else None)')
[[ "$got" == "('all_reduce', "* ]] || fail "XID 48: counters not read around the all_reduce: $got"
echo "ok   local: XID 48 on GPU 3 during the all_reduce fails with GPUXid"

# 6. the monitor: GPU fields as metrics every interval, a held fault after
#    --monitor-raise bad intervals (no API server: nothing is written)
printf 'gpu.2.remap_pending 1\ngpu.5.ecc notsupported\n' >"$tmp/fixture"
env EFA_PREFLIGHT_NVML="$nvml" PF_NVML_FIXTURE="$tmp/fixture" \
    KUBERNETES_SERVICE_HOST= timeout -k 5 60 "$bin" monitor --no-imds \
    --instance-type p5e.48xlarge --sysfs-root "$tmp/root" --dev-root "$tmp/root" \
    --interval 0.2 --monitor-intervals 3 --monitor-raise 2 --no-publish \
    --metrics-textfile "$tmp/m.prom" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "monitor: exit $rc"
grep -q 'efa_preflight_gpu_row_remap_pending{node="[^"]*",gpu="2",bus_id="00000000:38:00.0",serial="1650000000002",[^}]*} 1$' "$tmp/m.prom" ||
    fail "monitor: no remap-pending sample for GPU 2"
grep -q 'efa_preflight_gpu_healthy{node="[^"]*",gpu="2",[^}]*} 0$' "$tmp/m.prom" ||
    fail "monitor: GPU 2 not held unhealthy after 2 bad intervals"
grep -q 'efa_preflight_gpu_ecc_volatile_uncorrected_total{node="[^"]*",gpu="5"' "$tmp/m.prom" &&
    fail "monitor: a sample for a field GPU 5 does not support"
grep -q "GPURowRemapPending GPU 2 (00000000:38:00.0, serial 1650000000002): row remap pending for 2 interval(s)" "$tmp/err" ||
    fail "monitor: the raised fault was not logged"
if command -v promtool >/dev/null; then
    promtool check metrics <"$tmp/m.prom" >"$tmp/promtool.log" 2>&1 ||
        fail "promtool: $(cat "$tmp/promtool.log")"
fi
echo "ok   monitor: GPU fields exported, a pending remap held after 2 intervals, unsupported fields left out"

# 7. history shows the GPU verdict of each run
mkdir -p "$tmp/hist"
node "gpu.2.remap_pending 1" --history-dir "$tmp/hist"
node "gpus 8" --history-dir "$tmp/hist"
"$bin" history --history-dir "$tmp/hist" >"$tmp/h.txt" 2>&1 || fail "history failed"
got=$(awk 'NR > 2 && $1 ~ /^20/ {print $2, $4, $5}' "$tmp/h.txt" | tr '\n' ';')
[ "$got" = "pass - pass;fail GPURowRemapPending fail;" ] || fail "history rows: $got"
echo "ok   history: each run's GPU health in the GPUS column"
