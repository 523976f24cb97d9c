#!/bin/bash
# Strangers on the network cannot stop a run. Real agents in network
# namespaces; a fourth namespace runs tests/fakes/rdv_stranger against
# rank 0 while the group forms: every kind of bad HELLO (no MAC, wrong MAC,
# a replayed one, another protocol version, a rank out of range or held
# already, another run or world size, not a HELLO, garbage, a cut frame),
# unsigned as a stranger sends them and signed as a misconfigured member
# would. Every one must be refused, the run must pass (exit 0), and rank 0
# must log the refusals rate-limited (a few warnings, one summary with the
# count), never a secret. Then the same without a secret on 2 ranks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
pfb_need_root
STRANGER=$PF_ROOT/$BUILD/test-helpers/rdv_stranger
[ -x "$STRANGER" ] || { echo "FAIL $STRANGER is missing: make test-helpers"; exit 1; }
fail() { echo "FAIL $*"; for r in 0 1 2; do pfb_show $r; done; exit 1; }

# wait_joined N: rank 0's log says rank N joined.
wait_joined() {
    local i
    for ((i = 0; i < 100; i++)); do
        grep -q "rendezvous: rank $1 .*joined" "$PFB_TMP/r0.log" && return 0
        sleep 0.1
    done
    return 1
}

# stranger ARGS...: from namespace 3, output kept in $PFB_TMP/stranger.out.
stranger() {
    ip netns exec "$(pfb_ns 3)" "$STRANGER" --wait-s 15 "$@" >>"$PFB_TMP/stranger.out" 2>&1
}

head -c 24 /dev/urandom | base64 >"$PFB_TMP/secret"
chmod 600 "$PFB_TMP/secret"
pfb_setup 4 || fail "cannot build 4 namespaces"

# --- 3 ranks with a secret; strangers after rank 1 joined, before rank 2.
peers=$(pfb_peers 3 30151)
common=(run --bootstrap static --peers "$peers" --run-id job-s --fabric-provider tcp
        --no-imds --timeout 40 -e 64K --secret-file "$PFB_TMP/secret")
pfb_start 0 "${common[@]}" --rank 0 --log-level debug
pfb_start 1 "${common[@]}" --rank 1
wait_joined 1 || fail "rank 1 did not join"
stranger $(pfb_addr 0) 30151 3 job-s --kinds no-mac,wrong-mac,replayed,other-version,out-of-range,other-run,other-world,not-hello,garbage,cut,duplicate,valid ||
    fail "a stranger got in: $(grep ACCEPTED "$PFB_TMP/stranger.out")"
stranger --secret-file "$PFB_TMP/secret" $(pfb_addr 0) 30151 3 job-s \
    --kinds replayed,other-version,out-of-range,other-run,other-world,duplicate ||
    fail "a signed mistake got in: $(grep ACCEPTED "$PFB_TMP/stranger.out")"
refused=$(grep -c refused "$PFB_TMP/stranger.out")
[ "$refused" -eq 18 ] || { cat "$PFB_TMP/stranger.out"; fail "$refused of 18 kinds refused"; }
grep -q "duplicate refused: PeerRejected: .*rank 1 is claimed twice" "$PFB_TMP/stranger.out" ||
    fail "a second rank 1 was not refused as a duplicate"
pfb_start 2 "${common[@]}" --rank 2
for r in 0 1 2; do
    pfb_wait $r
    [ "$PFB_RC" -eq 0 ] || fail "rank $r exited $PFB_RC with strangers about, want 0"
done
warnings=$(grep -c "refused a connection from" "$PFB_TMP/r0.log")
[ "$warnings" -ge 1 ] && [ "$warnings" -le 4 ] ||
    fail "rank 0 logged $warnings refusal warnings for 18 refusals (want 1..4: rate-limited)"
grep -q "rendezvous: 1[0-9] HELLOs refused in all, the last from $(pfb_addr 3)" "$PFB_TMP/r0.log" ||
    fail "rank 0 did not sum up the refusals: $(grep 'in all' "$PFB_TMP/r0.log")"
if grep -qF "$(cat "$PFB_TMP/secret")" "$PFB_TMP"/r*.log "$PFB_TMP"/r*.json; then
    fail "the secret appears in the output"
fi
echo "ok   3 ranks, secret: 18 stranger HELLOs refused ($warnings warnings), run passed"

# --- 2 ranks, no secret: strangers before rank 1 comes.
rm -f "$PFB_TMP/stranger.out"
peers=$(pfb_peers 2 30152)
common=(run --bootstrap static --peers "$peers" --run-id job-n --fabric-provider tcp
        --no-imds --timeout 40 -e 64K)
pfb_start 0 "${common[@]}" --rank 0
stranger $(pfb_addr 0) 30152 2 job-n \
    --kinds wrong-mac,replayed,other-version,out-of-range,other-run,other-world,not-hello,garbage,cut ||
    fail "a stranger got in: $(grep ACCEPTED "$PFB_TMP/stranger.out")"
pfb_start 1 "${common[@]}" --rank 1
for r in 0 1; do
    pfb_wait $r
    [ "$PFB_RC" -eq 0 ] || fail "rank $r exited $PFB_RC with strangers about, want 0"
done
echo "ok   2 ranks, no secret: 9 stranger HELLOs refused, run passed"
