#!/bin/bash
# The time plan (collective/plan.h) when the sweep would eat the deadline:
# 4 ranks in network namespaces (pfdp-*, 10.254.63.0/24, ports
# 36300-36309), rank 2 sleeping 400 ms before every exchange, so each
# all_reduce takes about 2.4 s whatever its size and the sweep asked for
# (1, 2, 4, 8 MiB, 2 iterations) would need about a minute, past the
# 45 s timeout. The sweep must stop inside its share (rank 0 logs why),
# and the pairwise phase must still run and name rank 2: exit 1
# StragglerNode there, 4 on the others, every verdict inside the timeout.
set -u
. "$(dirname "$0")/lib_netns.sh"
pfb_test pfdp- 10.254.63
TIMEOUT=45

pfb_setup 4 || fail "cannot build 4 namespaces"
t0=$(date +%s.%N)
pfb_ring_start 4 36301 --fabric-provider tcp --no-imds --log-level info --timeout $TIMEOUT \
    --min-busbw-gbps 0.03 -b 1M -e 8M -f 2 -n 2 -w 1 \
    --debug-slow-rank 2 --debug-slow-ms 400
pfb_ring_wait 4
for r in 0 1 2 3; do
    python3 -c "import sys; sys.exit(0 if ${PFB_ENDS[r]} - $t0 <= $TIMEOUT else 1)" ||
        fail "rank $r had its verdict after the timeout"
done
grep -q "deadline plan: $TIMEOUT s in all" "$PFB_TMP/r0.log" ||
    fail "rank 0 logged no plan"
cut=$(grep -h "sweep: stopped after" "$PFB_TMP/r0.log" | head -1)
[ -n "$cut" ] || fail "the sweep was not cut short"
echo "ok   rank 0: ${cut#*info: }"
[ "$RC_2" -eq 1 ] || fail "rank 2 exited $RC_2, want 1"
[ "$(pfb_json 2 'r["verdict"]["reason"]')" = StragglerNode ] ||
    fail "rank 2 verdict $(pfb_json 2 'r["verdict"]["reason"]')"
[ "$(pfb_json 2 'r["collective"]["straggler"]["method"]')" = pairwise ] ||
    fail "rank 2 was not localised pairwise"
for r in 0 1 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 4 ] || fail "rank $r exited $rc, want 4"
done
echo "ok   localisation still ran: rank 2 exit 1 StragglerNode, ranks 0, 1, 3 exit 4," \
    "all within $TIMEOUT s"
