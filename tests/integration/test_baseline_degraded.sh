#!/bin/bash
# The fleet baseline names a node at 60 % of its neighbours that the
# catalog floor alone passes (docs/operate/baseline.md). Four ranks in
# namespaces pfbd-* (10.254.66.0/24, lib_netns.sh), every link shaped
# with tbf at 100 Mbit/s so the rate is the qdisc's, not the busy host's:
#   1. a healthy run, each rank with its own --history-dir: it passes and
#      its report carries the median pair link it observed;
#   2. rank 2 shaped to 60 Mbit/s (60 %), judged from the history alone (one run,
#      fewer than 3): the catalog floor (--min-busbw-gbps, far below)
#      alone judges, every rank passes, and the report says why;
#   3. the same, with a --baseline file of three healthy runs and
#      --baseline-fraction 0.72 (tbf over tcp on a busy host swings by up
#      to a fifth; 60 % stays well below, healthy links well above): rank 2 gets
#      BandwidthDegraded (a warning: exit 0) naming its links and the
#      baseline; ranks 0, 1, 3 pass with no such warning;
#   4. with --degraded-fails rank 2 exits 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_netns.sh"
. "$here/lib_port.sh"
pfb_test pfbd- 10.254.66
command -v tc >/dev/null || { echo "skip: tc (iproute2) is not installed"; exit 77; }

pfb_setup 4 || fail "cannot build 4 namespaces"
shape() {   # shape RANK RATE
    ip netns exec "$(pfb_ns "$1")" tc qdisc replace dev "${PFB_PREFIX}p$1" \
        root tbf rate "$2" burst 32kb latency 400ms 2>&1 ||
        { echo "skip: this kernel cannot shape a link with tbf"; exit 77; }
}
for r in 0 1 2 3; do shape $r 100mbit >/dev/null; done

run4() {    # run4 TAG [args...]: every rank, then RC_<r>; HIST=1: each rank
            # keeps its own --history-dir
    local tag=$1 r port
    shift
    port=$(pf_free_port)
    for r in 0 1 2 3; do
        mkdir -p "$PFB_TMP/h$r"
        pfb_start $r run --bootstrap static --peers "$(pfb_peers 4 "$port")" \
            --rank $r --fabric-provider tcp --no-imds --log-level info \
            --timeout 90 --instance-type test.fake --debug-floor-any-provider \
            --min-busbw-gbps 0.0005 -b 1M -e 1M -n 2 -w 1 \
            ${HIST:+--history-dir "$PFB_TMP/h$r"} "$@"
    done
    pfb_ring_wait 4
    for r in 0 1 2 3; do
        cp "$PFB_TMP/r$r.json" "$PFB_TMP/$tag-r$r.json" 2>/dev/null
    done
}
check() { pfb_json "$1" "' '.join(c['reason'] for c in r['checks'] if c['name'] == '$2')"; }
msg() { pfb_json "$1" "[c['message'] for c in r['checks'] if c['name'] == '$2'][0]"; }

# 1. Healthy.
HIST=1 run4 healthy
for r in 0 1 2 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 0 ] || fail "healthy run: rank $r exited $rc"
done
median=$(pfb_json 0 '[o["gbps"] for o in r["baseline"]["observed"] if o["kind"] == "pair"][0]')
bytes=$(pfb_json 0 '[o["bytes"] for o in r["baseline"]["observed"] if o["kind"] == "pair"][0]')
[ -n "$median" ] || fail "the healthy report observed no pair link"
echo "ok   healthy: median pair link $median GB/s at $bytes bytes"

# 2. Rank 2 at 60 %, the history holds one run: the catalog floor alone.
shape 2 60mbit >/dev/null
HIST=1 run4 history
for r in 0 1 2 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 0 ] || fail "history run: rank $r exited $rc: $(check $r busbw)"
    [ "$(pfb_json $r "len([c for c in r['checks'] if c['reason'] == 'BandwidthDegraded'])")" = 0 ] ||
        fail "rank $r degraded with a one-run baseline: $(msg $r baseline)"
done
note=$(pfb_json 0 'r["baseline"]["pair_links_held_to"]["note"]')
grep -q "fewer than 3: the catalog floor alone judges" <<<"$note" ||
    fail "rank 0's report does not say the catalog floor alone judged: $note"
echo "ok   one run in the history: every rank passes on the catalog floor ($note)"

# 3. A baseline of three healthy runs.
python3 - "$PFB_TMP/base.json" "$median" "$bytes" <<'PY'
import json, sys
m, b = float(sys.argv[2]), int(sys.argv[3])
json.dump({"version": 1, "entries": [{"type": "test.fake", "engine": "host",
    "kind": "pair", "nodes": 2, "bytes": b, "values": [m, m * 1.02, m * 0.98],
    "runs": 3}]}, open(sys.argv[1], "w"))
PY
run4 baseline --baseline "$PFB_TMP/base.json" --baseline-fraction 0.72
[ "$RC_2" -eq 0 ] || fail "rank 2 exited $RC_2, want 0 (a warning): $(msg 2 baseline)"
[ "$(check 2 baseline)" = BandwidthDegraded ] ||
    fail "rank 2: baseline check '$(check 2 baseline)': $(pfb_json 2 'r["baseline"]')"
m2=$(msg 2 baseline)
grep -q "link 1-2" <<<"$m2" && grep -q "link 2-3" <<<"$m2" &&
    grep -q "the fleet's median pair link" <<<"$m2" &&
    grep -q "the catalog floor 0.0005 GB/s alone would have passed it" <<<"$m2" ||
    fail "rank 2's message does not name its links and the baseline: $m2"
echo "ok   rank 2 at 60 %: BandwidthDegraded, exit 0: $m2"
for r in 0 1 3; do
    eval "rc=\$RC_$r"
    [ "$rc" -eq 0 ] || fail "rank $r exited $rc"
    [ "$(check $r baseline)" = "" ] || [ "$(pfb_json $r "[c['status'] for c in r['checks'] if c['name'] == 'baseline'][0]")" = pass ] ||
        fail "rank $r baseline check: $(check $r baseline) $(msg $r baseline)"
done
echo "ok   ranks 0, 1, 3 pass, held to the baseline: $(msg 0 baseline)"

# 4. --degraded-fails.
run4 fails --baseline "$PFB_TMP/base.json" --baseline-fraction 0.72 \
    --degraded-fails
[ "$RC_2" -eq 1 ] || fail "rank 2 with --degraded-fails exited $RC_2, want 1"
[ "$(check 2 baseline)" = BandwidthDegraded ] || fail "rank 2: $(check 2 baseline)"
echo "ok   --degraded-fails: rank 2 exits 1 with BandwidthDegraded"

# 5. Every report of the runs (the baseline applied, a degraded culprit,
#    the history's note) is valid against docs/reference/report.schema.json.
got=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
print(r["baseline"]["pair_links_held_to"]["applied"],
      sorted({c["kind"] for c in r["collective"]["straggler"]["culprits"]}))' "$PFB_TMP/baseline-r2.json")
[ "$got" = "True ['degraded']" ] || fail "rank 2's report: held_to.applied and culprit kinds: $got"
for py in python3 /usr/bin/python3; do
    out=$("$py" "$here/check_report_schema.py" "$PFB_TMP"/*-r?.json 2>&1); rc=$?
    [ $rc -eq 77 ] && continue
    [ $rc -eq 0 ] || { echo "$out"; fail "reports the schema refuses"; }
    echo "ok   $(ls "$PFB_TMP"/*-r?.json | wc -l) reports valid against docs/reference/report.schema.json"
    break
done
[ $rc -ne 77 ] || echo "note: reports not checked against the schema: $out"
