#!/bin/bash
# GPU all_reduce: efa-preflight's NCCL engine against torch.distributed on
# the same NCCL library, in one command, on a machine with 2 GPUs:
#   a  one agent process driving both GPUs          local --ranks 1
#   b  two agent processes, one GPU each ("pods")   run --bootstrap static
#   c  b with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 must be SocketFallback
#   t  torchrun --nproc_per_node=2 bench/torch_allreduce.py, same sizes,
#      CUDA-event timing like the agent's
#   d  the default `efa-preflight local` (2 ranks, 8 B..64 MiB): wall time
# then prints a Markdown table: time per op 8 B..64 KiB and busbw at
# 64 MiB, 1 GiB and 8 GiB, each against torch's (in place, as torch's
# all_reduce is), the SocketFallback verdict, and peak RSS per process.
#
# usage: bench/gpu_allreduce.sh [out-dir]
# env:   PF_BIN (build/efa-preflight), MAX_BYTES (8G), SOCK_MAX (64M),
#        ITERS (50: steadier ratios than nccl-tests' 20), WARMUP (5), PORT (29710), TIMEOUT (900 s a run);
#        EFA_PREFLIGHT_NCCL defaults
#        to torch's own libnccl.so.2 so both sides run the same NCCL.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bin=${PF_BIN:-$root/build/efa-preflight}
out=${1:-${OUT:-/tmp/pf-gpu-bench}}
max=${MAX_BYTES:-8G}
sock_max=${SOCK_MAX:-64M}
iters=${ITERS:-50}
warmup=${WARMUP:-5}
port=${PORT:-29710}
mkdir -p "$out"

# NVLink multicast stays off on shared machines; torch's side too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
    NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
if [ -z "${EFA_PREFLIGHT_NCCL:-}" ]; then
    lib=$(python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    [ -f "$lib" ] && export EFA_PREFLIGHT_NCCL=$lib
fi
echo "agent: $bin; NCCL: ${EFA_PREFLIGHT_NCCL:-libnccl.so.2 (system)}"
nvidia-smi -L 2>/dev/null

# python3 -c "$measure" FILE CMD...: run CMD, write "exit wall_s
# peak_rss_kib" (the largest process among it and all it waited for).
measure='
import resource, subprocess, sys, time
t = time.time()
rc = subprocess.call(sys.argv[2:])
wall = time.time() - t
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
open(sys.argv[1], "w").write("%d %.2f %d\n" % (rc, wall, kib))
'

common=(--no-imds --expect-efa 0 --log-level info -b 8 -f 2 -n "$iters"
        -w "$warmup" --timeout "${TIMEOUT:-900}")

echo "== a: one process, both GPUs"
python3 -c "$measure" "$out/a.rss" "$bin" local --ranks 1 "${common[@]}" -e "$max" \
    --report "$out/a.json" >"$out/a.out" 2>"$out/a.err"
cat "$out/a.rss"

pods() { # name port max env...
    local name=$1 p=$2 m=$3
    shift 3
    for r in 0 1; do
        env "$@" CUDA_VISIBLE_DEVICES=$r python3 -c "$measure" "$out/$name$r.rss" \
            "$bin" run --bootstrap static --rank $r \
            --peers "127.0.0.1:$p,127.0.0.1:$((p + 1))" "${common[@]}" \
            -e "$m" --report "$out/$name$r.json" \
            >"$out/$name$r.out" 2>"$out/$name$r.err" &
    done
    wait
    cat "$out/${name}0.rss" "$out/${name}1.rss"
}
echo "== b: two processes, one GPU each"
pods b "$port" "$max" X=1
echo "== c: b with P2P and SHM disabled"
pods c $((port + 2)) "$sock_max" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1

echo "== t: torch.distributed.all_reduce"
# the agent's sizes: 8 B doubling up to max
sizes=$(python3 -c '
import sys
m = sys.argv[1]
unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(m[-1].upper())
top = int(m[:-1]) * unit if unit else int(m)
s, out = 8, []
while s <= top:
    out.append(str(s))
    s *= 2
print(",".join(out))' "$max")
python3 -c "$measure" "$out/t.rss" timeout 900 torchrun --nproc_per_node=2 \
    --master_port $((port + 5)) bench/torch_allreduce.py --sizes "$sizes" \
    --iters "$iters" --warmup "$warmup" >"$out/torch.jsonl" 2>"$out/torch.err"
cat "$out/t.rss"

echo "== d: default efa-preflight local"
python3 -c "$measure" "$out/d.rss" "$bin" local --no-imds --expect-efa 0 \
    --report "$out/d.json" >"$out/d.out" 2>"$out/d.err"
cat "$out/d.rss"

python3 - "$out" <<'EOF' | tee "$out/table.md"
import json, os, sys
out = sys.argv[1]

def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError):
        return None

def rows(rep):
    return {int(r["bytes"]): r for r in rep["collective"]["rows"]} if rep and rep.get("collective") else {}

def rss(name):
    try:
        rc, wall, kib = open(os.path.join(out, name)).read().split()
        return int(rc), float(wall), int(kib) / 1024.0
    except (OSError, ValueError):
        return None, None, None

def human(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d %s" % (b // n, unit)
    return "%d B" % b

a, b0, c0, d = load("a.json"), load("b0.json"), load("c0.json"), load("d.json")
ra, rb = rows(a), rows(b0)
torch = {}
for line in open(os.path.join(out, "torch.jsonl")) if os.path.exists(os.path.join(out, "torch.jsonl")) else []:
    if line.startswith("{"):
        t = json.loads(line)
        torch[int(t["bytes"])] = t
nccl = ((a or {}).get("node") or {}).get("nccl", {}).get("version", 0)
print("NCCL %d.%d.%d engine vs torch.distributed.all_reduce, 2 GPUs, "
      "float32 sum, %s iterations; (a) 1 process x 2 GPUs, (b) 2 processes "
      "x 1 GPU, torch 2 processes. Times in us per op, busbw in GB/s; "
      "ratio = (b) in place / torch." % (nccl // 10000, nccl // 100 % 100,
                                         nccl % 100, os.environ.get("ITERS", "50")))
print()
print("| size | (a) oop us | (a) ip us | (b) oop us | (b) ip us | torch us | ratio | (a) ip busbw | (b) ip busbw | torch busbw | ratio | target |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
verdicts = []
for size in sorted(set(ra) | set(rb) | set(torch)):
    x, y, t = ra.get(size), rb.get(size), torch.get(size)
    def f(r, side, key, fmt="%.2f"):
        return fmt % r[side][key] if r else "-"
    tr = br = None
    if y and t:
        tr = y["in_place"]["time_us"] / t["time_us"]
        br = y["in_place"]["busbw_gbps"] / t["busbw_gbps"] if t["busbw_gbps"] else None
    target = ""
    if size <= 65536 and tr is not None:
        ok = tr <= 1.15 and (x is None or x["in_place"]["time_us"] / t["time_us"] <= 1.15)
        target = "time <= 1.15x: %s" % ("met" if ok else "MISSED")
        verdicts.append(ok)
    if size in (64 << 20, 1 << 30, 8 << 30) and br is not None:
        ok = br >= 0.97 and (x is None or x["in_place"]["busbw_gbps"] / t["busbw_gbps"] >= 0.97)
        target = "busbw >= 0.97x: %s" % ("met" if ok else "MISSED")
        verdicts.append(ok)
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        human(size), f(x, "out_of_place", "time_us"), f(x, "in_place", "time_us"),
        f(y, "out_of_place", "time_us"), f(y, "in_place", "time_us"),
        "%.2f" % t["time_us"] if t else "-", "%.2f" % tr if tr else "-",
        f(x, "in_place", "busbw_gbps"), f(y, "in_place", "busbw_gbps"),
        "%.2f" % t["busbw_gbps"] if t else "-", "%.3f" % br if br else "-", target))
print()
for name, rep in (("a", a), ("b", b0), ("c", c0), ("d", d)):
    if not rep or not rep.get("collective"):
        print("- (%s): no report" % name)
        continue
    col = rep["collective"]
    tc = [c for c in rep["checks"] if c["name"] == "nccl_transport"]
    print("- (%s): engine %s, %d ranks, wrong %d, transport %s, network %s, "
          "nccl_transport %s %s, error %s" % (
              name, col["engine"], col["nranks"], col["wrong_total"],
              col["transport"] or "-", col["nccl_network"] or "-",
              tc[0]["status"] if tc else "-", tc[0]["reason"] if tc else "",
              (col.get("error") or {}).get("reason")))
for name in ("a", "b0", "b1", "c0", "c1", "d", "t"):
    rc, wall, mib = rss(name + ".rss")
    if rc is not None:
        print("- run %s: exit %d, wall %.1f s, peak RSS %.0f MiB%s" % (
            name, rc, wall, mib, " (torch worker, for reference)" if name == "t" else ""))
sock = [c for c in (c0 or {}).get("checks", []) if c["name"] == "nccl_transport"]
print()
print("SocketFallback in (c): %s" % ("yes" if sock and sock[0]["reason"] == "SocketFallback" else "NO"))
_, dwall, dmib = rss("d.rss")
if dwall is not None:
    print("default local run: %.1f s wall (target <= 20 s: %s)" % (dwall, "met" if dwall <= 20 else "MISSED"))
peaks = [rss(n + ".rss")[2] for n in ("a", "b0", "b1", "c0", "c1", "d")]
peaks = [p for p in peaks if p is not None]
if peaks:
    print("peak host RSS, largest process: %.0f MiB (target <= 256 MiB: %s)" % (max(peaks), "met" if max(peaks) <= 256 else "MISSED"))
print("time/busbw targets met: %d of %d" % (sum(verdicts), len(verdicts)))
EOF
