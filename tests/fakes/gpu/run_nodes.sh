#!/bin/bash
# Start N efa-preflight processes, each its own "node" with G GPUs of the
# GPU double: its own UTS namespace (unshare -u) and so its own hostname
# node-<i>, joined by the static bootstrap over loopback. The NCCL engine
# then drives N x G global ranks whose all_reduces span the processes.
#
#   tests/fakes/gpu/run_nodes.sh N G PORT OUTDIR [efa-preflight run flags...]
#
# Writes OUTDIR/r<i>.json (report), OUTDIR/e<i> (stderr), OUTDIR/t<i>
# ("<exit code> <seconds> <peak RSS KiB>" from /usr/bin/time), and prints
# the wall time of the whole group in seconds. Needs root (or
# CAP_SYS_ADMIN) for unshare -u: exits 77 without it. Every process is
# bounded by timeout(1), so the script always ends.
set -u
n=$1 g=$2 port=$3 out=$4
shift 4
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${BUILD:-build}
bin=${PF_BIN:-$root/$build/efa-preflight}
double=$root/$build/double/libgpu-double.so
timer=${PF_TIME:-/usr/bin/time}   # GNU time: %x %e %M

unshare -u true 2>/dev/null || { echo "unshare -u needs root"; exit 77; }
[ -x "$timer" ] || { echo "$timer is not installed"; exit 77; }
[ -r "$double" ] || { echo "test double missing: $double"; exit 2; }
mkdir -p "$out"
rm -f "$out"/r*.json "$out"/e* "$out"/t*
peers=$(for ((i = 0; i < n; i++)); do printf ',127.0.0.1:%d' "$port"; done)
peers=${peers#,}
start=$(date +%s.%N)
for ((i = 0; i < n; i++)); do
    # NVML hidden: on a GPU host N agents would each open the real driver
    # (and see the host's GPUs, not the double's)
    EFA_PREFLIGHT_CUDART=$double EFA_PREFLIGHT_NCCL=$double PF_DOUBLE_GPUS=$g \
        EFA_PREFLIGHT_NVML=${EFA_PREFLIGHT_NVML:-/nonexistent} \
        unshare -u sh -c 'hostname "$1" && shift && exec "$@"' sh "node-$i" \
        "$timer" -f '%x %e %M' -o "$out/t$i" \
        timeout -k 5 120 "$bin" run --bootstrap static --peers "$peers" \
        --rank "$i" --no-imds --expect-efa 0 --report "$out/r$i.json" "$@" \
        >/dev/null 2>"$out/e$i" &
done
wait
end=$(date +%s.%N)
python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$end"
