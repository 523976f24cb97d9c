#!/bin/bash
# Straggler localisation, 4 ranks in 4 network namespaces (10.254.60.0/24,
# pfsg-*, ports 36000-36099), static bootstrap, host engine over tcp, floor
# --min-busbw-gbps 0.03. Healthy links measure 0.06-0.5 GB/s (0.06 under ASan
# on a busy CI machine); the slowed rank sleeps 400 ms before each exchange
# of 8 MiB, so its links cannot exceed 0.021 GB/s whatever the machine:
#   1. no slow rank: busbw far above the floor, every rank exits 0 with the
#      busbw check passing; the pairwise test (every run of 3+ nodes) finds
#      every link good and names nobody;
#   2. --debug-slow-rank 2 --debug-slow-ms 400: the ring misses the floor,
#      the pairwise re-test blames rank 2; rank 2 alone fails (exit 1,
#      StragglerNode, its links named), ranks 0, 1, 3 warn SlowPeer naming
#      rank 2 and its address and exit 4 (a peer failed, not this node);
#   3. 3 ranks, rank 2 slowed 400 ms per step and SIGKILLed during the
#      re-test: ranks 0 and 1 report PeerLost naming rank 2 within 15 s.
set -u
# Our own names and subnet.
. "$(dirname "$0")/lib_netns.sh"
pfb_test pfsg- 10.254.60

FLOOR=0.03
common=(--fabric-provider tcp --no-imds --log-level info --min-busbw-gbps $FLOOR)

# run_ring PORT N ARGS...: N ranks, all waited for (RC_<r> per rank).
run_ring() {
    local port=$1 n=$2
    shift 2
    pfb_ring "$n" "$port" "${common[@]}" "$@"
}

busbw_check() { pfb_check "$1" busbw "$2"; }   # busbw_check RANK FIELD

# 1. healthy ring
run_ring 36001 4 --timeout 40 -b 1M -e 4M -n 2 -w 1
for r in 0 1 2 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 0 ] || fail "healthy: rank $r exited $rc"
    [ "$(busbw_check $r status)" = pass ] || fail "healthy: rank $r busbw not pass"
    [ "$(pfb_json $r 'r["collective"]["straggler"]["method"]')" = pairwise ] ||
        fail "healthy: rank $r had no pairwise test"
    grep -q "^pairwise: every link good (4 links at or above 0.030 GB/s" \
        <<<"$(pfb_json $r 'r["collective"]["straggler"]["note"]')" ||
        fail "healthy: rank $r note: $(pfb_json $r 'r["collective"]["straggler"]["note"]')"
    [ "$(pfb_json $r 'r["collective"]["slow_rank"]')" = None ] ||
        fail "healthy: rank $r names a slow rank"
done
echo "ok   healthy 4 ranks: busbw $(pfb_json 0 'round(r["collective"]["peak_busbw_gbps"], 3)') GB/s" \
    "above the floor $FLOOR, every rank exit 0, every link good in the pairwise test"

# 2. rank 2 slowed
run_ring 36002 4 --timeout 60 -b 4M -e 4M -n 2 -w 1 \
    --debug-slow-rank 2 --debug-slow-ms 400
[ "$RC_2" -eq 1 ] || fail "slowed: rank 2 exited $RC_2, want 1"
[ "$(pfb_json 2 'r["verdict"]["reason"]')" = StragglerNode ] ||
    fail "slowed: rank 2 verdict.reason is $(pfb_json 2 'r["verdict"]["reason"]')"
[ "$(busbw_check 2 status)" = fail ] || fail "slowed: rank 2 busbw check not fail"
msg=$(busbw_check 2 message)
grep -q "^this node (rank 2, [^,]*, 10.254.60.12) is the straggler: busbw .* below the floor $FLOOR GB/s" <<<"$msg" ||
    fail "slowed: rank 2 message: $msg"
grep -q "pairwise: rank 2's links are both slow (1-2 .* GB/s, 2-3 .* GB/s)" <<<"$msg" ||
    fail "slowed: rank 2 message lacks the links: $msg"
echo "ok   slowed rank 2: exit 1 StragglerNode: $msg"
for r in 0 1 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "slowed: rank $r exited $rc, want 4 (a peer failed)"
    [ "$(pfb_json $r 'r["verdict"]["status"]')" = warn ] ||
        fail "slowed: rank $r verdict status is not warn"
    [ "$(busbw_check $r status)" = warn ] || fail "slowed: rank $r busbw not warn"
    [ "$(busbw_check $r reason)" = SlowPeer ] || fail "slowed: rank $r reason not SlowPeer"
    grep -q "^rank 2 ([^,]*, 10.254.60.12) is the straggler, not this node (rank $r)" <<<"$(busbw_check $r message)" ||
        fail "slowed: rank $r message: $(busbw_check $r message)"
done
echo "ok   ranks 0, 1, 3: exit 4, SlowPeer naming rank 2 (10.254.60.12)"
for r in 0 1 2 3; do
    got=$(pfb_json $r '(r["collective"]["slow_rank"], r["collective"]["straggler"]["method"], len([l for l in r["collective"]["straggler"]["links"] if not l["confirm"]]), len(r["collective"]["straggler"]["rank_seconds"]), r["collective"]["straggler"]["floor_gbps"])')
    [ "$got" = "(2, 'pairwise', 4, 4, $FLOOR)" ] || fail "slowed: rank $r report straggler = $got"
done
links=$(pfb_json 0 '" ".join("%d-%d:%.3f" % (l["a"], l["b"], l["gbps"]) for l in r["collective"]["straggler"]["links"] if not l["confirm"])')
python3 - "$PFB_TMP/r0.json" <<'EOF' || fail "slowed: link bandwidths do not single out rank 2: $links"
import json, sys
l = {(x["a"], x["b"]): x["gbps"] for x in json.load(open(sys.argv[1]))["collective"]["straggler"]["links"]}
# Both of rank 2's links below both of the others (the verdict's floor
# lies between them; the ratio depends on the machine's speed).
sys.exit(0 if max(l[(1, 2)], l[(2, 3)]) < min(l[(0, 1)], l[(3, 0)]) else 1)
EOF
echo "ok   every report: slow_rank 2, 4 links ($links GB/s)"

# 3. a rank lost during the re-test
pfb_setup 3 || fail "cannot build 3 namespaces"
pfb_fresh
pfb_ring_start 3 36003 "${common[@]}" \
    --timeout 60 -b 64K -e 64K -n 1 -w 0 --debug-slow-rank 2 --debug-slow-ms 400
pfb_await_log 30 "pairwise re-test of" 2 || fail "lost: the re-test did not start within 30 s"
sleep 0.5
pfb_signal 2 9
pfb_wait 2
for r in 0 1; do
    # exit 3: not judged
    pfb_wait_after $r "$PFB_SIGNALLED" 3 15 "the kill"
    [ "$(pfb_json $r 'r["verdict"]["reason"]')" = PeerLost ] ||
        fail "lost: rank $r verdict.reason is $(pfb_json $r 'r["verdict"]["reason"]')"
    msg=$(pfb_json $r 'r["collective"]["error"]["message"]')
    grep -q "rank 2" <<<"$msg" || fail "lost: rank $r does not name rank 2: $msg"
    echo "ok   killed during the re-test: rank $r exit 3 PeerLost $PFB_AFTER s after: $msg"
done
