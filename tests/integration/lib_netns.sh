# Network namespaces joined by a bridge, one per rank, for multi-rank tests.
# Source it, then: pfb_setup N; pfb_start R ARGS... (background agent in
# rank R's namespace, log in $PFB_TMP/rR.log, report in $PFB_TMP/rR.json);
# pfb_wait R (sets PFB_RC, PFB_SECS and PFB_END). Everything is named pfb1-* and
# lives in 10.254.1.0/24 (PFB_PREFIX and PFB_NET, such as pfb2- and
# 10.254.2, move it aside); the EXIT trap always removes it. Tests of
# several checkouts that share a prefix take turns (pfb_lock). Tests use
# ports 30000-30999 only (each namespace has its own).
PFB_PREFIX=${PFB_PREFIX:-pfb1-}
PFB_BRIDGE=${PFB_PREFIX}br
PFB_NET=${PFB_NET:-10.254.1}
PFB_TMP=$(mktemp -d)
declare -a PFB_PID PFB_T0

pfb_need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "skip: network namespaces need root"
        exit 77
    fi
    command -v ip >/dev/null || { echo "skip: iproute2 is not installed"; exit 77; }
}

# pfb_test PREFIX NET: the start of a namespace test: its own names (such
# as pfbl-) and subnet (such as 10.254.62), root or a skip.
pfb_test() {
    PFB_PREFIX=$1
    PFB_BRIDGE=${1}br
    PFB_NET=$2
    pfb_need_root
}

# fail MESSAGE: FAIL and why, the last stderr lines of the ranks in
# PFB_SHOW (default: every rank of the last pfb_setup), exit 1.
PFB_N=0
fail() {
    local r
    echo "FAIL $*"
    for r in ${PFB_SHOW:-$(seq 0 $((PFB_N - 1)))}; do pfb_show "$r"; done
    exit 1
}

pfb_ns() { echo "${PFB_PREFIX}ns$1"; }
pfb_addr() { echo "$PFB_NET.$((10 + $1))"; }

# host:port of every rank, rank order.
pfb_peers() {
    local n=$1 port=$2 i out=""
    for ((i = 0; i < n; i++)); do
        out+="${out:+,}$(pfb_addr $i):$port"
    done
    echo "$out"
}

pfb_cleanup() {
    local ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PFB_PREFIX"); do
        # Only our own agents can live in our namespaces.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -9 "$pid" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^$PFB_PREFIX"); do
        ip link del "$link" 2>/dev/null
    done
}

# pfb_lock: names are fixed per prefix, so one test at a time may use a
# prefix on this machine, even when the test runs of several checkouts
# overlap (pfb_cleanup would remove the other's namespaces and kill its
# agents). pfb_setup takes it; it is held until the test exits.
PFB_LOCKED=
pfb_lock() {
    local lock=/tmp/pf-netns-${PFB_PREFIX%-}.lock
    [ -n "$PFB_LOCKED" ] && return 0
    exec 8>"$lock"
    flock -w 240 8 || { echo "skip: another test held $lock for 240 s"; exit 77; }
    PFB_LOCKED=1
}

pfb_exit() {
    # Without the lock the namespaces there may be another test's.
    [ -n "$PFB_LOCKED" ] && pfb_cleanup
    rm -rf "$PFB_TMP"
}
trap pfb_exit EXIT
trap 'exit 130' INT TERM

pfb_setup() {
    local n=$1 i ns
    PFB_N=$n
    pfb_lock
    pfb_cleanup
    ip link add "$PFB_BRIDGE" type bridge || return 1
    ip link set "$PFB_BRIDGE" up || return 1
    for ((i = 0; i < n; i++)); do
        ns=$(pfb_ns $i)
        ip netns add "$ns" || return 1
        ip link add "${PFB_PREFIX}v$i" type veth peer name "${PFB_PREFIX}p$i" || return 1
        ip link set "${PFB_PREFIX}p$i" netns "$ns" || return 1
        ip -n "$ns" addr add "$(pfb_addr $i)/24" dev "${PFB_PREFIX}p$i" || return 1
        ip -n "$ns" link set "${PFB_PREFIX}p$i" up || return 1
        ip -n "$ns" link set lo up || return 1
        ip link set "${PFB_PREFIX}v$i" master "$PFB_BRIDGE" || return 1
        ip link set "${PFB_PREFIX}v$i" up || return 1
    done
    # No STP on the bridge: it forwards at once; the agents retry their
    # connects anyway.
}

# pfb_start RANK ARGS...: the agent in RANK's namespace, in the background.
# Its exit code and exit time are written as it ends, so pfb_wait measures
# when the agent finished, not when the test got round to asking.
pfb_start() {
    local r=$1
    shift
    rm -f "$PFB_TMP/r$r.pid" "$PFB_TMP/r$r.rc" "$PFB_TMP/r$r.end"
    PFB_T0[$r]=$(date +%s.%N)
    (
        ip netns exec "$(pfb_ns "$r")" "$PF_BIN" "$@" --report "$PFB_TMP/r$r.json" \
            >"$PFB_TMP/r$r.out" 2>"$PFB_TMP/r$r.log" &
        echo $! >"$PFB_TMP/r$r.pid"
        wait $!
        echo $? >"$PFB_TMP/r$r.rc"
        date +%s.%N >"$PFB_TMP/r$r.end"
    ) &
    PFB_PID[$r]=$!
}

# pfb_agent_pid RANK: the agent's own pid (ip netns exec execs it).
pfb_agent_pid() {
    local i
    for ((i = 0; i < 50; i++)); do
        [ -s "$PFB_TMP/r$1.pid" ] && { cat "$PFB_TMP/r$1.pid"; return 0; }
        sleep 0.1
    done
    return 1
}

# pfb_wait RANK: PFB_RC = its exit code, PFB_SECS = seconds from its start
# to its exit, PFB_END = when it exited (epoch seconds).
pfb_wait() {
    local r=$1
    wait "${PFB_PID[$r]}"
    PFB_RC=$(cat "$PFB_TMP/r$r.rc" 2>/dev/null || echo 255)
    PFB_END=$(cat "$PFB_TMP/r$r.end" 2>/dev/null || date +%s.%N)
    PFB_SECS=$(python3 -c "print(round($PFB_END - ${PFB_T0[$r]}, 2))")
}

# pfb_json RANK EXPR: a value from rank RANK's report (Python expression on r).
pfb_json() {
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" \
        "$PFB_TMP/r$1.json" 2>/dev/null
}

pfb_show() {
    local r=$1
    echo "--- rank $r stderr (last 15 lines)"
    tail -n 15 "$PFB_TMP/r$r.log" 2>/dev/null
}

# No log or report of an earlier case may be read as this one's.
pfb_fresh() { rm -f "$PFB_TMP"/r*.log "$PFB_TMP"/r*.json "$PFB_TMP"/r*.out; }

# pfb_check RANK NAME FIELD: FIELD of rank RANK's check NAME.
pfb_check() {
    pfb_json "$1" "[c['$3'] for c in r['checks'] if c['name'] == '$2'][0]"
}

# pfb_qdisc RANK QDISC...: QDISC on everything rank RANK sends; a kernel
# that cannot is a skip.
pfb_qdisc() {
    local r=$1 out
    shift
    out=$(ip netns exec "$(pfb_ns "$r")" tc qdisc add dev "${PFB_PREFIX}p$r" \
        root "$@" 2>&1) && return 0
    echo "skip: this kernel cannot slow a link with 'tc qdisc add ... root $*': $out"
    exit 77
}

# pfb_ring_start N PORT ARGS...: ranks 0 to N-1, one per namespace, with
# `run --bootstrap static --peers <all N on PORT> --rank R ARGS`. With
# PFB_RANK_GPU=1 rank R sees GPU R of the double only.
pfb_ring_start() {
    local n=$1 port=$2 r peers
    shift 2
    peers=$(pfb_peers "$n" "$port")
    for ((r = 0; r < n; r++)); do
        if [ "${PFB_RANK_GPU:-0}" = 1 ]; then
            CUDA_VISIBLE_DEVICES=$r pfb_start $r run --bootstrap static \
                --peers "$peers" --rank $r "$@"
        else
            pfb_start $r run --bootstrap static --peers "$peers" --rank $r "$@"
        fi
    done
}

# pfb_ring_wait N: every rank's end. RC_<r> = rank r's exit code,
# PFB_ENDS[r] = when it ended (epoch seconds), PFB_LAST = the last of
# those, PFB_TOOK = the most seconds any rank took.
pfb_ring_wait() {
    local n=$1 r
    PFB_ENDS=()
    PFB_LAST=0
    PFB_TOOK=0
    for ((r = 0; r < n; r++)); do
        pfb_wait $r
        eval "RC_$r=$PFB_RC"
        PFB_ENDS[r]=$PFB_END
        PFB_LAST=$(python3 -c "print(max($PFB_LAST, $PFB_END))")
        PFB_TOOK=$(python3 -c "print(max($PFB_TOOK, $PFB_SECS))")
    done
}

# pfb_ring N PORT ARGS...: N fresh namespaces, the ranks started
# (pfb_ring_start) and waited for (pfb_ring_wait).
pfb_ring() {
    pfb_setup "$1" || fail "cannot build $1 namespaces"
    pfb_fresh
    pfb_ring_start "$@"
    pfb_ring_wait "$1"
}

# pfb_await_log SECONDS PATTERN RANK...: until every RANK's stderr holds
# PATTERN (grep), SECONDS at the most; 1 when one never did.
pfb_await_log() {
    local tenths=$(($1 * 10)) pat=$2 i r missing
    shift 2
    for ((i = 0; i <= tenths; i++)); do
        missing=
        for r in "$@"; do
            grep -q "$pat" "$PFB_TMP/r$r.log" 2>/dev/null || { missing=1; break; }
        done
        [ -z "$missing" ] && return 0
        [ $i -lt $tenths ] && sleep 0.1
    done
    return 1
}

# pfb_signal RANK SIGNAL: the signal to rank RANK's agent (checked to be
# the agent); PFB_VICTIM = its pid, PFB_SIGNALLED = when (epoch seconds).
pfb_signal() {
    PFB_VICTIM=$(pfb_agent_pid "$1") || fail "rank $1 has no pid"
    [ "$(cat /proc/"$PFB_VICTIM"/comm)" = efa-preflight ] ||
        fail "rank $1's pid is not the agent"
    kill -"$2" "$PFB_VICTIM"
    PFB_SIGNALLED=$(date +%s.%N)
}

# pfb_wait_after RANK SINCE WANT_RC MAX_S WHAT: waits for rank RANK, which
# must exit WANT_RC within MAX_S seconds of SINCE (epoch seconds);
# PFB_AFTER = the seconds it took from SINCE. WHAT ends the messages.
pfb_wait_after() {
    local r=$1 since=$2 want=$3 max=$4 what=$5
    pfb_wait "$r"
    PFB_AFTER=$(python3 -c "print(round($PFB_END - $since, 2))")
    [ "$PFB_RC" -eq "$want" ] || fail "rank $r exited $PFB_RC after $what, want $want"
    python3 -c "import sys; sys.exit(0 if $PFB_AFTER <= $max else 1)" ||
        fail "rank $r needed $PFB_AFTER s after $what, more than $max s"
}

# pfb_error_is RANK REASON: rank RANK's collective error and verdict are
# REASON; PFB_MSG = the error's message.
pfb_error_is() {
    [ "$(pfb_json "$1" 'r["collective"]["error"]["reason"]')" = "$2" ] ||
        fail "rank $1: collective.error.reason is not $2"
    [ "$(pfb_json "$1" 'r["verdict"]["reason"]')" = "$2" ] ||
        fail "rank $1: verdict.reason is $(pfb_json "$1" 'r["verdict"]["reason"]'), not $2"
    PFB_MSG=$(pfb_json "$1" 'r["collective"]["error"]["message"]')
}
