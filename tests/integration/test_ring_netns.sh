#!/bin/bash
# 2, 3 and 4 ranks, each in its own network namespace joined by a bridge
# (10.254.1.0/24), static bootstrap, host engine over the tcp provider:
# every rank passes with exit 0, 0 wrong elements, the full world in the
# report, and no collective error. First (no root needed): bad static
# bootstrap input exits 2 naming the bad entry.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"

usage_error() {   # usage_error MESSAGE ARGS...
    local want=$1 out rc
    shift
    out=$("$PF_BIN" run --bootstrap static --no-imds --fabric-provider tcp "$@" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || { echo "FAIL $* exited $rc, want 2: $out"; exit 1; }
    [ "$out" = "efa-preflight: $want" ] || { echo "FAIL $*: got '$out', want '$want'"; exit 1; }
}
usage_error "--peers entry 2 is empty (stray comma?)" --peers 'a:1,,b:2' --rank 0
usage_error "--peers entry 2 '10.0.0.2:99999': port '99999' is not a number in 1..65535" \
    --peers '10.0.0.1:30100,10.0.0.2:99999' --rank 0
usage_error "--bootstrap static needs --rank (0..1: this process's position in --peers)" \
    --peers '10.0.0.1:30100,10.0.0.2:30100'
usage_error "--rank 2 is outside 0..1 (--peers lists 2 ranks)" \
    --peers '10.0.0.1:30100,10.0.0.2:30100' --rank 2
: >"$PFB_TMP/empty"
usage_error "--secret-file $PFB_TMP/empty is empty" \
    --peers '127.0.0.1:30109' --rank 0 --secret-file "$PFB_TMP/empty"
echo "ok   bad static input: exit 2 naming the entry"

pfb_need_root
fail() { echo "FAIL $*"; for r in 0 1 2 3; do pfb_show $r; done; exit 1; }

port=30101
for n in 2 3 4; do
    pfb_setup $n || fail "cannot build $n namespaces"
    peers=$(pfb_peers $n $port)
    for ((r = 0; r < n; r++)); do
        pfb_start $r run --bootstrap static --peers "$peers" --rank $r \
            --fabric-provider tcp --no-imds --timeout 40 -b 8 -e 4M -n 5 -w 2 \
            --log-level info
    done
    for ((r = 0; r < n; r++)); do
        pfb_wait $r
        [ "$PFB_RC" -eq 0 ] || fail "$n ranks: rank $r exited $PFB_RC"
        [ "$(pfb_json $r 'r["verdict"]["exit_code"]')" = 0 ] ||
            fail "$n ranks: rank $r report exit_code is not 0"
        [ "$(pfb_json $r 'r["collective"]["nranks"]')" = "$n" ] ||
            fail "$n ranks: rank $r report nranks != $n"
        [ "$(pfb_json $r 'r["collective"]["wrong_total"]')" = 0 ] ||
            fail "$n ranks: rank $r saw wrong elements"
        [ "$(pfb_json $r 'r["collective"]["error"]')" = None ] ||
            fail "$n ranks: rank $r has a collective error"
        [ "$(pfb_json $r 'len(r["collective"]["rows"])')" = 20 ] ||
            fail "$n ranks: rank $r report does not hold 20 rows (8 B..4 MiB)"
    done
    grep -q "rendezvous: $n ranks joined" "$PFB_TMP/r0.log" ||
        fail "$n ranks: rank 0 did not log the rendezvous"
    echo "ok   $n ranks in $n namespaces: pass, 0 wrong, peak busbw" \
        "$(pfb_json 0 'r["collective"]["peak_busbw_gbps"]') GB/s"
    port=$((port + 1))
done
