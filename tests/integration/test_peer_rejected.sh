#!/bin/bash
# Membership is enforced and both sides learn why, yet a rank that does not
# belong cannot stop the others: 2 ranks in 2 namespaces whose
# --secret-file contents differ. Rank 1, whose HELLO rank 0 refuses, is
# told at once: exit 3 (infrastructure, never a failed node) with
# PeerRejected, well before its timeout. Rank 0 treats it as a stranger: it
# keeps waiting for the real rank 1 and at its deadline exits 3 with
# PeerTimeout naming rank 1 and saying why its HELLO was refused ("1 HELLO
# rejected ... HMAC does not match"). (Before, the first refused HELLO
# aborted rank 0 at once with PeerRejected, so any packet from anyone
# failed the run.) The same for a rank of another --run-id. No secret in
# any output. Matching secrets pass, whether the file ends in a newline
# (echo) or not (printf); a short or world-readable secret draws a warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
pfb_need_root
fail() { echo "FAIL $*"; for r in 0 1; do pfb_show $r; done; exit 1; }

printf 'alpha-0f3c9e-secret' >"$PFB_TMP/secret0"
printf 'bravo-77d1aa-secret' >"$PFB_TMP/secret1"
echo 'alpha-0f3c9e-secret' >"$PFB_TMP/secret0-nl"
chmod 600 "$PFB_TMP/secret0" "$PFB_TMP/secret1"
chmod 644 "$PFB_TMP/secret0-nl"
pfb_setup 2 || fail "cannot build 2 namespaces"

# check RANK EXIT REASON MAX_SECS NEEDLE...: exit code, reason, time, message.
check() {
    local r=$1 want_rc=$2 reason=$3 max=$4 msg n
    shift 4
    pfb_wait $r
    [ "$PFB_RC" -eq "$want_rc" ] || fail "rank $r exited $PFB_RC, want $want_rc"
    python3 -c "import sys; sys.exit(0 if $PFB_SECS < $max else 1)" ||
        fail "rank $r took $PFB_SECS s, want < $max s"
    [ "$(pfb_json $r 'r["collective"]["error"]["reason"]')" = "$reason" ] ||
        fail "rank $r: collective.error.reason is not $reason"
    [ "$(pfb_json $r 'r["verdict"]["reason"]')" = "$reason" ] ||
        fail "rank $r: verdict.reason is not $reason"
    msg=$(pfb_json $r 'r["collective"]["error"]["message"]')
    for n in "$@"; do
        grep -q -- "$n" <<<"$msg" || fail "rank $r message lacks '$n': $msg"
    done
    if grep -q -e alpha-0f3c9e -e bravo-77d1aa "$PFB_TMP/r$r.log" \
        "$PFB_TMP/r$r.out" "$PFB_TMP/r$r.json"; then
        fail "rank $r leaked a secret into its output"
    fi
    echo "ok   rank $r: exit $PFB_RC $reason in $PFB_SECS s: $msg"
}

# expect_refused PORT NEEDLE ARGS0 -- ARGS1: rank 1 does not belong.
expect_refused() {
    local port=$1 needle=$2 peers
    shift 2
    peers=$(pfb_peers 2 "$port")
    local a0=() a1=() side=0
    for a in "$@"; do
        if [ "$a" = -- ]; then side=1; continue; fi
        if [ $side -eq 0 ]; then a0+=("$a"); else a1+=("$a"); fi
    done
    pfb_start 0 run --bootstrap static --peers "$peers" --rank 0 \
        --fabric-provider tcp --no-imds --timeout 8 "${a0[@]}"
    pfb_start 1 run --bootstrap static --peers "$peers" --rank 1 \
        --fabric-provider tcp --no-imds --timeout 20 "${a1[@]}"
    check 1 3 PeerRejected 5 "$needle"
    # rank 0 gives up at its deadline (8 s less its margin), not before
    check 0 3 PeerTimeout 10 "rank 1 ($(pfb_addr 1)) never joined the rendezvous" \
        "1 HELLO rejected: the last from $(pfb_addr 1): " "$needle"
}

expect_refused 30131 "rank 1 on .*: HELLO HMAC does not match" \
    --secret-file "$PFB_TMP/secret0" -- --secret-file "$PFB_TMP/secret1"
expect_refused 30132 "rank 1 on .* belongs to run 'other-run', rank 0 to run 'job-a'" \
    --run-id job-a -- --run-id other-run

# Same secret, one file with a trailing newline (echo), one without
# (printf): the rendezvous passes and the run goes on to a verdict.
peers=$(pfb_peers 2 30133)
for r in 0 1; do
    f=$PFB_TMP/secret0
    [ $r -eq 1 ] && f=$PFB_TMP/secret0-nl
    pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
        --fabric-provider tcp --no-imds --timeout 30 -e 64K --secret-file "$f"
done
for r in 0 1; do
    pfb_wait $r
    [ "$PFB_RC" -eq 0 ] || fail "rank $r with the right secret exited $PFB_RC"
done
grep -q "secret-file .*secret0-nl is readable by every user (mode 0644)" "$PFB_TMP/r1.log" ||
    fail "rank 1 did not warn about its world-readable secret"
grep -q "readable by every user" "$PFB_TMP/r0.log" && fail "rank 0 warned about a mode 600 secret"
echo "ok   matching secrets (echo vs printf) pass; a world-readable one draws a warning"

# A 3-byte secret works but draws a warning.
printf 'abc' >"$PFB_TMP/short"
chmod 600 "$PFB_TMP/short"
pfb_ring_start 2 30134 --fabric-provider tcp --no-imds --timeout 30 -e 64K \
    --secret-file "$PFB_TMP/short"
for r in 0 1; do
    pfb_wait $r
    [ "$PFB_RC" -eq 0 ] || fail "rank $r with a short secret exited $PFB_RC"
    grep -q "holds 3 bytes: a secret shorter than 16 bytes can be guessed" "$PFB_TMP/r$r.log" ||
        fail "rank $r did not warn about a 3-byte secret"
done
echo "ok   a 3-byte secret draws a warning on both ranks"
