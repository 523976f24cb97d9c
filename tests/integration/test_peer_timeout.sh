#!/bin/bash
# A rank that never starts: 3 ranks in 3 namespaces, rank 2 never launched.
# Ranks 0 and 1 must exit 3 (infrastructure) with reason PeerTimeout within
# the deadline + 2 s, and both reports must name rank 2 and its address.
# Then the mirror case: rank 0 never starts; rank 1 names rank 0's address.
set -u
. "$(dirname "$0")/lib_netns.sh"
pfb_need_root

timeout_s=6
pfb_setup 3 || fail "cannot build 3 namespaces"
peers=$(pfb_peers 3 30111)
for r in 0 1; do
    pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
        --fabric-provider tcp --no-imds --timeout $timeout_s --log-level info
done
for r in 0 1; do
    pfb_wait $r
    [ "$PFB_RC" -eq 3 ] || fail "rank $r exited $PFB_RC, want 3"
    python3 -c "import sys; sys.exit(0 if $PFB_SECS <= $timeout_s + 2 else 1)" ||
        fail "rank $r took $PFB_SECS s, more than the $timeout_s s deadline + 2 s"
    pfb_error_is $r PeerTimeout
    [ "$(pfb_json $r 'r["verdict"]["exit_code"]')" = 3 ] ||
        fail "rank $r: verdict.exit_code is not 3"
    msg=$PFB_MSG
    grep -q "rank 2 ($(pfb_addr 2)) never joined the rendezvous" <<<"$msg" ||
        fail "rank $r does not name the missing rank: $msg"
    echo "ok   rank $r: exit 3 PeerTimeout after $PFB_SECS s: $msg"
done

# Rank 0 missing: rank 1 retries until its deadline, then names rank 0.
peers=$(pfb_peers 2 30112)
pfb_start 1 run --bootstrap static --peers "$peers" --rank 1 \
    --fabric-provider tcp --no-imds --timeout 3
pfb_wait 1
[ "$PFB_RC" -eq 3 ] || fail "rank 1 without rank 0 exited $PFB_RC, want 3"
python3 -c "import sys; sys.exit(0 if $PFB_SECS <= 3 + 2 else 1)" ||
    fail "rank 1 took $PFB_SECS s"
msg=$(pfb_json 1 'r["collective"]["error"]["message"]')
grep -q "rank 0 at $(pfb_addr 0):30112 never answered" <<<"$msg" ||
    fail "rank 1 does not name rank 0's address: $msg"
[ "$(pfb_json 1 'r["collective"]["error"]["reason"]')" = PeerTimeout ] ||
    fail "rank 1: reason is not PeerTimeout"
echo "ok   rank 1 alone: exit 3 PeerTimeout after $PFB_SECS s: $msg"
