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
