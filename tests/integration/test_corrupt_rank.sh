#!/bin/bash
# --debug-corrupt-rank 1 spoils one element in 1024 of rank 1's input, so
# every rank's result is wrong in the same places: DataCorruption, exit 1,
# and #wrong = 3 ranks x 2 (out/in place) x 1 = 6 at 4 KiB, where the sweep
# stops: wrong data decides the ring, and the time left goes to finding
# who (collective/plan.h). Ports from the kernel (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"

pf_local 1 "--debug-corrupt-rank 1" --ranks 3 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 4K -e 64K -n 2 -w 1 --engine host --log-level info \
    --debug-corrupt-rank 1 --report "$tmp/r.json"
got=$(json "$tmp/r.json" '(r["verdict"]["reason"], r["collective"]["wrong_total"], [x["out_of_place"]["wrong"] for x in r["collective"]["rows"]], [x["in_place"]["wrong"] for x in r["collective"]["rows"]])')
[ "$got" = "('DataCorruption', 6, [3], [3])" ] ||
    fail "report (reason, wrong_total, oop wrong, ip wrong) = $got"
grep -q "sweep: stopped after 4096 bytes: decided at 4096 bytes: 6 wrong" "$tmp/err" ||
    fail "the sweep did not say why it stopped at 4 KiB"
grep -q "DataCorruption" "$tmp/out" || fail "the table does not name DataCorruption"
echo "ok   corrupt rank 1 of 3: DataCorruption, 6 wrong at 4 KiB where the sweep stopped, exit 1"

# Without the flag the same run is clean.
pf_local 0 "clean run" --ranks 3 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 4K -e 64K -n 2 -w 1 --engine host \
    --report "$tmp/c.json"
[ "$(json "$tmp/c.json" 'r["collective"]["wrong_total"]')" = "0" ] ||
    fail "clean run has wrong elements"
echo "ok   same run without the flag: 0 wrong, exit 0"
