#!/bin/bash
# The DaemonSet coordinator dies mid-grouping. Four p5 nodes pending, group
# size 2; the agents of node-0..2 run, node-3's pod is still being created,
# so the coordinator waits for it. Once two agents have registered with it,
# the coordinator's process is killed (SIGKILL: no release of its Lease).
# Its pod object stays for now, so the agents that were registered notice
# the dead connection, and one of them takes the Lease only after the dead
# holder's record stayed unchanged for leaseDurationSeconds (client-go's
# rule, on their own clock). Then the DaemonSet controller's part is
# played: the pod is deleted and a new one starts on the same node. Then node-3's agent starts. All four nodes
# must end fabric=tested in groups of 2, none status=error, and the Lease
# must have moved to another holder (leaseTransitions counted).
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
pfk8s_init
T=$PFK8S_TMP
N=4

pfk8s_netns_up $N
pfk8s_ds_objects "$T/objects.json" 4 pending waiting:3 now
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json"
pfk8s_netns_check

declare -A pid
agent() {   # agent I POD
    kube_ds_agent "$1" "$2" "$2" -b 64K -e 256K -n 2 -w 1 --timeout 40 -vv
    pid[$2]=$KUBE_AGENT_PID
}

lease() {   # lease FIELD: the Lease's spec field, "" when none
    pfk8s_state "$T/lease.json"
    python3 -c "
import json; s = json.load(open('$T/lease.json'))
print(s['leases'][0]['spec'].get('$1', '') if s['leases'] else '')"
}

for i in 0 1 2; do agent $i "efa-preflight-ds-$i"; done

# Until the coordinator has two agents registered besides itself.
holder=""
for t in $(seq 1 100); do
    holder=$(lease holderIdentity)
    if [ -n "$holder" ]; then
        cpod=${holder%_*}
        grep -q "registered, 3 waiting" "$T/out/$cpod.stderr" 2>/dev/null && break
    fi
    sleep 0.1
done
grep -q "registered, 3 waiting" "$T/out/$cpod.stderr" ||
    { tail -n 20 "$T"/out/*.stderr; pfk8s_die "no coordinator with 3 agents waiting after 10 s"; }
renewed=$(lease renewTime)
duration=$(lease leaseDurationSeconds)
ci=${cpod##*-}
kill -KILL "${pid[$cpod]}"
wait "${pid[$cpod]}" 2>/dev/null
t_kill=$(date +%s.%N)
echo "killed coordinator $cpod (node-$ci) with 3 agents waiting; its Lease last renewed $renewed, duration ${duration}s"

# A new holder, after the dead one's record aged leaseDurationSeconds.
for t in $(seq 1 200); do
    h=$(lease holderIdentity)
    [ -n "$h" ] && [ "$h" != "$holder" ] && break
    sleep 0.1
done
[ -n "$h" ] && [ "$h" != "$holder" ] || { tail -n 20 "$T"/out/*.stderr; pfk8s_die "nobody took the Lease within 20 s of the kill"; }
took=$(pfk8s_elapsed "$t_kill")
acquired=$(lease acquireTime)
transitions=$(lease leaseTransitions)
python3 - "$renewed" "$acquired" "$duration" <<'EOF' || pfk8s_die "the Lease was taken before it expired"
import datetime, sys
f = lambda s: datetime.datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
gap = (f(sys.argv[2]) - f(sys.argv[1])).total_seconds()
print("new holder acquired %.2f s after the last renewal seen before the kill" % gap)
sys.exit(0 if gap >= int(sys.argv[3]) - 0.5 else 1)
EOF
echo "new coordinator ${h%_*} holds the Lease ${took}s after the kill (transitions $transitions)"
[ "$transitions" -ge 1 ] || pfk8s_die "leaseTransitions $transitions, want >= 1"

# Only now does the DaemonSet controller replace the pod on node-$ci
# (until then its pod object stood: the agents could not tell its holder
# was dead and waited the record out; a holder whose pod is gone is taken
# over at once: test_k8s_ds_lease_trouble).
pfk8s_http DELETE "/objects/Pod/efa-preflight/$cpod" >/dev/null
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
pfk8s_admin POST /objects "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"$cpod-b\",
 \"namespace\":\"efa-preflight\",\"labels\":{\"app.kubernetes.io/name\":\"efa-preflight\",
 \"app.kubernetes.io/instance\":\"efa-preflight\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"efa-preflight\"}]},
 \"spec\":{\"nodeName\":\"node-$ci\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.254.40.$((11 + ci))\",
 \"containerStatuses\":[{\"name\":\"preflight\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"$now\"}}}]}}"
agent "$ci" "$cpod-b"

# node-3's agent is up now.
pfk8s_admin POST /objects "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"efa-preflight-ds-3\",
 \"namespace\":\"efa-preflight\",\"labels\":{\"app.kubernetes.io/name\":\"efa-preflight\",
 \"app.kubernetes.io/instance\":\"efa-preflight\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"efa-preflight\"}]},
 \"spec\":{\"nodeName\":\"node-3\"},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.254.40.14\",
 \"containerStatuses\":[{\"name\":\"preflight\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"$now\"}}}]}}"
agent 3 efa-preflight-ds-3

kube_wait_verdicts pending 120 "$T"/out/*.stderr
pfk8s_check "$T/state.json" '
for i in range(4):
    n = "node-%d" % i
    l = labels(n)
    assert l["efa-preflight.io/status"] == "warn", (n, l)   # tcp stands in for EFA
    assert l["efa-preflight.io/fabric"] == "tested", (n, l)
    f = cond(n, "EFAFabricReady")
    assert f["status"] == "True" and f["reason"] == "ProviderFallback", (n, f)
' || exit 1
for p in "${!pid[@]}"; do
    [ "$p" = "$cpod" ] && continue
    grep -q "daemonset: group of 2" "$T/out/$p.stderr" ||
        { tail -n 20 "$T/out/$p.stderr"; pfk8s_die "$p did not validate in a group of 2"; }
done
echo "all 4 nodes fabric=tested in groups of 2 (the replacement pod on node-$ci included); no error"
for p in "${!pid[@]}"; do
    [ "$p" = "$cpod" ] || kill -TERM "${pid[$p]}" 2>/dev/null
done
for p in "${!pid[@]}"; do
    [ "$p" = "$cpod" ] || wait "${pid[$p]}"
done
pfk8s_no_token_in "$T/out"
echo "PASS"
