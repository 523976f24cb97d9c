#!/bin/bash
# A rank SIGKILLed mid-sweep: 3 ranks in 3 namespaces, rank 0 slowed down so
# the sweep lasts long enough; once the rendezvous is done and the sweep has
# started, rank 2 is killed. Ranks 0 and 1 must stop within 15 s (far below
# their 60 s timeout: nothing hangs), exit 3 (not judged, never failed) and report PeerLost naming
# rank 2.
set -u
. "$(dirname "$0")/lib_netns.sh"
pfb_need_root

pfb_setup 3 || fail "cannot build 3 namespaces"
pfb_ring_start 3 30121 --fabric-provider tcp --no-imds --timeout 60 -b 64K -e 1M \
    -n 20 -w 5 --debug-slow-rank 0 --debug-slow-ms 100 --log-level info
# Wait for the sweep to be under way on every rank.
pfb_await_log 15 "host engine: provider" 0 1 2 ||
    fail "the sweep did not start on all 3 ranks within 15 s"
sleep 1
pfb_signal 2 9
pfb_wait 2
[ "$PFB_RC" -eq 137 ] || fail "rank 2 exited $PFB_RC, want 137 (SIGKILL)"
for r in 0 1; do
    # exit 3: infrastructure, not judged
    pfb_wait_after $r "$PFB_SIGNALLED" 3 15 "the kill"
    pfb_error_is $r PeerLost
    grep -q "rank 2" <<<"$PFB_MSG" || fail "rank $r does not name rank 2: $PFB_MSG"
    echo "ok   rank $r: exit 3 PeerLost $PFB_AFTER s after the kill: $PFB_MSG"
done
