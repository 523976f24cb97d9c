#!/bin/bash
# A rank that stops (SIGSTOP: a hung process, a frozen host) mid-sweep keeps
# its TCP connections open, so nothing breaks; only its silence on the
# rendezvous heartbeat gives it away. 3 ranks in 3 namespaces with
# --timeout 120: rank 2 is stopped once the sweep runs; ranks 0 and 1 must
# exit 3 (not judged, as for a lost peer) with PeerLost naming rank 2 as the
# one that stopped answering, within 15 s of the stop (the silence window
# is 10 s), not at their deadline. Then the same with rank 0 stopped: ranks
# 1 and 2 must name rank 0.
set -u
. "$(dirname "$0")/lib_netns.sh"
pfb_need_root

pfb_setup 3 || fail "cannot build 3 namespaces"

stop_one() {
    local victim=$1 port=$2 r
    pfb_ring_start 3 "$port" --fabric-provider tcp --no-imds --timeout 120 -b 64K \
        -e 1M -n 20 -w 5 --debug-slow-rank 0 --debug-slow-ms 100 --log-level info
    pfb_await_log 15 "host engine: provider" 0 1 2 ||
        fail "the sweep did not start on all 3 ranks within 15 s"
    sleep 1
    pfb_signal "$victim" STOP
    for r in 0 1 2; do
        [ $r -eq "$victim" ] && continue
        # exit 3: infrastructure, not judged; timeout 120 s
        pfb_wait_after $r "$PFB_SIGNALLED" 3 15 "the stop"
        pfb_error_is $r PeerLost
        grep -q "rank $victim (.*) stopped answering" <<<"$PFB_MSG" ||
            fail "rank $r does not name rank $victim: $PFB_MSG"
        echo "ok   rank $r: exit 3 PeerLost $PFB_AFTER s after the stop: $PFB_MSG"
    done
    kill -9 "$PFB_VICTIM"
    pfb_wait "$victim"
}

stop_one 2 30161
stop_one 0 30162
