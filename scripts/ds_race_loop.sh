#!/bin/bash
# Run the DaemonSet staggered-pending test (tests/integration/
# kube/ds_stagger.sh, the race of issue 16) N times in a row (default
# 20), each run under the shared integration lock on its own so others are
# not held up for long; stops at the first failure. Prints each run's time
# (the test's own, and with the wait for the lock) and the totals.
#
# usage: scripts/ds_race_loop.sh [N]      env: BUILD (build)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-20}
export BUILD=${BUILD:-build}
start=$(date +%s)
busy=0
for i in $(seq 1 "$n"); do
    t0=$(date +%s)
    if ! flock /tmp/pf-integration.lock "$root/tests/integration/run.sh" \
            test_k8s_ds_stagger >"/tmp/ds_race_loop.$$.log" 2>&1; then
        cat "/tmp/ds_race_loop.$$.log"
        echo "run $i of $n FAILED after $(( $(date +%s) - start ))s"
        rm -f "/tmp/ds_race_loop.$$.log"
        exit 1
    fi
    secs=$(sed -n 's/^PASS test_k8s_ds_stagger (\([0-9]*\)s)$/\1/p' "/tmp/ds_race_loop.$$.log")
    busy=$((busy + secs))
    echo "run $i of $n passed: test ${secs}s, $(( $(date +%s) - t0 ))s with the wait for the lock"
done
rm -f "/tmp/ds_race_loop.$$.log"
echo "$n of $n in a row passed: ${busy}s in the test, $(( $(date +%s) - start ))s with the waits for the lock"
