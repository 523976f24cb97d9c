#!/bin/bash
# Static mode, world 2: an impostor (tests/fakes/rdv_stranger, a valid
# HELLO for rank 1 without a secret) takes rank 1 before the real rank 1
# comes. Rank 0 forms the group with it and keeps its port open
# (transport/rdv_door.c): the real rank 1 must be told at once that its
# rank is claimed twice - exit 3, PeerRejected "rank 1 is claimed twice",
# in the table and the report - instead of dialling a closed port until
# its deadline and blaming rank 0 (PeerTimeout "rank 0 never answered").
# Twice: an impostor that stays connected, one that leaves after 3 s.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/build/efa-preflight}
STRANGER=$root/${BUILD:-build}/test-helpers/rdv_stranger
[ -x "$STRANGER" ] || { echo "FAIL $STRANGER is missing: make test-helpers"; exit 1; }
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.out "$tmp"/*.err; do [ -f "$f" ] && { echo "== $f"; tail -n 15 "$f"; }; done; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# start_rank0 TAG: rank 0 on a port the kernel picked free a moment ago;
# if another process took it meanwhile (exit 2, port in use) pick again.
# Returns once rank 0 says it listens; sets port and r0.
start_rank0() {
    local tag=$1 try i
    for try in 1 2 3 4 5; do
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        common=(run --bootstrap static --peers "127.0.0.1:$port,127.0.0.1:$port" --run-id "job-$tag"
                --fabric-provider tcp --no-imds --timeout 15 -b 64K -e 64K -n 2 -w 0)
        "$bin" "${common[@]}" --rank 0 --log-level info --report "$tmp/$tag-r0.json" \
            >"$tmp/$tag-r0.out" 2>"$tmp/$tag-r0.err" &
        r0=$!
        pids+=("$r0")
        for i in $(seq 1 100); do
            grep -q "rank 0 listening on port $port" "$tmp/$tag-r0.err" && return 0
            kill -0 "$r0" 2>/dev/null || break
            sleep 0.1
        done
        wait "$r0"
        grep -q RendezvousPortInUse "$tmp/$tag-r0.out" || fail "$tag: rank 0 did not start"
    done
    fail "$tag: no free port in 5 tries"
}

for hold in 20 3; do
    tag=hold$hold
    start_rank0 "$tag"
    "$STRANGER" --wait-s 5 --hold-s "$hold" --kinds valid 127.0.0.1 "$port" 2 "job-$tag" \
        >"$tmp/$tag-stranger.out" 2>&1 &
    st=$!
    pids+=("$st")
    for i in $(seq 1 100); do
        grep -q "valid ACCEPTED (peer table)" "$tmp/$tag-stranger.out" && break
        sleep 0.1
    done
    grep -q "valid ACCEPTED (peer table)" "$tmp/$tag-stranger.out" || fail "$tag: the impostor did not get rank 1"
    t0=$(date +%s.%N)
    "$bin" "${common[@]}" --rank 1 --report "$tmp/$tag-r1.json" \
        >"$tmp/$tag-r1.out" 2>"$tmp/$tag-r1.err"
    rc=$?
    secs=$(elapsed "$t0")
    [ $rc -eq 3 ] || fail "$tag: the real rank 1 exited $rc, want 3"
    awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || fail "$tag: the real rank 1 took ${secs}s (its deadline is 15 s)"
    grep -q "summary: ERROR PeerRejected .*(exit 3)" "$tmp/$tag-r1.out" || fail "$tag: the summary is not PeerRejected"
    grep -q "PeerRejected: rank 0 rejected a peer from 127.0.0.1: rank 1 is claimed twice" "$tmp/$tag-r1.err" ||
        fail "$tag: rank 1 does not say its rank is claimed twice"
    grep -q "never answered" "$tmp/$tag-r1.out" && fail "$tag: rank 1 blames rank 0"
    python3 - "$tmp/$tag-r1.json" <<'PY' || fail "$tag: the report"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["reason"] == "PeerRejected" and v["exit_code"] == 3, v
PY
    grep -q "after the group formed, 127.0.0.1: rank 1 is claimed twice" "$tmp/$tag-r0.err" ||
        fail "$tag: rank 0 does not log the second claim"
    kill "$st" 2>/dev/null
    wait "$r0"
    rc0=$?
    [ $rc0 -eq 3 ] || fail "$tag: rank 0 exited $rc0, want 3 (its rank 1 was an impostor)"
    echo "ok   impostor (holds ${hold}s) took rank 1: the real rank 1 exit 3 PeerRejected 'claimed twice' in ${secs}s; rank 0 exit $rc0 $(grep -o 'summary: FAIL [A-Za-z]*' "$tmp/$tag-r0.out")"
done
echo "PASS"
