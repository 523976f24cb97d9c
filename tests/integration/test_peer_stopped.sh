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
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
pfb_need_root
fail() { echo "FAIL $*"; for r in 0 1 2; do pfb_show $r; done; exit 1; }

pfb_setup 3 || fail "cannot build 3 namespaces"

stop_one() {
    local victim=$1 port=$2 peers pid n r
    peers=$(pfb_peers 3 "$port")
    for r in 0 1 2; do
        pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
            --fabric-provider tcp --no-imds --timeout 120 -b 64K -e 1M -n 20 -w 5 \
            --debug-slow-rank 0 --debug-slow-ms 100 --log-level info
    done
    for ((n = 0, i = 0; i < 150 && n < 3; i++)); do
        n=$(grep -l "host engine: provider" "$PFB_TMP"/r[012].log 2>/dev/null | wc -l)
        sleep 0.1
    done
    [ "$n" -eq 3 ] || fail "the sweep did not start on all 3 ranks within 15 s"
    pid=$(pfb_agent_pid "$victim") || fail "rank $victim has no pid"
    [ "$(cat /proc/$pid/comm)" = efa-preflight ] || fail "rank $victim's pid is not the agent"
    sleep 1
    kill -STOP "$pid"
    stopped=$(date +%s.%N)
    for r in 0 1 2; do
        [ $r -eq "$victim" ] && continue
        pfb_wait $r
        secs=$(python3 -c "print(round($PFB_END - $stopped, 2))")
        [ "$PFB_RC" -eq 3 ] || fail "rank $r exited $PFB_RC, want 3 (infrastructure: not judged)"
        python3 -c "import sys; sys.exit(0 if $secs <= 15 else 1)" ||
            fail "rank $r needed $secs s after the stop (timeout 120 s)"
        [ "$(pfb_json $r 'r["collective"]["error"]["reason"]')" = PeerLost ] ||
            fail "rank $r: collective.error.reason is not PeerLost"
        [ "$(pfb_json $r 'r["verdict"]["reason"]')" = PeerLost ] ||
            fail "rank $r: verdict.reason is not PeerLost"
        msg=$(pfb_json $r 'r["collective"]["error"]["message"]')
        grep -q "rank $victim (.*) stopped answering" <<<"$msg" ||
            fail "rank $r does not name rank $victim: $msg"
        echo "ok   rank $r: exit 3 PeerLost ${secs} s after the stop: $msg"
    done
    kill -9 "$pid"
    pfb_wait "$victim"
}

stop_one 2 30161
stop_one 0 30162
