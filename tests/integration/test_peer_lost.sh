#!/bin/bash
# A rank SIGKILLed mid-sweep: 3 ranks in 3 namespaces, rank 0 slowed down so
# the sweep lasts long enough; once the rendezvous is done and the sweep has
# started, rank 2 is killed. Ranks 0 and 1 must stop within 15 s (far below
# their 60 s timeout: nothing hangs), exit 3 (not judged, never failed) and report PeerLost naming
# rank 2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
pfb_need_root
fail() { echo "FAIL $*"; for r in 0 1 2; do pfb_show $r; done; exit 1; }

pfb_setup 3 || fail "cannot build 3 namespaces"
peers=$(pfb_peers 3 30121)
for r in 0 1 2; do
    pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
        --fabric-provider tcp --no-imds --timeout 60 -b 64K -e 1M -n 20 -w 5 \
        --debug-slow-rank 0 --debug-slow-ms 100 --log-level info
done
# Wait for the sweep to be under way on every rank.
for ((i = 0; i < 150; i++)); do
    n=$(grep -l "host engine: provider" "$PFB_TMP"/r[012].log 2>/dev/null | wc -l)
    [ "$n" -eq 3 ] && break
    sleep 0.1
done
[ "$n" -eq 3 ] || fail "the sweep did not start on all 3 ranks within 15 s"
victim=$(pfb_agent_pid 2) || fail "rank 2 has no pid"
[ "$(cat /proc/$victim/comm)" = efa-preflight ] || fail "rank 2's pid is not the agent"
sleep 1
kill -9 "$victim"
killed=$(date +%s.%N)
pfb_wait 2
[ "$PFB_RC" -eq 137 ] || fail "rank 2 exited $PFB_RC, want 137 (SIGKILL)"
for r in 0 1; do
    pfb_wait $r
    secs=$(python3 -c "print(round($PFB_END - $killed, 2))")
    [ "$PFB_RC" -eq 3 ] || fail "rank $r exited $PFB_RC, want 3 (infrastructure: not judged)"
    python3 -c "import sys; sys.exit(0 if $secs <= 15 else 1)" ||
        fail "rank $r needed $secs s after the kill"
    [ "$(pfb_json $r 'r["collective"]["error"]["reason"]')" = PeerLost ] ||
        fail "rank $r: collective.error.reason is not PeerLost"
    [ "$(pfb_json $r 'r["verdict"]["reason"]')" = PeerLost ] ||
        fail "rank $r: verdict.reason is not PeerLost"
    msg=$(pfb_json $r 'r["collective"]["error"]["message"]')
    grep -q "rank 2" <<<"$msg" || fail "rank $r does not name rank 2: $msg"
    echo "ok   rank $r: exit 3 PeerLost ${secs} s after the kill: $msg"
done
