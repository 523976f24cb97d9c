#!/bin/bash
# Run every tests/integration/test_*.sh, and every side of every scenario in
# the Kubernetes table (kube/scenarios: the fake side as test_k8s_NAME, the
# real side as test_kreal_NAME), each with a deadline; summarize.
# A test prints what it checks; exit 0 = pass, 77 = skipped (with reason).
set -u
here=$(cd "$(dirname "$0")" && pwd)
export BUILD=${BUILD:-build}
export PF_BIN=${PF_BIN:-$(cd "$here/../.." && pwd)/$BUILD/efa-preflight}
export PF_ROOT=$(cd "$here/../.." && pwd)
limit=${PF_TEST_TIMEOUT:-300}
lock_wait=${PF_LOCK_WAIT:-1800}
only=${1:-}
pass=0; fail=0; skip=0; failed=""
mkdir -p "$PF_ROOT/$BUILD/test-logs"

# What runs: "NAME SCRIPT SIDE" a line; SIDE "-" for a plain test, fake or
# real for a Kubernetes scenario (PF_KUBE_SIDE, kube/lib.sh).
plan() {
    local t name sides side
    for t in "$here"/test_*.sh; do
        [ -e "$t" ] && echo "$(basename "$t" .sh) $t -"
    done
    [ -f "$here/kube/scenarios" ] || return 0
    while read -r name sides; do
        for side in ${sides//,/ }; do
            case $side in
                fake) echo "test_k8s_$name $here/kube/$name.sh fake" ;;
                real) echo "test_kreal_$name $here/kube/$name.sh real" ;;
            esac
        done
    done < <(sed 's/#.*//; /^[[:space:]]*$/d' "$here/kube/scenarios" | awk '{print $1, $2}')
}

while read -r name t side; do
    [ -n "$only" ] && [[ "$name" != *"$only"* ]] && continue
    log="$PF_ROOT/$BUILD/test-logs/$name.log"
    start=$(date +%s)
    if [ "$side" = fake ] || grep -q 'fakes/apiserver/lib.sh' "$t"; then
        # The fake API server's tests take turns with another checkout's
        # (one lock, fixed namespace names): the wait is outside the
        # test's deadline. -o: what the test leaves behind holds no lock.
        PF_KUBE_SIDE=$side PFK8S_LOCK_HELD=1 flock -o -E 75 -w "$lock_wait" /tmp/pfk8s.lock \
            timeout -k 5 "$limit" bash "$t" >"$log" 2>&1 </dev/null
        rc=$?
        [ $rc -eq 75 ] && { echo "skip: /tmp/pfk8s.lock held for $lock_wait s by another test run" >>"$log"; rc=77; }
    else
        PF_KUBE_SIDE=$side timeout -k 5 "$limit" bash "$t" >"$log" 2>&1 </dev/null
        rc=$?
    fi
    secs=$(( $(date +%s) - start ))
    # exit code and seconds beside the log, for scripts/reliability_table.py
    echo "$rc $secs" >"${log%.log}.rc"
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); echo "PASS $name (${secs}s)"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$log")"
    else
        fail=$((fail + 1)); failed="$failed $name"
        echo "FAIL $name (rc=$rc, ${secs}s); last lines of $log:"
        tail -n 25 "$log" | sed 's/^/    /'
        # A test that dumps its daemons' logs after the failing check pushes
        # that check out of the tail: repeat its FAIL lines last.
        grep -m 10 '^FAIL' "$log" | sed 's/^/    = /'
    fi
done < <(plan | sort)
echo "integration: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] || { echo "failed:$failed"; exit 1; }
# PF_NO_SKIP=1 (make kube-real): a tier whose setup is missing must not
# pass quietly; every selected test has to run.
if [ "${PF_NO_SKIP:-0}" = 1 ] && { [ $skip -gt 0 ] || [ $pass -eq 0 ]; }; then
    echo "FAIL: $skip of $((pass + skip)) tests skipped (PF_NO_SKIP=1: this tier must run them all; the SKIP lines above say what is missing)"
    exit 1
fi
