#!/bin/bash
# --debug-corrupt-rank 1 spoils one element in 1024 of rank 1's input, so
# every rank's result is wrong in the same places: DataCorruption, exit 1,
# and #wrong = 3 ranks x 2 (out/in place) x 1 = 6 at 4 KiB, where the sweep
# stops: wrong data decides the ring, and the time left goes to finding
# who (collective/plan.h). Ports from the kernel (lib_port.sh).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/${BUILD:-build}/efa-preflight}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; tail -n 20 "$tmp/err" 2>/dev/null; exit 1; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
. "$root/tests/integration/lib_port.sh"

timeout -k 5 60 "$bin" local --ranks 3 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 4K -e 64K -n 2 -w 1 --engine host --log-level info \
    --debug-corrupt-rank 1 --report "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "--debug-corrupt-rank 1 exited $rc, want 1"
got=$(json "$tmp/r.json" '(r["verdict"]["reason"], r["collective"]["wrong_total"], [x["out_of_place"]["wrong"] for x in r["collective"]["rows"]], [x["in_place"]["wrong"] for x in r["collective"]["rows"]])')
[ "$got" = "('DataCorruption', 6, [3], [3])" ] ||
    fail "report (reason, wrong_total, oop wrong, ip wrong) = $got"
grep -q "sweep: stopped after 4096 bytes: decided at 4096 bytes: 6 wrong" "$tmp/err" ||
    fail "the sweep did not say why it stopped at 4 KiB"
grep -q "DataCorruption" "$tmp/out" || fail "the table does not name DataCorruption"
echo "ok   corrupt rank 1 of 3: DataCorruption, 6 wrong at 4 KiB where the sweep stopped, exit 1"

# Without the flag the same run is clean.
timeout -k 5 60 "$bin" local --ranks 3 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 4K -e 64K -n 2 -w 1 --engine host \
    --report "$tmp/c.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "clean run exited $rc"
[ "$(json "$tmp/c.json" 'r["collective"]["wrong_total"]')" = "0" ] ||
    fail "clean run has wrong elements"
echo "ok   same run without the flag: 0 wrong, exit 0"
