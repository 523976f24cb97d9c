#!/bin/bash
# Two one-GPU "pods" (two agent processes, static bootstrap, addresses
# 127.0.0.1 and 127.0.0.2: one hostname, so NCCL still sees one host and
# uses NVLink, but two addresses, so the agent counts two nodes, as for two
# pods of one host) on a 2-GPU host, with a
# catalogued GPU type whose floor those GPUs reach (a --catalog override:
# 250 GB/s from 1 GiB at 2 nodes; 2x H200 over NVLink gave 328 at 1 GiB):
#   h  healthy, default sweep (no -e: it reaches the floor's 1 GiB)
#   s  rank 1 slowed (--debug-slow-rank 1): below the floor, and two nodes
#      cannot be told apart: both exit 1, class group, nobody blamed
#   c  rank 1 corrupting (--debug-corrupt-rank 1): DataCorruptionNotLocalised
# Prints a Markdown table with exit codes, reasons, classes, the judged
# busbw and the wall time of each process. usage: bench/gpu_pods.sh [out]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bin=${PF_BIN:-$root/carry/efa-preflight}
out=${1:-${OUT:-/tmp/pf-gpu-pods}}
port=${PORT:-29760}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
sp=$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null)
[ -z "${EFA_PREFLIGHT_NCCL:-}" ] && [ -f "$sp/nccl/lib/libnccl.so.2" ] &&
    export EFA_PREFLIGHT_NCCL=$sp/nccl/lib/libnccl.so.2
if [ -z "${EFA_PREFLIGHT_CUDART:-}" ]; then
    for f in "$sp"/cu13/lib/libcudart.so.13 "$sp"/cuda_runtime/lib/libcudart.so.*; do
        [ -f "$f" ] && { export EFA_PREFLIGHT_CUDART=$f; break; }
    done
fi
cat >"$out/catalog.yaml" <<'YAML'
version: 1
instances:
  gpu-pair.test:
    efa: 0
    accelerators: 1
    accelerator_model: "H200"
    accelerator_kind: gpu
    verified: false
    floors:
      2: {busbw_gbps: 250, from_bytes: 1G, verified: false,
          source: "2x H200 over NVLink measured by this project: 328 GB/s at 1 GiB"}
YAML
case_run() {   # case_run TAG ARGS...
    local tag=$1 r
    shift
    for r in 0 1; do
        CUDA_VISIBLE_DEVICES=$r /usr/bin/time -f "%e %M" -o "$out/$tag$r.time" \
            "$bin" run --bootstrap static --peers "127.0.0.1:$port,127.0.0.2:$port" \
            --rank $r --bind-addr 127.0.0.$((r + 1)) --no-imds --engine nccl \
            --catalog "$out/catalog.yaml" --instance-type gpu-pair.test \
            --expect-efa 0 --timeout 300 --report "$out/$tag$r.json" "$@" \
            >"$out/$tag$r.out" 2>"$out/$tag$r.err" &
    done
    wait
    port=$((port + 1))
    for r in 0 1; do
        python3 - "$out/$tag$r.json" "$tag" "$r" "$(tail -n 1 "$out/$tag$r.time")" "$*" <<'PY'
import json, sys
path, tag, rank, t, args = sys.argv[1:]
wall, rss = t.split()
r = json.load(open(path))
v, c = r["verdict"], r.get("collective") or {}
rows = c.get("rows") or []
judged = [x for x in rows if x["bytes"] >= (1 << 30)]
bw = max((max(x["out_of_place"]["busbw_gbps"], x["in_place"]["busbw_gbps"]) for x in judged), default=None)
print("| %s | %s | `%s` | %d | %s | %s | %s | %s | %s | %.0f |" % (
    tag, rank, args or "(defaults)", v["exit_code"], v["reason"], v["class"],
    len(rows), "%.1f" % bw if bw is not None else "-",
    wall, int(rss) / 1024))
PY
    done
}
nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//'
{
echo "| case | rank | flags | exit | reason | class | rows | busbw at 1 GiB | wall s | peak RSS MiB |"
echo "|---|---:|---|---:|---|---|---:|---:|---:|---:|"
case_run h
case_run s --debug-slow-rank 1 --debug-slow-ms 20
case_run c --debug-corrupt-rank 1 -e 64M
} | tee "$out/gpu_pods.md"
for t in s c; do grep -h '^FAIL\|^WARN' "$out/${t}0.out" | head -3; done
