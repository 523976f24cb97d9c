#!/bin/bash
# Each node judged by its own links, on the host engine across 8 network
# namespaces (pfpr-*, 10.254.64.0/24, ports 36400-36499), static bootstrap,
# tcp. A slow node is one whose interface is shaped with tbf (8 Mbit/s,
# 0.001 GB/s), links judged at 0.004 GB/s: healthy links measure 0.04-0.5
# GB/s in a plain build here and went down to 0.018 in a sanitizer build on
# a slower CI machine (at 100 Mbit/s a slow link measured 0.012: the two
# overlapped there), so both sides keep a 4x margin:
#   1. rank 2 slow and rank 5 corrupting: both named (rank 2 StragglerNode,
#      rank 5 DataCorruption, each exit 1); the other six exit 4 (class
#      peer) naming both - the slow node is judged although another node
#      corrupts data.
#   2. ranks 2 and 4 slow, two places apart: both named and failed; rank 3
#      between them has both ring links slow but passes its re-test with a
#      node proven good, and exits 4 like the other five (not failed).
#   3. a healthy ring against a floor curve (--catalog, points at 2 and 8
#      nodes): the 8-node ring is under the 2-node floor but over the
#      8-node one, every node's links are over the 2-node floor: every rank
#      exits 0. Its floors sit between this machine's ring and pair speeds,
#      which a sanitizer build moves by 3-10x: there it is left out (the
#      plain build's run judges it), the unit test
#      catalog/verdict_judges_a_ring_by_its_node_count covers the rule.
set -u
. "$(dirname "$0")/lib_netns.sh"
pfb_test pfpr- 10.254.64
command -v tc >/dev/null || { echo "skip: tc (iproute2) is not installed"; exit 77; }
N=8
common=(--fabric-provider tcp --no-imds --log-level info --expect-efa 0
        --timeout 60 -b 512K -e 512K -n 3 -w 1)
THIN="tbf rate 8mbit burst 32kb latency 400ms"
FLOOR=0.004

# run_ring PORT "SLOW RANKS" ARGS...: 8 ranks, the slow ones behind tbf.
run_ring() {
    local port=$1 slow=$2 r
    shift 2
    pfb_setup "$N" || fail "cannot build $N namespaces"
    pfb_fresh
    for r in $slow; do
        # shellcheck disable=SC2086 # the qdisc words are meant to split
        pfb_qdisc $r $THIN
    done
    pfb_ring_start "$N" "$port" "${common[@]}" "$@"
    pfb_ring_wait "$N"
    TOOK=$PFB_TOOK
}
took() {
    echo "slowest rank ${TOOK} s, pairwise phase $(pfb_json 0 'round(r["collective"]["straggler"]["pair_seconds"], 2)') s"
}
check() { pfb_check "$@"; }   # check RANK NAME FIELD
links() {
    pfb_json 0 '" ".join("%d-%d:%.3f%s%s" % (l["a"], l["b"], l["gbps"], "+wrong" if l["wrong"] else "", "(re-test)" if l["confirm"] else "") for l in r["collective"]["straggler"]["links"])'
}
culprits() {
    pfb_json "$1" '" ".join("%d:%s" % (c["rank"], c["kind"]) for c in r["collective"]["straggler"]["culprits"])'
}

# 1. one slow, one corrupting
run_ring 36401 "2" --min-busbw-gbps $FLOOR --debug-corrupt-rank 5
[ "$RC_2" -eq 1 ] || fail "mixed: rank 2 exited $RC_2, want 1"
[ "$(check 2 busbw reason)" = StragglerNode ] || fail "mixed: rank 2 busbw $(check 2 busbw reason): $(check 2 busbw message)"
grep -q "^this node (rank 2, [^)]*10.254.64.12) is the straggler" <<<"$(check 2 busbw message)" ||
    fail "mixed: rank 2 message: $(check 2 busbw message)"
[ "$RC_5" -eq 1 ] || fail "mixed: rank 5 exited $RC_5, want 1"
[ "$(check 5 data reason)" = DataCorruption ] || fail "mixed: rank 5 data $(check 5 data reason): $(check 5 data message)"
grep -q "^this node (rank 5, [^)]*10.254.64.15) corrupts data" <<<"$(check 5 data message)" ||
    fail "mixed: rank 5 message: $(check 5 data message)"
for r in 0 1 3 4 6 7; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "mixed: rank $r exited $rc, want 4 (a peer failed); links $(links)"
    [ "$(check $r busbw reason)" = SlowPeer ] || fail "mixed: rank $r busbw $(check $r busbw reason)"
    grep -q "^rank 2 ([^)]*10.254.64.12) is the straggler, not this node (rank $r)" <<<"$(check $r busbw message)" ||
        fail "mixed: rank $r busbw message: $(check $r busbw message)"
    [ "$(check $r data reason)" = PeerDataCorruption ] || fail "mixed: rank $r data $(check $r data reason)"
    grep -q "^rank 5 ([^)]*10.254.64.15) corrupts data, not this node (rank $r)" <<<"$(check $r data message)" ||
        fail "mixed: rank $r data message: $(check $r data message)"
    [ "$(pfb_json $r 'r["verdict"]["class"]')" = peer ] || fail "mixed: rank $r class"
    [ "$(culprits $r)" = "2:slow 5:data" ] || fail "mixed: rank $r culprits $(culprits $r)"
done
echo "ok   8 ranks, rank 2 slow and rank 5 corrupting: both exit 1 (StragglerNode, DataCorruption)," \
     "the six others exit 4 naming both ($(took)); links $(links)"

# 2. two slow, two places apart
run_ring 36411 "2 4" --min-busbw-gbps $FLOOR
for r in 2 4; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 1 ] || fail "two slow: rank $r exited $rc, want 1; links $(links)"
    [ "$(check $r busbw reason)" = StragglerNode ] || fail "two slow: rank $r busbw $(check $r busbw reason)"
done
for r in 0 1 3 5 6 7; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "two slow: rank $r exited $rc, want 4; $(check $r busbw message)"
    [ "$(check $r busbw reason)" = SlowPeer ] || fail "two slow: rank $r busbw $(check $r busbw reason)"
    grep -q "^rank 2 ([^)]*10.254.64.12), rank 4 ([^)]*10.254.64.14) are the stragglers, not this node (rank $r)" \
        <<<"$(check $r busbw message)" || fail "two slow: rank $r message: $(check $r busbw message)"
    [ "$(culprits $r)" = "2:slow 4:slow" ] || fail "two slow: rank $r culprits $(culprits $r)"
done
# rank 3: both its ring links slow, its re-test with a node proven good not
python3 - "$PFB_TMP/r3.json" <<'EOF' || fail "two slow: rank 3's links: $(links)"
import json, sys
s = json.load(open(sys.argv[1]))["collective"]["straggler"]
ring = {(l["a"], l["b"]): l for l in s["links"] if not l["confirm"]}
re = [l for l in s["links"] if l["confirm"] and l["a"] == 3]
assert ring[(2, 3)]["slow"] and ring[(3, 4)]["slow"], ring
assert len(re) == 1 and not re[0]["slow"], re
EOF
echo "ok   8 ranks, ranks 2 and 4 slow: both exit 1 StragglerNode; rank 3 between them passes its" \
     "re-test and exits 4 like the others ($(took)); links $(links)"

# 3. a healthy ring under the 2-node floor, over the 8-node one. The
# floors are set from this machine's healthy numbers at 512 KiB (the
# 8-rank ring 0.035..0.10 GB/s, its 14 steps latency-bound; the slowest
# pair link 0.11..0.27 over 4 runs, with 4 pairs at once on 2 busy
# cores): 2 nodes 0.08, 8 nodes 0.01, so the 2-node floor applied to the
# ring would fail it (a note says so when a quiet machine lets the ring
# meet it). A link measured low under load is a suspect, not a culprit:
# its re-test with a node proven good runs with fewer pairs at once.
if ldd "$PF_BIN" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    echo "note a sanitizer build: the floor-curve case (3) is left to the plain build"
    echo PASS
    exit 0
fi
cat >"$PFB_TMP/curve.yaml" <<'EOF'
version: 1
instances:
  pairs.test:
    efa: 0
    accelerators: 0
    accelerator_kind: none
    network_gbps: 10
    floors:
      2: {busbw_gbps: 0.08, from_bytes: 512K, verified: false, source: "test: above this machine's 8-node ring"}
      8: {busbw_gbps: 0.01, from_bytes: 512K, verified: false, source: "test: below it"}
EOF
run_ring 36421 "" --catalog "$PFB_TMP/curve.yaml" --instance-type pairs.test \
    --debug-floor-any-provider
ring=$(pfb_json 0 'round(r["collective"]["peak_busbw_gbps"], 3)')
for ((r = 0; r < N; r++)); do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 0 ] || fail "curve: rank $r exited $rc: $(check $r busbw message); links $(links)"
    [ "$(check $r busbw status)" = pass ] || fail "curve: rank $r busbw $(check $r busbw status)"
    grep -q "floor 0.01 GB/s from 512 KiB (catalog floor for pairs.test at 8 node(s)" <<<"$(check $r busbw message)" ||
        fail "curve: rank $r not judged at 8 nodes: $(check $r busbw message)"
    [ "$(pfb_json $r 'r["collective"]["straggler"]["pair_floor_gbps"]')" = 0.08 ] ||
        fail "curve: rank $r pair floor $(pfb_json $r 'r["collective"]["straggler"]["pair_floor_gbps"]')"
done
echo "ok   8 healthy ranks, ring $ring GB/s: every rank exit 0, the ring judged against the 8-node" \
     "floor 0.01, every link against the 2-node floor 0.08 ($(took)); links $(links)"
python3 -c "import sys; sys.exit(0 if $ring < 0.08 else 1)" ||
    echo "note the ring ($ring GB/s) met the 2-node floor this time: a quiet machine"
echo PASS
