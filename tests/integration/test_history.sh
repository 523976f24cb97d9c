#!/bin/bash
# History on the node: four local runs (floors 0.05, 0.10, 0.15, 0.20 GB/s
# tell them apart) write their reports into --history-dir with
# --history-keep 3. `efa-preflight history` then shows the last three,
# newest first (0.20, 0.15, 0.10), each with status, reason, busbw at the
# floor's size and the floor, plus a trend line; --json gives the same
# order; EFA_PREFLIGHT_HISTORY_DIR works as the flag does; the oldest
# report is gone and nothing else was touched. Ports from the kernel
# (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"
fail() { echo "FAIL $*"; cat "$tmp/out" 2>/dev/null | head -20; exit 1; }

hist=$tmp/history
mkdir -p "$hist"
echo keep >"$hist/notes.txt"
. "$root/tests/integration/lib_port.sh"
for floor in 0.05 0.10 0.15 0.20; do
    port=$(pf_free_port)
    timeout -k 5 60 "$bin" local --ranks 2 --fabric-provider tcp --no-imds \
        --timeout 30 -e 256K --port $port --min-busbw-gbps $floor \
        --history-dir "$hist" --history-keep 3 --report "$tmp/r-$floor.json" \
        >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -le 1 ] || { cat "$tmp/err"; fail "run with floor $floor exited $rc"; }
done
n=$(ls "$hist" | grep -c '^[0-9]\{8\}T[0-9]\{6\}\.[0-9]\{6\}Z\.json$')
[ "$n" -eq 3 ] || fail "$n reports in the history directory, want 3 (--history-keep 3)"
[ -f "$hist/notes.txt" ] || fail "a file that is not a report was removed"

LC_ALL=C "$bin" history --history-dir "$hist" >"$tmp/out" 2>&1 || fail "history exited $?"
grep -q "^3 runs in $hist, newest first" "$tmp/out" || fail "no '3 runs' header"
order=$(awk 'NR > 2 && $1 ~ /^20/ {print $NF}' "$tmp/out" | tr '\n' ' ')
[ "$order" = "0.20 0.15 0.10 " ] || fail "floors in the order '$order', want newest first '0.20 0.15 0.10'"
for floor in 0.20 0.15 0.10; do
    want=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['started_at'], r['verdict']['status'], '%.2f' % r['collective']['peak_busbw_gbps'])" "$tmp/r-$floor.json")
    got=$(awk -v f=$floor '$NF == f {print $1, $2, $(NF-3)}' "$tmp/out")
    [ "$got" = "$want" ] || fail "row of floor $floor: '$got', its report says '$want'"
done
grep -q '256 KiB' "$tmp/out" || fail "the size busbw is judged at is not shown"
grep -q '^busbw trend, oldest to newest: ... ' "$tmp/out" || fail "no trend line of 3 points"
# Its numbers run in the sparkline's order: the oldest run's busbw first,
# the newest's last, and the change between them named up or down.
oldest=$(awk 'NR > 2 && $1 ~ /^20/ {b = $(NF-3)} END {print b}' "$tmp/out")
newest=$(awk 'NR > 2 && $1 ~ /^20/ {print $(NF-3); exit}' "$tmp/out")
dir=$(python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('up' if b > a else 'down')" "$oldest" "$newest")
grep -q "^busbw trend, oldest to newest: ...  ($oldest to $newest GB/s, \(unchanged\|$dir [0-9]*%\)" "$tmp/out" ||
    fail "trend numbers are not oldest ($oldest) to newest ($newest), $dir: $(grep trend "$tmp/out")"
echo "ok   history: 3 runs newest first, each row as its report says"
sed 's/^/     /' "$tmp/out"

EFA_PREFLIGHT_HISTORY_DIR=$hist "$bin" history --json >"$tmp/out.json" || fail "history --json exited $?"
python3 - "$tmp/out.json" <<'PY' || fail "history --json"
import json, sys
a = json.load(open(sys.argv[1]))
floors = [e["floor_gbps"] for e in a]
files = [e["file"] for e in a]
assert floors == [0.2, 0.15, 0.1], floors
assert files == sorted(files, reverse=True), files
assert all(e["bytes"] == 262144 and e["status"] for e in a), a
PY
echo "ok   history --json (from EFA_PREFLIGHT_HISTORY_DIR): the same three, newest first"

"$bin" history --history-dir "$tmp/none" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "history of a missing directory exited $rc, want 2"
grep -q "history directory $tmp/none: No such file or directory" "$tmp/out" || fail "message does not name the directory"
echo "ok   a missing directory: exit 2, named"
