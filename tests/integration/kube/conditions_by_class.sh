#!/bin/bash
# Conditions by class, one status word everywhere (k8s bootstrap, host
# engine over tcp on loopback, --taint-on-failure on; real side: the
# chart's RBAC (initcontainer), tokens bound to the pods).
#  1. A group failure: 2 JobSet pods whose ring misses a floor nobody can
#     reach (--min-busbw-gbps 100000); no node is singled out. Both exit 1,
#     BandwidthBelowThreshold, class group: each Node gets status=error and
#     EFAFabricReady=Unknown/BandwidthBelowThreshold (never False: nothing
#     was proven on it), no taint; the report says verdict.status "error"
#     and conditions.EFAFabricReady "unknown", the metric
#     efa_preflight_status{status="error"} 1, `history` "error".
#  2. A PeerLost survivor: 2 pods, rank 1 SIGKILLed mid-sweep. Rank 0 exits
#     3 (PeerLost, infrastructure): its Node gets status=error and
#     EFAFabricReady=Unknown/PeerLost, no taint, and the report, metric and
#     history say "error" too.
# (A usage error, RendezvousPortInUse, is test_k8s_port_in_use.)
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_jobset 0:127.0.0.1 1:127.0.0.1

start_agent() {   # start_agent INDEX OUTNAME EXTRA-ARGS...: sets AGENT_PID
    local i=$1 out=$2
    shift 2
    mkdir -p "$T/hist-$out"
    "$PF_BIN" run --api-server "$KUBE_API" \
        --token-file "$T/token-$i" --ca-file "$KUBE_CA" --no-imds \
        --pod-name "train-workers-$i-0-p$i" --namespace ml \
        --port "$KUBE_RDV_PORT" --fabric-provider tcp --engine host \
        --taint-on-failure --report "$T/out/$out.json" \
        --metrics-textfile "$T/out/$out.prom" --history-dir "$T/hist-$out" \
        --log-level info "$@" \
        > "$T/out/$out.stdout" 2> "$T/out/$out.stderr" &
    AGENT_PID=$!
}

# The same word in the report, the metric and `history`; the report's
# EFAFabricReady as given.
words_agree() {   # words_agree OUTNAME WORD REPORT-CONDITION REASON
    local out=$1 word=$2 cond=$3 reason=$4 got
    python3 - "$T/out/$out.json" "$word" "$cond" "$reason" <<'PY' ||
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["status"] == sys.argv[2], ("report verdict.status", v)
assert v["conditions"]["EFAFabricReady"] == sys.argv[3], ("report condition", v)
# tcp: the node checks are skipped (EFANotRequired); never a fail
assert v["conditions"]["EFADevicesReady"] != "fail", ("devices", v)
assert v["reason"] == sys.argv[4], ("report reason", v)
PY
        { cat "$T/out/$out.json"; kube_die "$out: the report does not say $word / $cond / $reason"; }
    grep -qE "^efa_preflight_status\{(node=\"[^\"]*\",)?status=\"$word\"\} 1$" "$T/out/$out.prom" ||
        { grep efa_preflight_status "$T/out/$out.prom"; kube_die "$out: the metric does not say $word"; }
    [ "$(grep -c '^efa_preflight_status{.*} 1$' "$T/out/$out.prom")" = 1 ] ||
        kube_die "$out: the status metric is not one-hot"
    got=$("$PF_BIN" history --history-dir "$T/hist-$out" --json |
          python3 -c 'import json,sys; a=json.load(sys.stdin); print(len(a), a[0]["status"])') ||
        kube_die "$out: history --json failed"
    [ "$got" = "1 $word" ] || kube_die "$out: history says '$got', want '1 $word'"
}

# ---------------------------------------------------------------- 1. group
start_agent 0 g0 -b 64K -e 256K -n 2 -w 1 --timeout 30 --min-busbw-gbps 100000; p0=$AGENT_PID
start_agent 1 g1 -b 64K -e 256K -n 2 -w 1 --timeout 30 --min-busbw-gbps 100000; p1=$AGENT_PID
wait $p0; rc0=$?
wait $p1; rc1=$?
for r in "0 $rc0" "1 $rc1"; do
    set -- $r
    [ "$2" = 1 ] || { cat "$T/out/g$1.stderr" "$T/out/g$1.stdout"; kube_die "group: rank $1 exit $2, want 1"; }
    python3 - "$T/out/g$1.json" <<'PY' || { cat "$T/out/g$1.json"; kube_die "group: rank $1 is not a group failure"; }
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["class"] == "group" and v["reason"] == "BandwidthBelowThreshold", v
PY
    words_agree "g$1" error unknown BandwidthBelowThreshold
done
kube_state "$T/state.json"
kube_check "$T/state.json" '
for n in ("node-0", "node-1"):
    l = labels(n)
    assert l["efa-preflight.io/status"] == "error", (n, l)
    c = cond(n, "EFAFabricReady")
    assert c and c["status"] == "Unknown" and c["reason"] == "BandwidthBelowThreshold", (n, c)
    d = cond(n, "EFADevicesReady")
    assert d and d["status"] != "False", (n, d)
    assert [t["key"] for t in node(n)["spec"]["taints"]] == ["nvidia.com/gpu"], node(n)["spec"]
print("group failure: both nodes status=error, EFAFabricReady=Unknown/BandwidthBelowThreshold, EFADevicesReady not False, no taint")
'
echo "ok   group failure: exit 1 on both, report/metric/history say error, the report's EFAFabricReady unknown"

# ----------------------------------------------------- 2. a PeerLost survivor
# Rank 0 slowed so the sweep lasts; rank 1 killed once it is under way.
start_agent 0 l0 -b 64K -e 1M -n 20 -w 5 --timeout 60 --debug-slow-rank 0 --debug-slow-ms 100; p0=$AGENT_PID
start_agent 1 l1 -b 64K -e 1M -n 20 -w 5 --timeout 60 --debug-slow-rank 0 --debug-slow-ms 100; p1=$AGENT_PID
for ((i = 0; i < 200; i++)); do
    n=$(grep -l "host engine: provider" "$T/out/l0.stderr" "$T/out/l1.stderr" 2>/dev/null | wc -l)
    [ "$n" -eq 2 ] && break
    sleep 0.1
done
[ "$n" -eq 2 ] || { cat "$T/out/l0.stderr" "$T/out/l1.stderr"; kube_die "the sweep did not start on both ranks within 20 s"; }
[ "$(cat /proc/$p1/comm)" = efa-preflight ] || kube_die "rank 1's pid is not the agent"
sleep 1
kill -9 "$p1"
killed=$(date +%s.%N)
wait $p1
wait $p0; rc0=$?
secs=$(kube_elapsed "$killed")
[ "$rc0" = 3 ] || { cat "$T/out/l0.stderr" "$T/out/l0.stdout"; kube_die "survivor: exit $rc0, want 3"; }
awk -v e="$secs" 'BEGIN { exit !(e <= 20) }' || kube_die "survivor needed ${secs}s after the kill"
words_agree l0 error unknown PeerLost
kube_state "$T/state.json"
kube_check "$T/state.json" '
l = labels("node-0")
assert l["efa-preflight.io/status"] == "error", l
c = cond("node-0", "EFAFabricReady")
assert c and c["status"] == "Unknown" and c["reason"] == "PeerLost", c
assert "rank 1" in c["message"], c["message"]
assert [t["key"] for t in node("node-0")["spec"]["taints"]] == ["nvidia.com/gpu"], node("node-0")["spec"]
ev = [e for e in events("node-0") if e["reason"] == "PeerLost"]
assert len(ev) == 1 and ev[0]["message"].startswith("error: "), ev
print("PeerLost survivor: node-0 status=error, EFAFabricReady=Unknown/PeerLost, Event \"error: ...\", no taint")
'
echo "ok   PeerLost survivor: exit 3 ${secs}s after the kill, report/metric/history say error, EFAFabricReady Unknown"
kube_reports_valid "$T"/out/*.json
kube_no_token_in "$T/out"
echo "PASS"
