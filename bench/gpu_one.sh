#!/bin/bash
# One-GPU host: `efa-preflight local` as a newcomer runs it, and the default
# sweep's cost. Prints a Markdown table (and writes it to OUT/gpu_one.md):
#   1  local, no flags (one rank per GPU; the node checks are this host's)
#   2  local --fabric-provider tcp (no EFA here: EFA checks skipped)
#   3  as 2 with -e 1G, the catalog floors' message size on p4d/p5
#   4  --instance-type p5.48xlarge --expect-gpus 1, provider efa: the node
#      checks fail here (no EFA), but the default sweep is the catalogued
#      type's: up to its floor's size, 1 GiB
# usage: bench/gpu_one.sh [out-dir]; env PF_BIN (carry/efa-preflight).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bin=${PF_BIN:-$root/carry/efa-preflight}
out=${1:-${OUT:-/tmp/pf-gpu-one}}
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
nvidia-smi -L 2>/dev/null | sed 's/ (UUID.*//'
echo "agent $("$bin" version); NCCL ${EFA_PREFLIGHT_NCCL:-system}; cudart ${EFA_PREFLIGHT_CUDART:-system}"

row() {   # row LABEL ARGS...
    local label=$1 rc
    shift
    /usr/bin/time -f "%e %M" -o "$out/time" "$bin" local "$@" --no-imds \
        --report "$out/r.json" >"$out/$label.out" 2>"$out/$label.err"
    rc=$?
    # time(1) puts "Command exited with non-zero status N" first
    read -r wall rss < <(tail -n 1 "$out/time")
    python3 - "$out/r.json" "$label" "$rc" "$wall" "$rss" "$*" <<'PY'
import json, sys
path, label, rc, wall, rss, args = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print("| %s | `local %s` | %s | (no report: %s) | | | %s | %.0f |" % (label, args, rc, e, wall, int(rss) / 1024))
    sys.exit()
c = r.get("collective") or {}
rows = c.get("rows") or []
largest = rows[-1]["bytes"] if rows else 0
print("| %s | `local %s` | %s | %s (%s) | %s ranks, %s engine | %s rows to %d MiB | %s | %.0f |" % (
    label, args, rc, r["verdict"]["reason"], r["verdict"]["class"],
    c.get("nranks"), c.get("engine"), len(rows), largest >> 20, wall, int(rss) / 1024))
PY
}
{
echo "| run | command | exit | verdict (class) | collective | sweep | wall s | peak RSS MiB |"
echo "|---|---|---:|---|---|---|---:|---:|"
row 1
row 2 --fabric-provider tcp
row 3 --fabric-provider tcp -e 1G
row 4 --instance-type p5.48xlarge --expect-gpus 1
} | tee "$out/gpu_one.md"
