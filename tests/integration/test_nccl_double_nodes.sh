#!/bin/bash
# More than 256 global GPU ranks across processes, through the GPU double:
# 40 processes, each its own "node" (own UTS namespace, hostname node-<i>)
# with 8 GPUs, joined by the static bootstrap over loopback
# (tests/fakes/gpu/run_nodes.sh) -> 320 global ranks. Every process must
# exit 0 with 0 wrong elements, see 320 ranks on 40 nodes and drive 8 of
# them itself; the whole group finishes within 60 s (about 2 s here). A
# group of 17 x 16 (272 ranks, the count that once failed with "272 global
# ranks exceed 256") passes the same way. A port from the kernel per group
# (lib_port.sh).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; tail -n 20 "$tmp"/nodes/e0 2>/dev/null; exit 1; }
. "$root/tests/integration/lib_port.sh"
flags=(--timeout 60 -b 8 -e 64K -f 32 -n 2 -w 1 --log-level info)
export PF_DOUBLE_TRACE=$tmp/trace     # names each segment the double opens

group() { # processes gpus
    local n=$1 g=$2 secs rc
    secs=$("$root/tests/fakes/gpu/run_nodes.sh" "$n" "$g" "$(pf_free_port)" "$tmp/nodes" "${flags[@]}")
    rc=$?
    [ $rc -eq 77 ] && { echo "skip: $secs"; exit 77; }
    [ $rc -eq 0 ] || fail "run_nodes.sh exited $rc: $secs"
    python3 - "$tmp/nodes" "$n" "$g" <<'EOF' || fail "$n x $g: see above"
import json, sys
out, n, g = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = []
for i in range(n):
    status = open("%s/t%d" % (out, i)).read().split("\n")[-2].split()
    r = json.load(open("%s/r%d.json" % (out, i)))
    c = r["collective"] or {}
    got = (int(status[0]), c.get("nranks"), c.get("nnodes"), c.get("wrong_total"),
           c.get("error"), len(c.get("rows", [])))
    if got != (0, n * g, n, 0, None, 3):
        bad.append("process %d: (exit, nranks, nnodes, wrong, error, rows) = %s" % (i, got))
    log = open("%s/e%d" % (out, i)).read()
    want = "ranks %d-%d here" % (i * g, i * g + g - 1)
    if want not in log:
        bad.append("process %d does not drive %s" % (i, want))
for b in bad[:5]:
    print(b)
sys.exit(1 if bad else 0)
EOF
    echo "$secs"
}

secs=$(group 40 8) || { echo "$secs"; exit 1; }
secs=${secs##*$'\n'}
python3 -c "import sys; sys.exit(float(sys.argv[1]) > 60)" "$secs" ||
    fail "40 x 8 took $secs s"
echo "ok   40 processes x 8 GPUs: 320 global ranks on 40 nodes, 0 wrong, every process exit 0, ${secs}s"

secs=$(group 17 16) || { echo "$secs"; exit 1; }
secs=${secs##*$'\n'}
echo "ok   17 processes x 16 GPUs: 272 global ranks, 0 wrong, every process exit 0, ${secs}s"
segs=$(sed -n 's|^meet /\(pf-double-[0-9a-f]*\) .*|\1|p' "$tmp/trace" | sort -u)
# 2 groups x (init + split), then the pairwise test's 2-rank communicators
# (one per GPU of each pair per round: 40 x 8 + 17 x 16 on healthy runs)
[ "$(wc -l <<<"$segs")" -eq $((4 + 40 * 8 + 17 * 16)) ] ||
    fail "want $((4 + 40 * 8 + 17 * 16)) segments, the trace names $(wc -l <<<"$segs")"
for s in $segs; do
    [ ! -e "/dev/shm/$s" ] || fail "shared-memory segment $s left behind"
done
echo "ok   the $(wc -l <<<"$segs") shared-memory segments the groups met in (the pairwise test's included) are gone from /dev/shm"
