#!/bin/bash
# Every kind of report the agent writes is valid against
# docs/reference/report.schema.json (JSON Schema draft 2020-12), checked
# strictly by check_report_schema.py: the published schema admits keys it
# does not list (v1 only adds fields), the check admits none, so a field
# the agent writes and the schema (and docs/reference/report.md) do not
# describe fails here. (The Kubernetes-mode reports are checked the same
# way by test_k8s_conditions_by_class and test_k8s_taint_budget.)
# Reports: node on fixture trees (pass, fail, no counters, errors since
# boot, not an EFA node), local over tcp (pass, wrong data localised, NIC
# counters moved), the NCCL engine on the GPU double (one process, 8
# "GPUs", one corrupting), a static run whose peer never comes (exit 3,
# collective.error), and on the NVML double (build/double/libnvml-double.so):
# node on 8 H200s with a GPU lost, fields not supported, XIDs in the kernel
# log since boot (one on a bus NVML does not list) and a pending remap,
# and local with an XID and NVLink errors during the all_reduce (node.
# gpu_health in full, instance.gpu, floors by size, GPUHealthy). The
# fleet baseline's report object with a baseline applied and a degraded
# culprit is checked by test_baseline_degraded. The validator must be able to fail: a report with
# "reason": "" and one with an unknown key are refused.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${BUILD:-build}
bin=${PF_BIN:-$root/$build/efa-preflight}
B=$root/$build
FX=$B/fixtures/sysfs
FAKE=$B/test-helpers/libfabric-fake.so.1
double=$B/double/libgpu-double.so
nvml=$B/double/libnvml-double.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; tail -n 5 "$tmp/err" 2>/dev/null; exit 1; }
. "$root/tests/integration/lib_port.sh"
export EFA_PREFLIGHT_CUDART=/nonexistent/libcudart.so

# Debian's python3-jsonschema (scripts/packages.txt); the python3 on PATH
# may be another one.
py=""
for p in python3 /usr/bin/python3; do
    "$p" -c 'import jsonschema; jsonschema.Draft202012Validator' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "skip: python3-jsonschema is not installed (make deps)"; exit 77; }
[ -r "$FAKE" ] && [ -r "$double" ] && [ -r "$nvml" ] ||
    fail "missing $FAKE, $double or $nvml (make test-helpers)"
"$root/tests/fakes/make_sysfs.sh" "$FX" >/dev/null || fail "fixture build failed"

# run NAME WANT_EXIT [env...] -- args...: the report in $tmp/NAME.json
n=0
run() {
    local name=$1 want=$2 envs=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" timeout -k 5 60 "$bin" "$@" --report "$tmp/$name.json" \
        >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc -eq "$want" ] || fail "$name exited $rc, want $want"
    [ -s "$tmp/$name.json" ] || fail "$name wrote no report"
    n=$((n + 1))
}
fx() { echo --sysfs-root "$FX/$1" --dev-root "$FX/$1" --libfabric-path "$FAKE" --no-imds \
            --expect-gpus 0 --min-memlock-mib 0 --efa-recount-ms 0; }

run node-pass 0 PF_FAKE_FI_EFA_DOMAINS=32 -- node $(fx p5.48xlarge)
run node-nomodule 1 PF_FAKE_FI_EFA_DOMAINS=32 -- node $(fx p5-nomodule) --instance-type p5.48xlarge
run node-nocounters 0 PF_FAKE_FI_EFA_DOMAINS=32 -- node $(fx p5-nocounters)
run node-booterrors 0 PF_FAKE_FI_EFA_DOMAINS=32 -- node $(fx p5-booterrors)
run node-plain 1 -- node $(fx plain)
run local-pass 0 -- local --ranks 2 --fabric-provider tcp --no-imds --port "$(pf_free_port)" \
    --timeout 45 -b 1K -e 64K -n 2 -w 1
run local-corrupt 1 -- local --ranks 3 --fabric-provider tcp --no-imds --port "$(pf_free_port)" \
    --timeout 45 -b 4K -e 64K -n 2 -w 1 --engine host --debug-corrupt-rank 1
# NIC counters that moved between the reads (a copy of the trn1 tree)
cp -a "$FX/trn1.32xlarge" "$tmp/after"
for f in "$tmp"/after/sys/class/infiniband/*/ports/1/hw_counters/tx_bytes; do
    echo $(( $(cat "$f") + 50000000 )) >"$f"
done
run local-nics 0 -- local --ranks 2 --fabric-provider tcp --no-imds --port "$(pf_free_port)" \
    --sysfs-root "$FX/trn1.32xlarge" --dev-root "$FX/trn1.32xlarge" \
    --debug-counters-after "$tmp/after" --timeout 45 -b 1K -e 64K -n 2 -w 1
run nccl-double 0 EFA_PREFLIGHT_CUDART="$double" EFA_PREFLIGHT_NCCL="$double" PF_DOUBLE_GPUS=8 -- \
    local --ranks 1 --no-imds --expect-efa 0 --timeout 30 -b 8 -e 64K -n 2 -w 1
run nccl-corrupt 1 EFA_PREFLIGHT_CUDART="$double" EFA_PREFLIGHT_NCCL="$double" PF_DOUBLE_GPUS=8 \
    PF_DOUBLE_CORRUPT_GPU=5:3 -- \
    local --ranks 1 --no-imds --expect-efa 0 --timeout 30 -b 8 -e 64K -n 2 -w 1
p0=$(pf_free_port); p1=$(pf_free_port)
run peer-timeout 3 -- run --bootstrap static --peers "127.0.0.1:$p0,127.0.0.1:$p1" --rank 0 \
    --fabric-provider tcp --no-imds --timeout 3 -e 64K
# GPU health on the NVML double
mkdir -p "$tmp/gpuroot/dev"
printf '6,10,100,-;NVRM: Xid (PCI:0000:18:00): 79, pid=9, GPU has fallen off the bus.\n6,11,101,-;NVRM: Xid (PCI:0000:ee:00): 13, pid=9, Graphics Exception\n' \
    >"$tmp/gpuroot/dev/kmsg"
printf 'gpu.2.remap_pending 1\ngpu.5.ecc notsupported\ngpu.5.nvlink_errors notsupported\ngpu.6.lost 1\ngpu.1.xid 13\n' \
    >"$tmp/nvml-node"
run gpu-node 1 EFA_PREFLIGHT_NVML="$nvml" PF_NVML_FIXTURE="$tmp/nvml-node" EFA_PREFLIGHT_CUDART="$double" \
    EFA_PREFLIGHT_NCCL="$double" PF_DOUBLE_GPUS=8 -- \
    node --no-imds --instance-type p5e.48xlarge --fabric-provider tcp --dev-root "$tmp/gpuroot"
printf 'gpu.3.xid 48\ngpu.4.nvlink_recovery_step 2\ngpu.4.pcie_replay_step 3\n' >"$tmp/nvml-local"
run gpu-local 1 EFA_PREFLIGHT_NVML="$nvml" PF_NVML_FIXTURE="$tmp/nvml-local" EFA_PREFLIGHT_CUDART="$double" \
    EFA_PREFLIGHT_NCCL="$double" PF_DOUBLE_GPUS=8 -- \
    local --ranks 1 --no-imds --expect-efa 0 --dev-root "$tmp/gpuroot" --timeout 30 -b 8 -e 64K -n 2 -w 1

# The reports really are of those kinds.
kinds=$("$py" - "$tmp" <<'EOF'
import json, sys
d = sys.argv[1]
r = lambda n: json.load(open("%s/%s.json" % (d, n)))
print(r("node-pass")["collective"] is None and r("node-pass")["node"]["efa"]["devices"][0]["hw_counters"] is not None,
      r("node-nomodule")["verdict"]["reason"],
      r("local-pass")["verdict"]["status"],
      [c["reason"] for c in r("local-pass")["checks"] if c["name"] == "busbw"],
      r("local-corrupt")["verdict"]["reason"],
      r("local-nics")["collective"]["nics"]["counters_read"],
      r("nccl-double")["collective"]["engine"],
      r("nccl-corrupt")["collective"]["inside"]["method"],
      r("peer-timeout")["collective"]["error"]["reason"])
g, l = r("gpu-node"), r("gpu-local")
print(g["verdict"]["conditions"]["GPUHealthy"], g["node"]["gpu_health"]["count"],
      sorted({d["fields"]["ecc_volatile"] for d in g["node"]["gpu_health"]["devices"]}),
      any(d["lost"] for d in g["node"]["gpu_health"]["devices"]),
      len(g["node"]["gpu_health"]["kernel_xids_unmatched"]),
      "gpu" in g["instance"], any("sizes" in f for f in g["instance"]["floors"]),
      l["node"]["gpu_health"]["window"],
      sorted(x["xid"] for d in l["node"]["gpu_health"]["devices"] for x in d["xid_run"]))
EOF
)
[ "$kinds" = "True EFAModuleNotLoaded warn [None] DataCorruption True nccl gpu-pairs PeerTimeout
fail 8 ['not read', 'not supported', 'read'] True 1 True True all_reduce [48]" ] ||
    fail "the reports are not of the kinds meant: $kinds"
echo "ok   $n reports: node (pass, fail, counters, none), local (pass, corrupt, NIC counters), NCCL double, peer timeout, GPU health (node, local)"

# Validate; strict: no key the schema does not list.
check="$root/tests/integration/check_report_schema.py"
out=$("$py" "$check" "$tmp"/*.json) || { echo "$out"; fail "reports the schema refuses"; }
echo "ok   every report valid against docs/reference/report.schema.json, no key it does not list"

# It can fail: "" where null belongs, and a key nobody documented.
"$py" - "$tmp/local-pass.json" "$tmp/doctored" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
a = json.loads(json.dumps(r)); next(c for c in a["checks"] if c["name"] == "busbw")["reason"] = ""
b = json.loads(json.dumps(r)); b["collective"]["floor"]["surprise"] = 1
json.dump(a, open(sys.argv[2] + "-empty.json", "w")); json.dump(b, open(sys.argv[2] + "-extra.json", "w"))
EOF
for d in empty extra; do
    out=$("$py" "$check" "$tmp/doctored-$d.json") &&
        fail "a doctored report ($d) passed"
    case $d in
    empty) grep -q "checks/.*/reason" <<<"$out" || fail "'reason': '' not named: $out" ;;
    extra) grep -q "surprise" <<<"$out" || fail "the unknown key not named: $out" ;;
    esac
done
echo "ok   a report with \"reason\": \"\" or an undocumented key is refused, naming where"
