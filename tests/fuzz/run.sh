#!/bin/bash
# Run each fuzz target for SECONDS: first over its kept regression inputs,
# then fuzzing from its seed corpus (copied, so the repo stays clean).
# Prints one line per target with the executions done; exit 1 on any crash.
set -u
secs=$1; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build/fuzz}
out="$root/$build/fuzz-results"
mkdir -p "$out"
status=0
for t in "$@"; do
    bin="$root/$build/$t"
    reg="$root/tests/fuzz/regressions/$t"
    work="$out/$t-corpus"
    rm -rf "$work"; mkdir -p "$work"
    cp "$root/tests/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
    if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
        # -timeout: an input that once took seconds (deep YAML) must stay fast.
        if ! "$bin" -timeout=5 "$reg"/* >"$out/$t.regressions.log" 2>&1; then
            echo "FAIL $t: a kept regression input crashes again"; status=1; continue
        fi
    fi
    log="$out/$t.log"
    ( cd "$out" && timeout -k 5 $((secs + 60)) "$bin" -max_total_time="$secs" \
        -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$out/$t-" "$work" >"$log" 2>&1 )
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    if [ $rc -ne 0 ]; then
        echo "FAIL $t: crash after ${execs:-?} executions; see $log and $out/$t-*"
        status=1
    else
        echo "ok $t: ${execs:-0} executions in ${secs}s, no crash"
        echo "$t ${execs:-0}" >>"$out/executions.txt"
    fi
done
exit $status
