#!/bin/bash
# A Pushgateway that accepts and never answers holds neither the exit nor
# the exit code: metrics are delivered last, after the verdict is on the
# Node and in the report, within their own budget of 5 s
# (PF_PUSH_BUDGET_MS), and a push that fails is logged only. So `node`
# ends within 5 s of its verdict (before: 320 s), `local --timeout 20`
# exits with the code its table printed (before: "(exit 0)" printed, exit
# 3 at 27 s, the launcher having killed rank 0), and a run that finishes
# in seconds does not wait for --timeout.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/build/efa-preflight}
tmp=$(mktemp -d)
hold=
trap '[ -n "$hold" ] && kill $hold 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# The hung Pushgateway: port 0, the port written once it listens; every
# connection accepted and kept, nothing ever read or answered.
python3 - "$tmp/port" <<'PY' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
held = []
s.settimeout(1)
end = time.time() + 280
while time.time() < end:
    try:
        held.append(s.accept()[0])
    except socket.timeout:
        pass
PY
hold=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || fail "the hung Pushgateway did not start"
pgw="http://127.0.0.1:$(cat "$tmp/port")"

# node: the same exit code as without a Pushgateway, within 5 s + slack.
node=(node --no-imds --fabric-provider tcp)
"$bin" "${node[@]}" >"$tmp/ref.out" 2>&1
want=$?
t0=$(date +%s.%N)
timeout -k 5 120 "$bin" "${node[@]}" --pushgateway "$pgw" --report "$tmp/n.json" \
    >"$tmp/n.out" 2>"$tmp/n.err"
rc=$?
secs=$(elapsed "$t0")
[ $rc -eq $want ] || { cat "$tmp/n.err"; fail "node with a hung Pushgateway: exit $rc, want $want (as without it)"; }
awk -v s="$secs" 'BEGIN { exit !(s < 9) }' || fail "node with a hung Pushgateway took ${secs}s (budget 5 s)"
grep -q "Pushgateway .*timed out\|Pushgateway .*Timeout" "$tmp/n.err" ||
    { cat "$tmp/n.err"; fail "node: the failed push is not logged"; }
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['verdict']['exit_code'] == $want" "$tmp/n.json" ||
    fail "node: the report was not written before the push"
echo "ok   node --pushgateway <hung>: exit $rc (as without it) in ${secs}s, the failed push logged"

# local: the printed exit code is the process's, within 5 s of the verdict.
t0=$(date +%s.%N)
timeout -k 5 120 "$bin" local --ranks 2 --fabric-provider tcp --no-imds --port 0 \
    -b 64K -e 64K -n 2 -w 0 --timeout 20 --pushgateway "$pgw" \
    >"$tmp/l.out" 2>"$tmp/l.err"
rc=$?
secs=$(elapsed "$t0")
grep -q "summary: .*(exit $rc)" "$tmp/l.out" ||
    { cat "$tmp/l.out" "$tmp/l.err"; fail "local: exit $rc, but the table printed $(grep -o '(exit [0-9])' "$tmp/l.out")"; }
[ $rc -le 1 ] || { cat "$tmp/l.err"; fail "local with a hung Pushgateway: exit $rc"; }
awk -v s="$secs" 'BEGIN { exit !(s < 15) }' || fail "local --timeout 20 with a hung Pushgateway took ${secs}s"
echo "ok   local --timeout 20 --pushgateway <hung>: exit $rc as printed, in ${secs}s"

# static run of two ranks, --timeout 90: done in seconds, not at 90 + 20.
t0=$(date +%s.%N)
p0=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
run=(run --bootstrap static --fabric-provider tcp --no-imds -b 64K -e 64K -n 2 -w 0
     --timeout 90 --bind-addr 127.0.0.1)
"$bin" "${run[@]}" --peers "127.0.0.1:$p0,127.0.0.1:$p0" --rank 0 --port "$p0" \
    --pushgateway "$pgw" >"$tmp/r0.out" 2>"$tmp/r0.err" &
r0=$!
"$bin" "${run[@]}" --peers "127.0.0.1:$p0,127.0.0.1:$p0" --rank 1 --port "$p0" \
    >"$tmp/r1.out" 2>"$tmp/r1.err"
rc1=$?
wait $r0
rc0=$?
secs=$(elapsed "$t0")
[ $rc0 -eq $rc1 ] || { cat "$tmp/r0.err"; fail "run: rank 0 (hung push) exit $rc0, rank 1 exit $rc1"; }
grep -q "summary: .*(exit $rc0)" "$tmp/r0.out" || { cat "$tmp/r0.out"; fail "run: rank 0's table disagrees with exit $rc0"; }
awk -v s="$secs" 'BEGIN { exit !(s < 30) }' || fail "run --timeout 90 with a hung Pushgateway took ${secs}s"
echo "ok   run --timeout 90 --pushgateway <hung>: exit $rc0 in ${secs}s"
echo "PASS"
