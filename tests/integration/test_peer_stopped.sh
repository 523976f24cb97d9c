#!/bin/bash
# A rank that stops (SIGSTOP: a hung process, a frozen host) mid-sweep keeps
# its TCP connections open, so nothing breaks and every survivor waits until
# its own deadline; each one's engine then blames its own ring neighbour
# (rank 1 named rank 0). 3 ranks in 3 namespaces: rank 2 is stopped once the
# sweep runs; ranks 0 and 1 must exit 3 (not judged) with PeerTimeout naming
# rank 2 as the one that stopped answering, within their timeout plus 5 s.
# Then the same with rank 0 stopped: ranks 1 and 2 must name rank 0.
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
            --fabric-provider tcp --no-imds --timeout 15 -b 64K -e 1M -n 20 -w 5 \
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
    for r in 0 1 2; do
        [ $r -eq "$victim" ] && continue
        pfb_wait $r
        [ "$PFB_RC" -eq 3 ] || fail "rank $r exited $PFB_RC, want 3 (infrastructure: not judged)"
        python3 -c "import sys; sys.exit(0 if $PFB_SECS < 20 else 1)" ||
            fail "rank $r needed $PFB_SECS s (timeout 15 s)"
        [ "$(pfb_json $r 'r["collective"]["error"]["reason"]')" = PeerTimeout ] ||
            fail "rank $r: collective.error.reason is not PeerTimeout"
        msg=$(pfb_json $r 'r["collective"]["error"]["message"]')
        grep -q "^rank $victim (.*) stopped answering" <<<"$msg" ||
            fail "rank $r does not name rank $victim: $msg"
        echo "ok   rank $r: exit 3 PeerTimeout in $PFB_SECS s: $msg"
    done
    kill -9 "$pid"
    pfb_wait "$victim"
}

stop_one 2 30161
stop_one 0 30162
