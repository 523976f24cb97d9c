#!/bin/bash
# valgrind over the agent: `local` with two rank processes over tcp (a small
# sweep) and `node` on fixture trees (passing and failing), every process
# traced. Asserts no valgrind error in any process, no definite leak, and
# that each run left one valgrind log per process it should have (so the
# check cannot pass by tracing nothing). tests/valgrind.supp holds the
# suppressions, each justified there.
set -u
command -v valgrind >/dev/null || { echo "skip: valgrind not installed"; exit 77; }
if ldd "$PF_BIN" 2>/dev/null | grep -q 'libasan\|libubsan'; then
    echo "skip: $PF_BIN is built with sanitizers; valgrind needs a plain build"
    exit 77
fi
case $BUILD in /*) B=$BUILD ;; *) B=$PF_ROOT/$BUILD ;; esac
FX=$B/fixtures/sysfs
FAKE=$B/test-helpers/libfabric-fake.so.1
SUPP=$PF_ROOT/tests/valgrind.supp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

VG=(valgrind --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --error-exitcode=99
    --trace-children=yes --child-silent-after-fork=no
    --suppressions="$SUPP" --num-callers=30)

# vg NAME WANT_RC WANT_PROCS cmd...: run under valgrind, check exit code,
# error summaries and leak summaries of every traced process.
vg() {
    local name=$1 want_rc=$2 want_procs=$3; shift 3
    local dir=$tmp/$name rc logs bad
    mkdir -p "$dir"
    "${VG[@]}" --log-file="$dir/vg.%p.log" "$@" >"$dir/out.txt" 2>&1
    rc=$?
    logs=$(ls "$dir"/vg.*.log 2>/dev/null | wc -l)
    bad=$(grep -L 'ERROR SUMMARY: 0 errors' "$dir"/vg.*.log 2>/dev/null)
    leaks=$(grep -h 'definitely lost: [1-9]' "$dir"/vg.*.log 2>/dev/null)
    if [ "$rc" = "$want_rc" ] && [ "$logs" -ge "$want_procs" ] &&
       [ -z "$bad" ] && [ -z "$leaks" ]; then
        echo "ok   $name: exit $rc, $logs processes, 0 errors, no definite leak"
    else
        echo "FAIL $name: exit $rc (want $want_rc), $logs valgrind logs (want >= $want_procs)"
        [ -n "$bad" ] && for f in $bad; do echo "--- $f"; grep -A25 '^==[0-9]*== [A-Z]' "$f" | head -60; done
        [ -n "$leaks" ] && echo "$leaks"
        tail -5 "$dir/out.txt"
        fails=$((fails + 1))
    fi
}

# The harness must be able to fail: a definite leak is exit 99.
printf '#include <stdlib.h>\nint main(void){ void *volatile p = malloc(64); p = 0; return p != 0; }\n' >"$tmp/leak.c"
if cc -O0 -o "$tmp/leak" "$tmp/leak.c" 2>/dev/null; then
    "${VG[@]}" --log-file="$tmp/leak.log" "$tmp/leak"
    [ $? -eq 99 ] || { echo "FAIL: valgrind did not flag a definite leak"; exit 1; }
    echo "ok   harness: a definite leak gives exit 99"
fi

# local: the launcher plus two rank processes.
vg local_tcp 0 3 "$PF_BIN" local --ranks 2 --fabric-provider tcp --no-imds \
    -b 1K -e 64K -n 2 -w 1 --timeout 120

"$PF_ROOT/tests/fakes/make_sysfs.sh" "$FX" || { echo "fixture build failed"; exit 1; }
if [ -r "$FAKE" ]; then
    for case in "p5.48xlarge 32 0" "p5-31 31 1" "p5-nouverbs 32 1"; do
        set -- $case
        PF_FAKE_FI_EFA_DOMAINS=$2 vg "node_$1" "$3" 1 "$PF_BIN" node \
            --sysfs-root "$FX/$1" --dev-root "$FX/$1" --no-imds \
            --libfabric-path "$FAKE" --instance-type p5.48xlarge \
            --expect-gpus 0 --min-memlock-mib 0 --efa-recount-ms 0 \
            --report "$tmp/report-$1.json"
    done
else
    echo "FAIL: missing $FAKE (make test-helpers)"; fails=$((fails + 1))
fi
# node on this machine: the real libfabric (tcp provider asked for).
vg node_this_machine 0 1 "$PF_BIN" node --no-imds --expect-gpus 0 --fabric-provider tcp

[ $fails -eq 0 ] || { echo "$fails valgrind run(s) failed"; exit 1; }
echo "PASS: valgrind clean"
