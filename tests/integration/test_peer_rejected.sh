#!/bin/bash
# Membership is enforced and both sides learn why: 2 ranks in 2 namespaces
# whose --secret-file contents differ must both exit 3 (infrastructure, never a failed node) with PeerRejected (the
# HMAC over HELLO does not match), without the secret in any output; the same
# for a rank that belongs to another --run-id. Matching secrets pass.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
pfb_need_root
fail() { echo "FAIL $*"; for r in 0 1; do pfb_show $r; done; exit 1; }

printf 'alpha-0f3c9e-secret' >"$PFB_TMP/secret0"
printf 'bravo-77d1aa-secret' >"$PFB_TMP/secret1"
pfb_setup 2 || fail "cannot build 2 namespaces"

# expect_rejected PORT NEEDLE ARGS0 -- ARGS1
expect_rejected() {
    local port=$1 needle=$2 peers r
    shift 2
    peers=$(pfb_peers 2 "$port")
    local a0=() a1=() side=0
    for a in "$@"; do
        if [ "$a" = -- ]; then side=1; continue; fi
        if [ $side -eq 0 ]; then a0+=("$a"); else a1+=("$a"); fi
    done
    pfb_start 0 run --bootstrap static --peers "$peers" --rank 0 \
        --fabric-provider tcp --no-imds --timeout 20 "${a0[@]}"
    pfb_start 1 run --bootstrap static --peers "$peers" --rank 1 \
        --fabric-provider tcp --no-imds --timeout 20 "${a1[@]}"
    for r in 0 1; do
        pfb_wait $r
        [ "$PFB_RC" -eq 3 ] || fail "rank $r exited $PFB_RC, want 3 (infrastructure: could not test)"
        python3 -c "import sys; sys.exit(0 if $PFB_SECS < 10 else 1)" ||
            fail "rank $r took $PFB_SECS s: a rejection must not wait for the timeout"
        [ "$(pfb_json $r 'r["collective"]["error"]["reason"]')" = PeerRejected ] ||
            fail "rank $r: collective.error.reason is not PeerRejected"
        [ "$(pfb_json $r 'r["verdict"]["reason"]')" = PeerRejected ] ||
            fail "rank $r: verdict.reason is not PeerRejected"
        msg=$(pfb_json $r 'r["collective"]["error"]["message"]')
        grep -q "$needle" <<<"$msg" || fail "rank $r message lacks '$needle': $msg"
        if grep -q -e alpha-0f3c9e -e bravo-77d1aa "$PFB_TMP/r$r.log" \
            "$PFB_TMP/r$r.out" "$PFB_TMP/r$r.json"; then
            fail "rank $r leaked a secret into its output"
        fi
        echo "ok   rank $r: exit 3 PeerRejected: $msg"
    done
}

expect_rejected 30131 "rank 1 on .*: HELLO HMAC does not match" \
    --secret-file "$PFB_TMP/secret0" -- --secret-file "$PFB_TMP/secret1"
expect_rejected 30132 "rank 1 on .* belongs to run 'other-run', rank 0 to run 'job-a'" \
    --run-id job-a -- --run-id other-run

# Same secret: the rendezvous passes and the run goes on to a verdict.
peers=$(pfb_peers 2 30133)
for r in 0 1; do
    pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
        --fabric-provider tcp --no-imds --timeout 30 -e 64K \
        --secret-file "$PFB_TMP/secret0"
done
for r in 0 1; do
    pfb_wait $r
    [ "$PFB_RC" -eq 0 ] || fail "rank $r with the right secret exited $PFB_RC"
done
echo "ok   matching secrets: both ranks pass"
