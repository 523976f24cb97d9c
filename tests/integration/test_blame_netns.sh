#!/bin/bash
# Blame only the culprit, on the host engine across network namespaces
# (pfbl-*, 10.254.62.0/24, ports 36200-36299), static bootstrap, tcp:
#   1. 6 ranks, rank 3 slowed: the ring misses its floor, the pairwise
#      re-test names rank 3; rank 3 alone fails (exit 1, StragglerNode),
#      the five others exit 4 (SlowPeer: a peer failed, not this node)
#      naming rank 3 and its address.
#   2. 4 ranks, rank 2 corrupts its data: every pair's data is checked in
#      the re-test; rank 2 alone fails (exit 1, DataCorruption, "this node
#      (rank 2, ..., 10.254.62.12) corrupts data"), the others exit 4
#      (PeerDataCorruption) naming it; the report's culprits list rank 2
#      with its address.
#   3. and 4. the same on the NCCL engine through the GPU double (each
#      process its own "node" with one GPU of its own; the ranks meet in
#      the double's shared memory): 4 ranks, rank 3 slow -> rank 3
#      StragglerNode, the others SlowPeer; rank 1 corrupting -> rank 1
#      DataCorruption, the others PeerDataCorruption. The pairwise re-test
#      runs over 2-rank NCCL communicators. The slow rank sleeps 400 ms
#      before each launch, so its links stay under 0.021 GB/s; the floor
#      (0.05 GB/s) is one healthy pairs meet with room (~0.4 through the
#      double, 0.16 at worst under ASan beside two other test runs; each
#      link is judged against the 2-node floor, here the same).
set -u
. "$(dirname "$0")/lib_netns.sh"
pfb_test pfbl- 10.254.62
common=(--fabric-provider tcp --no-imds --log-level info --expect-efa 0)
# GPU r of the double is rank r's own (only read by the nccl engine)
PFB_RANK_GPU=1

run_ring() {   # run_ring PORT N ARGS...
    local port=$1 n=$2
    shift 2
    pfb_ring "$n" "$port" "${common[@]}" "$@"
}
check() { pfb_check "$@"; }   # check RANK NAME FIELD

# 1. six ranks, rank 3 slow
# Rank 3 sleeps 400 ms before each exchange of 8 MiB, so its links stay
# under 0.021 GB/s; healthy links measure 0.06 GB/s and more, under ASan too.
run_ring 36201 6 --engine host --timeout 80 -b 4M -e 4M -n 2 -w 1 --min-busbw-gbps 0.03 \
    --debug-slow-rank 3 --debug-slow-ms 400
[ "$RC_3" -eq 1 ] || fail "slow: rank 3 exited $RC_3, want 1"
[ "$(check 3 busbw reason)" = StragglerNode ] || fail "slow: rank 3 reason $(check 3 busbw reason)"
grep -q "^this node (rank 3, [^)]*10.254.62.13) is the straggler" <<<"$(check 3 busbw message)" ||
    fail "slow: rank 3 message: $(check 3 busbw message)"
for r in 0 1 2 4 5; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "slow: rank $r exited $rc, want 4 (a peer failed)"
    [ "$(check $r busbw reason)" = SlowPeer ] || fail "slow: rank $r reason $(check $r busbw reason)"
    grep -q "^rank 3 ([^)]*10.254.62.13) is the straggler, not this node (rank $r)" <<<"$(check $r busbw message)" ||
        fail "slow: rank $r message: $(check $r busbw message)"
    [ "$(pfb_json $r 'r["verdict"]["class"]')" = peer ] || fail "slow: rank $r class"
done
echo "ok   6 ranks, rank 3 slow: rank 3 exit 1 StragglerNode, the five others exit 4 SlowPeer naming it;" \
     "links $(pfb_json 0 '" ".join("%d-%d:%.3f" % (l["a"], l["b"], l["gbps"]) for l in r["collective"]["straggler"]["links"])') GB/s"

# 2. four ranks, rank 2 corrupts
run_ring 36211 4 --engine host --timeout 60 -b 64K -e 1M -n 2 -w 1 --debug-corrupt-rank 2
[ "$RC_2" -eq 1 ] || fail "corrupt: rank 2 exited $RC_2, want 1"
[ "$(check 2 data reason)" = DataCorruption ] || fail "corrupt: rank 2 reason $(check 2 data reason)"
grep -q "^this node (rank 2, [^)]*10.254.62.12) corrupts data" <<<"$(check 2 data message)" ||
    fail "corrupt: rank 2 message: $(check 2 data message)"
for r in 0 1 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "corrupt: rank $r exited $rc, want 4"
    [ "$(check $r data reason)" = PeerDataCorruption ] || fail "corrupt: rank $r reason $(check $r data reason)"
    grep -q "^rank 2 ([^)]*10.254.62.12) corrupts data, not this node (rank $r)" <<<"$(check $r data message)" ||
        fail "corrupt: rank $r message: $(check $r data message)"
    [ "$(pfb_json $r '[c["rank"] for c in r["collective"]["straggler"]["culprits"]]')" = "[2]" ] ||
        fail "corrupt: rank $r report culprits"
    [ "$(pfb_json $r 'r["collective"]["straggler"]["culprits"][0]["address"]')" = 10.254.62.12 ] ||
        fail "corrupt: rank $r report culprit address"
done
echo "ok   4 ranks, rank 2 corrupting: rank 2 exit 1 DataCorruption naming itself, the others exit 4" \
     "PeerDataCorruption; link wrong counts" \
     "$(pfb_json 0 '" ".join("%d-%d:%d" % (l["a"], l["b"], l["wrong"]) for l in r["collective"]["straggler"]["links"])')"
# 3. and 4. the NCCL engine on the GPU double
double=$PF_ROOT/${BUILD:-build}/double/libgpu-double.so
[ -r "$double" ] || fail "test double missing: $double (make test-helpers)"
export EFA_PREFLIGHT_CUDART=$double EFA_PREFLIGHT_NCCL=$double PF_DOUBLE_GPUS=4
unset NCCL_DEBUG NCCL_DEBUG_FILE
run_ring 36221 4 --engine nccl --timeout 60 -b 4M -e 4M -n 2 -w 1 \
    --min-busbw-gbps 0.05 --debug-slow-rank 3 --debug-slow-ms 400
[ "$RC_3" -eq 1 ] || fail "nccl slow: rank 3 exited $RC_3, want 1"
[ "$(check 3 busbw reason)" = StragglerNode ] || fail "nccl slow: rank 3 reason $(check 3 busbw reason)"
[ "$(pfb_json 3 'r["collective"]["engine"]')" = nccl ] || fail "nccl slow: not the nccl engine"
for r in 0 1 2; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "nccl slow: rank $r exited $rc, want 4"
    [ "$(check $r busbw reason)" = SlowPeer ] || fail "nccl slow: rank $r reason $(check $r busbw reason)"
done
echo "ok   nccl engine, 4 ranks, rank 3 slow: rank 3 exit 1 StragglerNode, the others exit 4 SlowPeer;" \
     "links $(pfb_json 0 '" ".join("%d-%d:%.3f" % (l["a"], l["b"], l["gbps"]) for l in r["collective"]["straggler"]["links"])') GB/s"

run_ring 36231 4 --engine nccl --timeout 60 -b 64K -e 1M -n 2 -w 1 --debug-corrupt-rank 1
[ "$RC_1" -eq 1 ] || fail "nccl corrupt: rank 1 exited $RC_1, want 1"
[ "$(check 1 data reason)" = DataCorruption ] || fail "nccl corrupt: rank 1 reason $(check 1 data reason)"
for r in 0 2 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "nccl corrupt: rank $r exited $rc, want 4"
    [ "$(check $r data reason)" = PeerDataCorruption ] || fail "nccl corrupt: rank $r reason $(check $r data reason)"
    grep -q "^rank 1 ([^)]*10.254.62.11) corrupts data, not this node" <<<"$(check $r data message)" ||
        fail "nccl corrupt: rank $r message: $(check $r data message)"
done
echo "ok   nccl engine, 4 ranks, rank 1 corrupting: rank 1 exit 1 DataCorruption, the others exit 4;" \
     "link wrong counts $(pfb_json 0 '" ".join("%d-%d:%d" % (l["a"], l["b"], l["wrong"]) for l in r["collective"]["straggler"]["links"])')"
echo PASS
