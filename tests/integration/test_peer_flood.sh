#!/bin/bash
# A connection flood on rank 0's rendezvous port only slows the join down:
# it never fails the run. Once rank 0 listens, a stranger opens ~1000
# idle connections a second (never a byte sent) and holds the newest 3000
# of them until the run is over: from a fourth namespace in odd runs, from
# rank 1's own namespace (its address, as a local attacker on its host) in
# even ones. When it has opened
# 600 (more than the slots and listen queue rank 0 had before the fix),
# ranks 1 and 2 start; all 3 must pass (exit 0) within RUN_S seconds, in
# every one of PF_FLOOD_RUNS runs (default 10), and rank 0 must say it
# dropped flood connections to make room (the flood did saturate what one
# address may hold).
# Before the fix rank 0 stopped accepting while its slots were young, the
# listen queue filled with the flood and members' SYNs were dropped: the
# ranks took 8.6-10 s here, and 1 run in 3 to 6 ended PeerTimeout on every
# rank (tests/integration/repro_peer_flood.sh, now this test).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
. "$here/lib_port.sh"
pfb_need_root
runs=${PF_FLOOD_RUNS:-10}
RUN_S=7          # 0.5-1.4 s here, up to 4 s with 3 CPU hogs on 2 cores; 7.7-10.6 s before the fix
fail() {
    echo "FAIL $*"
    for r in 0 1 2; do pfb_show $r; done
    echo "--- flooder"; tail -n 5 "$PFB_TMP/flood.log"
    exit 1
}
pfb_setup 4 || fail "cannot build 4 namespaces"

# flood PORT NS: ~1000 connections a second to rank 0 from namespace NS,
# each held idle; the oldest let go beyond 3000 held. Its pid in $flooder.
flood() {
    ip netns exec "$(pfb_ns "$2")" python3 - "$(pfb_addr 0)" "$1" >"$PFB_TMP/flood.log" 2>&1 <<'PY' &
import collections, resource, socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
held = collections.deque()
opened = 0
start = time.time()
print("flooding", host, port, flush=True)
while time.time() - start < 120:
    for _ in range(10):       # 10 connections every 10 ms
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        held.append(s)
        opened += 1
    while len(held) > 3000:
        held.popleft().close()
    if opened // 100 != (opened - 10) // 100:
        print("opened", opened, "held", len(held), flush=True)
    time.sleep(0.01)
PY
    flooder=$!
}

# listening PORT: rank 0 listens on PORT, within 15 s.
listening() {
    local i
    for ((i = 0; i < 150; i++)); do
        [ -n "$(ip netns exec "$(pfb_ns 0)" ss -Hltn "sport = :$1")" ] && return 0
        sleep 0.1
    done
    return 1
}

# flooded N: the flooder has opened at least N connections, within 15 s.
flooded() {
    local i n
    for ((i = 0; i < 150; i++)); do
        n=$(grep -o '^opened [0-9]*' "$PFB_TMP/flood.log" 2>/dev/null | tail -n 1 | cut -d' ' -f2)
        [ "${n:-0}" -ge "$1" ] && return 0
        kill -0 "$flooder" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

pass=0
for ((run = 1; run <= runs; run++)); do
    port=$(pf_free_port)
    peers=$(pfb_peers 3 "$port")
    common=(run --bootstrap static --peers "$peers" --run-id "flood-$run" --fabric-provider tcp
            --no-imds --timeout 20 -b 64K -e 64K -n 2 -w 0)
    # No line of the last run may pass for this one's (the flooder's log
    # is truncated by its own shell, after flood returns).
    rm -f "$PFB_TMP"/r[0-2].log "$PFB_TMP/flood.log"
    pfb_start 0 "${common[@]}" --rank 0 --log-level info
    listening "$port" || fail "run $run: rank 0 is not listening on $port"
    from=$((run % 2 ? 3 : 1))
    flood "$port" $from
    # More than every slot the old rank 0 had (256) and its listen queue
    # (128) can hold: the members come into a saturated port.
    flooded 600 || { kill "$flooder" 2>/dev/null; fail "run $run: the flooder did not get going"; }
    pfb_start 1 "${common[@]}" --rank 1
    pfb_start 2 "${common[@]}" --rank 2
    bad=""
    for r in 0 1 2; do
        pfb_wait $r
        [ "$PFB_RC" -eq 0 ] ||
            bad+=" rank $r exited $PFB_RC after ${PFB_SECS}s: $(grep -o 'summary: .*' "$PFB_TMP/r$r.out");"
    done
    # Ranks 1 and 2 started last and ended with the run: it took this long.
    secs=$PFB_SECS
    kill "$flooder" 2>/dev/null
    wait "$flooder" 2>/dev/null
    [ -z "$bad" ] || fail "run $run of $runs failed under the flood ($pass passed before it):$bad"
    python3 -c "import sys; sys.exit(0 if $secs <= $RUN_S else 1)" ||
        fail "run $run of $runs: the ranks took ${secs}s under the flood, more than ${RUN_S}s ($pass passed before it)"
    grep -q "silent connections dropped to make room" "$PFB_TMP/r0.log" ||
        fail "run $run: rank 0 did not say it dropped flood connections"
    pass=$((pass + 1))
    joined=$(grep -o 'rendezvous: 3 ranks joined in [0-9.]* s' "$PFB_TMP/r0.log" | grep -o '[0-9.]* s')
    echo "ok   run $run: 3 ranks passed under the flood from $(pfb_addr $from) in ${secs}s (joined in $joined; $(tail -n 1 "$PFB_TMP/flood.log"))"
done
echo "PASS: $pass of $runs runs passed, each within ${RUN_S}s, under a flood of ~1000 idle connections a second"
