#!/bin/bash
# The source layout keeps the architecture (docs/internals/architecture.md):
#  - agent/util/ holds leaf libraries: no header outside util/ is included;
#  - agent/transport/ never sees the run or the collective's results;
#  - the engines (collective/host/, collective/nccl/) get a pf_engine_args
#    and never see the run either;
#  - agent/net/ is the wire the rendezvous and the coordinator share
#    (frames, body codec, the challenge seal): it uses util/ alone, and
#    coord/ and discover/ reach it without transport/;
#  - the DaemonSet coordinator lives in agent/coord/, not in discover/
#    (discover/ says who the peers are; only k8s.c hands over to coord/);
#  - agent/webhook/ is a side door, not a stage: it sees neither the run
#    nor any stage (it takes pf_webhook_opts from main) and only util/;
#  - agent/monitor/ runs no collective and finds no peers: it never includes
#    collective/, discover/, transport/ or verdict/;
#  - the judgement has one room, agent/judge/: the floor rule (and the
#    fleet baseline's bar on the pair links) is applied there alone, once
#    per run, and every other folder reads run->coll.judgement;
#  - util/, net/, webhook/, transport/, the collective harness and each
#    engine compile with only the headers they may use (pf.h, the
#    aggregate of agent/types/, is for main.c; types/run.h for the
#    harness, never for transport/ or the engines, which include neither
#    each other nor the transport);
#  - agent/main.c parses the config and dispatches by command, nothing
#    more: at most 300 lines, no stage called and no signal taken there
#    (the stage order is launch/pipeline.c, the signal state
#    launch/interrupt.c, the commands launch/commands.c and
#    monitor/command.c);
#  - no two .c files in agent/ call back into each other (A calls a
#    function B defines and B one A defines; callback_pairs.sh reads
#    that from the objects): what both need is a third file below them,
#    or a callback passed explicitly;
#  - unit tests mirror the sources: tests/unit/<folder>/test_<source>[_<what>].c
#    names a source agent/<folder>/<source>.c, and only tests live there
#    (every fake is in tests/fakes/).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# 1. util/ is a leaf (the MPI shim's ABI header is one too).
for f in agent/util/*.[ch]; do
    while read -r inc; do
        case "$inc" in
        ../mpishim/pf_mpi_shim.h) ;;   # the shim's ABI, itself a leaf
        */*) fail "$f includes \"$inc\": util/ may include only util/ headers" ;;
        esac
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done

# 2. and 3. The transport and the engines never see the run.
for f in agent/transport/*.[ch] agent/collective/host/*.[ch] agent/collective/nccl/*.[ch]; do
    if grep -nE 'struct pf_run\b|struct pf_coll\b|\brun->' "$f"; then
        fail "$f reaches into the run: it takes its arguments (pf_boot_args / pf_engine_args)"
    fi
    if grep -nE '#include "(\.\./)+(config|discover|coord|verdict|publish|launch)/' "$f"; then
        fail "$f includes a later or unrelated stage"
    fi
done

# 1b. net/ stands on util/ alone; the coordinator and discovery share the
#     wire through it, never through transport/.
[ -f agent/net/wire.c ] && [ -f agent/net/seal.c ] || fail "agent/net/ is missing"
for f in agent/net/*.[ch]; do
    while read -r inc; do
        case "$inc" in
        ../util/*|[a-z_]*.h) ;;
        *) fail "$f includes \"$inc\": net/ may include only util/ and net/ headers" ;;
        esac
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done
if grep -nE '#include "(\.\./)+transport/' agent/coord/*.[ch] agent/discover/*.[ch]; then
    fail "coord/ or discover/ includes transport/: the shared wire is in net/"
fi
if grep -nE 'pf_hmac_sha256|pf_random_bytes' agent/transport/rdv_*.c agent/coord/*.c; then
    fail "a frame signed or a nonce drawn beside net/seal.h: one scheme for both"
fi

# 2b. The coordinator has its own folder: discover/ defines none of it and
#     reaches it through one door (k8s.c -> coord/daemonset.h).
[ -f agent/coord/coord.c ] && [ -f agent/coord/lease.c ] || fail "agent/coord/ is missing"
if grep -lE '^[a-z].*\bpf_(co|lease)_[a-z_]+\(' agent/discover/*.c; then
    fail "the coordinator or its Lease is defined in discover/: it belongs in agent/coord/"
fi
for f in agent/discover/*.[ch]; do
    while read -r inc; do
        [ "$f:$inc" = agent/discover/k8s.c:../coord/daemonset.h ] ||
            fail "$f includes \"$inc\": discover/ enters coord/ only from k8s.c through coord/daemonset.h"
    done < <(sed -n 's/^#include "\(\.\.\/coord\/[^"]*\)".*/\1/p' "$f")
done

# 3b. The webhook reads a review and writes a patch: util/ is all it may use.
[ -d agent/webhook ] || fail "agent/webhook/ is missing"
for f in agent/webhook/*.[ch]; do
    if grep -nE 'struct pf_run\b|struct pf_config\b|#include "(\.\./)?pf\.h"' "$f"; then
        fail "$f reaches into the run or its config: it takes pf_webhook_opts"
    fi
    while read -r inc; do
        case "$inc" in
        ../util/*|[a-z_]*.h) [[ "$inc" == */* && "$inc" != ../util/* ]] &&
                                 fail "$f includes \"$inc\"" ;;
        *) fail "$f includes \"$inc\": the webhook may include only util/ and its own headers" ;;
        esac
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done

# 3c. The monitor reads, judges and writes; it never joins a collective.
for f in agent/monitor/*.[ch]; do
    [ -f "$f" ] || continue
    if grep -nE '#include "(\.\./)+(collective|discover|transport|verdict)/' "$f"; then
        fail "$f includes a stage the monitor must not use (it runs no collective)"
    fi
done

# 3d. Each of these folders compiles with only the headers it may use: its
#     .c and .h files are copied into an empty tree beside just those
#     headers, and every one is compiled there (-fsyntax-only, as the
#     Makefile would: -Iagent, no CUDA, the NCCL engine declares what it
#     dlopens). A forbidden include is a missing file, whatever its path.
#     pf.h (every stage at once) is in no tree, types/run.h (the run) only
#     in the harness's, and the harness has the engine interface but
#     neither engine's own headers.
cc=${CC:-cc}
ctmp=$(mktemp -d)
trap 'rm -rf "$ctmp"' EXIT
leaf="util/*.h mpishim/pf_mpi_shim.h"
engine_may="$leaf reasons.h collective/engine.h types/boot.h types/engine.h types/peers.h types/node.h
    types/gpu_health.h"
strict() {  # strict TREE FOLDER "ALLOWED": FOLDER's files (not its subfolders)
    local t=$ctmp/$1 own=$2 allowed=$3
    mkdir -p "$t/agent"
    # shellcheck disable=SC2086 # the patterns expand under agent/
    (cd agent && cp --parents $own/*.[ch] $allowed "$t/agent/") ||
        fail "copying $own for the include check"
    for f in "$t/agent/$own"/*.[ch]; do printf '%s %s\n' "$t" "$f"; done >>"$ctmp/jobs"
}
syntax() {  # syntax TREE FILE: compile FILE in TREE; messages on stdout
    "$cc" -std=c11 -D_GNU_SOURCE -Werror=implicit-function-declaration -fsyntax-only \
        -I"$1/agent" -x c "$2" 2>&1
}
strict util util "mpishim/pf_mpi_shim.h"
strict net net "$leaf"
strict webhook webhook "$leaf"
strict transport transport "$leaf reasons.h net/*.h types/boot.h types/peers.h"
strict host collective/host "$engine_may"
strict nccl collective/nccl "$engine_may"
strict collective collective "$leaf reasons.h types/*.h transport/bootstrap.h
    config/config.h config/run_clock.h config/catalog.h discover/discover.h probe/hw_counters.h
    probe/gpu_health.h baseline/baseline.h judge/judge.h judge/links.h"
export -f syntax; export cc
xargs -P "${PF_LAYOUT_JOBS:-2}" -L 1 bash -c 'out=$(syntax "$0" "$1") || {
        printf "%s\n" "${1#"$0"/}: compiled with only the headers it may include:" "$out" | head -n 8; }' \
    <"$ctmp/jobs" >"$ctmp/errors"
nfiles=$(wc -l <"$ctmp/jobs")
if [ -s "$ctmp/errors" ]; then
    cat "$ctmp/errors"; fail "a file includes a header its folder may not use (see above)"
fi
# The check can fail: a forbidden include in each kind of tree is caught,
# and an allowed one is not.
probe() {  # probe TREE FOLDER INCLUDE pass|fail
    local f=$ctmp/$1/agent/$2/zz_layout_probe.c r
    printf '#include "%s"\nint pf_layout_probe;\n' "$3" >"$f"
    if syntax "$ctmp/$1" "$f" >/dev/null; then r=pass; else r=fail; fi
    rm -f "$f"
    [ "$r" = "$4" ] || fail "include check: $2/ including \"$3\" should $4, it did not"
}
probe transport transport ../types/peers.h pass
probe transport transport ../pf.h fail
probe transport transport ../types/run.h fail
probe transport transport ../collective/engine.h fail
probe host collective/host ../../transport/bootstrap.h fail
probe host collective/host ../../types/coll.h fail
probe nccl collective/nccl ../host/host.h fail
probe collective collective ../verdict/verdict.h fail
probe collective collective host/host.h fail

# 3e. The judgement has one room, agent/judge/ (judge/judge.h writes the
#     floor rule): the floors and the busbw judged against them are
#     computed there, once per run, into run->coll.judgement, which the
#     sweep, the pairwise phase, the verdict and the publishers read, so a
#     report, a label and a metric cannot disagree with the verdict. No
#     file outside judge/ applies the rule (pf_floor_for, pf_judged_busbw)
#     or defines a floor function; only the collective and the pipeline
#     take the judgement's steps.
[ -f agent/judge/judge.c ] && [ -f agent/judge/floor.c ] || fail "agent/judge/ is missing"
judge_re='\bpf_(floor_for|judged_busbw)[[:space:]]*\('
if grep -nE "$judge_re" $(ls agent/*.[ch] agent/*/*.[ch] agent/*/*/*.[ch] | grep -v '^agent/judge/'); then
    fail "the floor rule applied outside agent/judge/: read run->coll.judgement (judge/judge.h)"
fi
for call in 'pf_floor_for(cfg' 'pf_judged_busbw (c'; do
    grep -qE "$judge_re" <<<"x = $call, &rule);" || fail "the floor-rule check misses \"$call\""
done
floor_def_re='^[a-z][a-z0-9_ *]*[ *]pf_[a-z0-9_]*floor[a-z0-9_]*\('
if grep -nE "$floor_def_re" $(ls agent/*.c agent/*/*.c agent/*/*/*.c | grep -v '^agent/judge/'); then
    fail "a floor function defined outside agent/judge/: the judgement's room holds them all"
fi
grep -qE "$floor_def_re" <<<'double pf_links_relative_floor(int n,' ||
    fail "the floor-definition check misses a floor function"
step_re='\bpf_judge(_plan|_stop)?[[:space:]]*\('
if grep -nE "$step_re" $(ls agent/*.c agent/*/*.c agent/*/*/*.c | grep -vE '^agent/(judge/|collective/collective\.c|launch/pipeline\.c)'); then
    fail "a judgement step taken outside the collective and the pipeline: read run->coll.judgement"
fi

# 3e'. Publishing reads the run and writes none of it: its own checks
#      (Node write, report file, a mark withheld) go to its outcome
#      (types/publish.h), and it never settles the run's verdict again.
grep -qE '^pf_err pf_publish\(const struct pf_run \*run,' agent/publish/publish.c ||
    fail "pf_publish must take a const run: its own checks go to struct pf_publish_outcome"
if grep -nE '\bpf_verdict_finish[[:space:]]*\(|pf_verdict_add[[:space:]]*\([[:space:]]*&run->verdict' agent/publish/*.c; then
    fail "publish/ edits the run's verdict: add to the outcome (pf_publish_outcome.shown) and settle that"
fi

# 3f. main.c dispatches; the pipeline, the signals and the commands live
#     in launch/ (and monitor/command.c).
lines=$(wc -l < agent/main.c)
[ "$lines" -le 300 ] || fail "agent/main.c has $lines lines (at most 300): the stage order belongs in launch/pipeline.c, a command in launch/commands.c or its own folder"
main_re='\bpf_(probe|discover|collective|verdict_[a-z]+|publish[a-z_]*|sigwatch_start|webhook_start|monitor_run)[[:space:]]*\('
if grep -nE "$main_re" agent/main.c; then
    fail "agent/main.c runs a stage or takes signals itself: launch/pipeline.c runs the stages, launch/interrupt.c holds the signal state"
fi
for call in 'pf_probe(run' 'pf_publish(run' 'pf_verdict_finish(run' 'pf_sigwatch_start(&w'; do
    grep -qE "$main_re" <<<"x = $call, err);" || fail "the main.c check misses \"$call\""
done

# 3g. Files split by job: no two .c files call back into each other, so a
#     reader never goes back and forth between two of them.
pairs=$(tests/integration/callback_pairs.sh 2>&1)
case $? in
0|1) ;;
*) fail "callback_pairs.sh could not read the objects: $pairs" ;;
esac
while read -r line; do
    [ -n "$line" ] || continue
    case "$line" in
    agent/*" <-> "*) fail "two files call back into each other (move what both need into a third file below them): $line" ;;
    esac
done <<<"$pairs"
# The check can fail: two files that call each other are found, a call
# one way only is not (compiled in an empty tree, no build needed).
cb=$ctmp/callbacks
mkdir -p "$cb/agent/a" "$cb/agent/b" "$cb/tests/integration"
cp tests/integration/callback_pairs.sh "$cb/tests/integration/"
printf 'int pf_b_two(void);\nint pf_a_one(void) { return 1; }\nint pf_a_three(void) { return pf_b_two(); }\n' >"$cb/agent/a/one.c"
printf 'int pf_a_one(void);\nint pf_b_two(void) { return pf_a_one(); }\n' >"$cb/agent/b/two.c"
printf 'int pf_a_one(void);\nint pf_c_four(void) { return pf_a_one(); }\n' >"$cb/agent/b/four.c"
cb_out=$(PF_ROOT=$cb BUILD=none "$cb/tests/integration/callback_pairs.sh")
[ $? -eq 1 ] && [ "$cb_out" = "agent/a/one.c <-> agent/b/two.c: one.c calls pf_b_two; two.c calls pf_a_one" ] ||
    fail "callback check: a file pair calling each other should be the one pair found, got: ${cb_out:-nothing}"

# 4. Tests mirror sources.
n=0
while read -r t; do
    n=$((n + 1))
    rel=${t#tests/unit/}
    dir=$(dirname "$rel"); [ "$dir" = . ] && dir=
    name=$(basename "$rel" .c); name=${name#test_}
    src_dir=agent${dir:+/$dir}
    [ -d "$src_dir" ] || { fail "$t: no folder $src_dir"; continue; }
    found=
    for s in "$src_dir"/*.c; do
        s=$(basename "$s" .c)
        if [ "$name" = "$s" ] || [[ "$name" == "$s"_* ]]; then found=$s; break; fi
    done
    [ -n "$found" ] || fail "$t names no source in $src_dir/ (test_<source>[_<what>].c)"
done < <(find tests/unit -name '*.c' | sort)
[ "$n" -gt 20 ] || fail "only $n unit test files found"
others=$(find tests/unit -type f ! -name 'test_*.c')
[ -z "$others" ] || fail "not a test, belongs in tests/fakes/: $others"

[ $bad -eq 0 ] || exit 1
echo "layout: util/ is a leaf, net/ stands on util/ alone, transport/ and the engines never see the run, $nfiles files of util/ net/ webhook/ transport/ collective/ compile with only the headers they may use, the coordinator is in coord/, webhook/ uses util/ alone, monitor/ runs no collective, main.c ($lines lines) only dispatches, no two files call back into each other, the judgement is computed in judge/ alone and read everywhere else, publish/ writes its own outcome, $n unit test files mirror their sources"
