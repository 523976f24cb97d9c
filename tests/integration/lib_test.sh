# The start every integration test shares; source it first:
#   . "$(dirname "$0")/lib_test.sh"
# root: the checkout; bin: the agent under test ($PF_BIN, as run.sh sets
# it); tmp: a folder of the test's own. On exit the pids in pids are
# killed and waited for, and tmp is removed. fail MESSAGE: says FAIL and why, shows the end
# of $tmp/err where there is one, exits 1 (a test may define its own).
# json FILE EXPR: EXPR, Python on the report r read from FILE.
# pf_free_port: lib_port.sh.
set -u
root=${PF_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
bin=${PF_BIN:-$root/${BUILD:-build}/efa-preflight}
tmp=$(mktemp -d)
pids=()
pf_test_exit() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap pf_test_exit EXIT
fail() { echo "FAIL $*"; tail -n 20 "$tmp/err" 2>/dev/null; exit 1; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
. "$root/tests/integration/lib_port.sh"

# pf_wait_http URL SECONDS: until URL answers 200; 1 if it never did.
pf_wait_http() {
    local end=$(( $(date +%s) + $2 ))
    while [ "$(date +%s)" -lt $end ]; do
        curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null && return 0
        sleep 0.2
    done
    return 1
}

# pf_serve START LOG PATH SECONDS INUSE: a server on a loopback port the
# kernel gave: ADDR is 127.0.0.1:<port>, START (a function that execs the
# server on $ADDR) runs in the background logging to LOG until
# http://$ADDR$PATH answers, SECONDS at the most; a try whose port was
# taken meanwhile (INUSE in LOG) goes again, three in all. Its pid joins
# pids; 1 when it never came up.
pf_serve() {
    local start=$1 log=$2 path=$3 secs=$4 inuse=$5 attempt pid
    for attempt in 1 2 3; do
        ADDR=127.0.0.1:$(pf_free_port)
        "$start" >"$log" 2>&1 &
        pid=$!
        pf_wait_http "http://$ADDR$path" "$secs" && { pids+=("$pid"); return 0; }
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        grep -q "$inuse" "$log" || return 1
    done
    return 1
}

# pf_counters_moved FIXTURES DEST: a copy of the trn1 fixture tree whose
# hardware counters moved since FIXTURES (tests/fakes/make_sysfs.sh) was
# read: 50 MB more sent on every NIC, rdmap18s27's
# retrans_timeout_events at 3 (--debug-counters-after DEST).
pf_counters_moved() {
    local d=$2/sys/class/infiniband dev f
    cp -a "$1/trn1.32xlarge" "$2" || return 1
    for dev in $(ls "$d"); do
        f=$d/$dev/ports/1/hw_counters/tx_bytes
        echo $(( $(cat "$f") + 50000000 )) >"$f"
    done
    echo 3 >"$d/rdmap18s27/ports/1/hw_counters/retrans_timeout_events"
}

# pf_fixtures: FX = the sysfs fixture trees (tests/fakes/make_sysfs.sh)
# built in the build folder B; FAKE = the fake libfabric there (make
# test-helpers); a tree that cannot be built ends the test (exit 1).
pf_fixtures() {
    case ${BUILD:-build} in /*) B=$BUILD ;; *) B=$root/${BUILD:-build} ;; esac
    FX=$B/fixtures/sysfs
    FAKE=$B/test-helpers/libfabric-fake.so.1
    "$root/tests/fakes/make_sysfs.sh" "$FX" || { echo "fixture build failed"; exit 1; }
}

# pf_need FILE: a test helper that must have been built (exit 1).
pf_need() { [ -r "$1" ] || { echo "missing $1 (make test-helpers)"; exit 1; }; }

# pf_field FILE PATH: the value at a dotted PATH of a JSON file ("None"
# for null).
pf_field() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[k]
print(d)' "$1" "$2"
}

# pf_agent SECONDS CMD...: CMD (the agent, or env ... and the agent) with
# --report $tmp/r.json (removed first), SECONDS at the most, stdout in
# $tmp/out and stderr in $tmp/err; rc = its exit code.
pf_agent() {
    local secs=$1
    shift
    rm -f "$tmp/r.json"
    timeout -k 5 "$secs" "$@" --report "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

# pf_check_said NAME: "status reason message" of check NAME in $tmp/r.json.
pf_check_said() {
    json "$tmp/r.json" "' '.join([c['status'] + ' ' + c['reason'] + ' ' + c['message'] for c in r['checks'] if c['name'] == '$1'])"
}

# pf_local WANT_RC WHAT ARGS...: `efa-preflight local ARGS`, 60 s at the
# most, stdout in $tmp/out and stderr in $tmp/err; fails, naming WHAT,
# unless it exits WANT_RC.
pf_local() {
    local want=$1 what=$2 rc
    shift 2
    timeout -k 5 60 "$bin" local "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "$what exited $rc, want $want"
}
