#!/bin/bash
# Run the DaemonSet staggered-pending test (tests/integration/
# test_k8s_ds_stagger.sh, the race of issue 16) N times in a row (default
# 20), each run under the shared integration lock on its own so others are
# not held up for long; stops at the first failure. Prints each run's time
# and the total.
#
# usage: scripts/ds_race_loop.sh [N]      env: BUILD (build)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-20}
export BUILD=${BUILD:-build}
start=$(date +%s)
for i in $(seq 1 "$n"); do
    t0=$(date +%s)
    if ! flock /tmp/pf-integration.lock "$root/tests/integration/run.sh" \
            test_k8s_ds_stagger >"/tmp/ds_race_loop.$$.log" 2>&1; then
        cat "/tmp/ds_race_loop.$$.log"
        echo "run $i of $n FAILED after $(( $(date +%s) - start ))s"
        rm -f "/tmp/ds_race_loop.$$.log"
        exit 1
    fi
    echo "run $i of $n passed ($(( $(date +%s) - t0 ))s)"
done
rm -f "/tmp/ds_race_loop.$$.log"
echo "$n of $n in a row passed in $(( $(date +%s) - start ))s"
