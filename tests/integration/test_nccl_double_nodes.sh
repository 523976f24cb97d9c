#!/bin/bash
# More than 256 global GPU ranks across processes, through the GPU double:
# 40 processes, each its own "node" (own UTS namespace, hostname node-<i>)
# with 8 GPUs, joined by the static bootstrap over loopback
# (tests/fakes/gpu/run_nodes.sh) -> 320 global ranks. Every process must
# exit 0 with 0 wrong elements, see 320 ranks on 40 nodes and drive 8 of
# them itself; the whole group finishes within 60 s (about 2 s here). A
# group of 17 x 16 (272 ranks, the count that once failed with "272 global
# ranks exceed 256") passes the same way. Then a faulty GPU follows its
# node and device, as on real hardware: 4 nodes x 2 GPUs with
# PF_DOUBLE_CORRUPT=5:4 (rank 5 = node-2's GPU 1) and =0:4 (node-0's
# GPU 0) -> the pairwise test's 2-rank communicators see it too, node 2
# (node 0) exits 1 DataCorruption naming rank 5 (0) with its GPU index and
# bus id, in collective.inside.culprits as well, and every other node exits
# 4 PeerDataCorruption naming that node; and 8 x 2 with two corrupting GPUs
# on two nodes (=3:4,10:4), both named; a slow GPU the same way
# (PF_DOUBLE_SLOW=5:2 -> StragglerNode naming rank 5, GPU 1 and its bus
# id). A port from the kernel per group (lib_port.sh).
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

faulty() { # nodes, the corrupting GPUs' global ranks (comma-separated; 2 GPUs a node)
    local nodes=$1 bad=$2 secs rc
    rm -f "$tmp/trace2"
    secs=$(PF_DOUBLE_TRACE=$tmp/trace2 PF_DOUBLE_CORRUPT=$(sed 's/,/:4,/g; s/$/:4/' <<<"$bad") \
        "$root/tests/fakes/gpu/run_nodes.sh" "$nodes" 2 "$(pf_free_port)" "$tmp/nodes" "${flags[@]}")
    rc=$?
    [ $rc -eq 0 ] || fail "run_nodes.sh exited $rc: $secs"
    python3 - "$tmp/nodes" "$nodes" "$bad" "$tmp/trace2" <<'EOF' || fail "GPUs $bad corrupting: see above"
import json, sys
out, n, bad, trace = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")], sys.argv[4]
errs = []
# the double resolves each rank once, on its node, to its GPU
got = sorted(l.strip() for l in open(trace) if l.startswith("PF_DOUBLE_CORRUPT rank"))
want = sorted("PF_DOUBLE_CORRUPT rank %d on GPU %d" % (b, b % 2) for b in bad)
if got != want:
    errs.append("the double resolved %s, want %s" % (got, want))
culprit = {b // 2: b for b in bad}
for i in range(n):
    code = int(open("%s/t%d" % (out, i)).read().split("\n")[-2].split()[0])
    r = json.load(open("%s/r%d.json" % (out, i)))
    data = [(c["reason"], c["message"]) for c in r["checks"] if c["name"] == "data"]
    inside = r["collective"]["inside"]
    if i in culprit:
        b = culprit[i]
        want = ("this node (rank %d, node-%d, 127.0.0.1) corrupts data at rank %d "
                "(GPU %d, bus 0000:%02x:00.0): " % (i, i, b, b % 2, 0x18 + b % 2))
        ok = (code == 1 and len(data) == 1 and data[0][0] == "DataCorruption"
              and data[0][1].startswith(want) and inside["culprits"] == [b]
              and [x["rank"] for x in inside["ranks"]] == [2 * i, 2 * i + 1])
    else:
        want = ", ".join("rank %d (node-%d, 127.0.0.1)" % (k, k) for k in sorted(culprit))
        want += " corrupt%s data, not this node (rank %d)" % ("" if len(culprit) > 1 else "s", i)
        ok = (code == 4 and len(data) == 1 and data[0][0] == "PeerDataCorruption"
              and data[0][1].startswith(want) and inside["culprits"] == [])
    if not ok:
        errs.append("process %d: exit %d, data %s, inside.culprits %s" % (i, code, data, inside["culprits"]))
for e in errs:
    print(e)
sys.exit(1 if errs else 0)
EOF
}

faulty 4 5
echo "ok   4 nodes x 2 GPUs, GPU 1 of node 2 corrupting (PF_DOUBLE_CORRUPT=5:4): node 2 exits 1 naming rank 5 (GPU 1, bus 0000:19:00.0), the others exit 4 naming node 2"
faulty 4 0
echo "ok   the same with GPU 0 of node 0 (rank 0 of every pair communicator's low end): only node 0 is named"
faulty 8 3,10
echo "ok   8 nodes x 2 GPUs, GPU 1 of node 1 and GPU 0 of node 5 corrupting: both nodes exit 1 naming their GPU, the other 6 exit 4 naming both"

# A slow GPU follows its node and device the same way: node 2's GPU 1 moves
# 2 MB/s (PF_DOUBLE_SLOW=5:2, on its streams' clock: nothing sleeps), the
# links are judged against a flat floor of 0.05 GB/s at 1 MiB (healthy
# double links reach 0.3 GB/s or more here, node 2's about 0.004).
rm -f "$tmp/trace2"
secs=$(PF_DOUBLE_TRACE=$tmp/trace2 PF_DOUBLE_SLOW=5:2 \
    "$root/tests/fakes/gpu/run_nodes.sh" 4 2 "$(pf_free_port)" "$tmp/nodes" \
    --timeout 60 -b 1M -e 1M -n 2 -w 1 --min-busbw-gbps 0.05 --log-level info)
[ $? -eq 0 ] || fail "run_nodes.sh exited: $secs"
[ "$(grep '^PF_DOUBLE_SLOW' "$tmp/trace2")" = "PF_DOUBLE_SLOW rank 5 on GPU 1" ] ||
    fail "the double resolved PF_DOUBLE_SLOW=5:2 as: $(grep '^PF_DOUBLE' "$tmp/trace2")"
python3 - "$tmp/nodes" <<'EOF' || fail "slow GPU 1 of node 2: see above"
import json, sys
out = sys.argv[1]
errs = []
for i in range(4):
    code = int(open("%s/t%d" % (out, i)).read().split("\n")[-2].split()[0])
    r = json.load(open("%s/r%d.json" % (out, i)))
    bw = [(c["reason"], c["message"]) for c in r["checks"] if c["name"] == "busbw"]
    inside = r["collective"]["inside"]
    if i == 2:
        ok = (code == 1 and len(bw) == 1 and bw[0][0] == "StragglerNode"
              and bw[0][1].startswith("this node (rank 2, node-2, 127.0.0.1) is the "
                                      "straggler at rank 5 (GPU 1, bus 0000:19:00.0): ")
              and inside["culprits"] == [5])
    else:
        ok = (code == 4 and len(bw) == 1 and bw[0][0] == "SlowPeer"
              and bw[0][1].startswith("rank 2 (node-2, 127.0.0.1) is the straggler, "
                                      "not this node (rank %d)" % i)
              and inside["culprits"] == [])
    if not ok:
        errs.append("process %d: exit %d, busbw %s, inside.culprits %s" % (i, code, bw, inside["culprits"]))
for e in errs:
    print(e)
sys.exit(1 if errs else 0)
EOF
echo "ok   4 nodes x 2 GPUs, GPU 1 of node 2 slow (PF_DOUBLE_SLOW=5:2): node 2 exits 1 StragglerNode naming rank 5 (GPU 1, bus 0000:19:00.0), the others exit 4 naming node 2"
