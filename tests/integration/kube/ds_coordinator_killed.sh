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
# must have moved to another holder (leaseTransitions counted). Real
# side: the chart's RBAC (daemonset), a DaemonSet owning the pods, tokens
# bound to them.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
N=4
if kube_fake; then WAIT=120; else WAIT=180; fi
kube_init $N --set mode=daemonset
ds_uid=$(kube_daemonset efa-preflight efa-preflight)

# ds_pod I NAME running|waiting: the DaemonSet's pod NAME on node-I, its
# container running (ready) or still being created (Pending); a token
# bound to it in $T/token-I. "running" on a pod that exists: its status.
ds_pod() {
    local i=$1 name=$2 state=$3 status
    status=$(python3 -c '
import json, sys, time
ip, waiting = sys.argv[1], sys.argv[2] == "waiting"
now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
st = {"waiting": {"reason": "ContainerCreating"}} if waiting else {"running": {"startedAt": now}}
print(json.dumps({"phase": "Pending" if waiting else "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                  "containerStatuses": [{"name": "agent", "image": "registry.invalid/efa-preflight", "imageID": "",
                                         "restartCount": 0, "ready": not waiting, "state": st}]}))' \
        "$(kube_pod_ip $((i + 1)))" "$state")
    local pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'$name'","namespace":"efa-preflight","labels":{"app.kubernetes.io/name":"efa-preflight","app.kubernetes.io/instance":"efa-preflight"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"efa-preflight","uid":"'$ds_uid'","controller":true}]},"spec":{"nodeName":"node-'$i'","serviceAccountName":"efa-preflight","automountServiceAccountToken":false,"containers":[{"name":"agent","image":"registry.invalid/efa-preflight"}]}'
    if kube_fake; then
        kube_post_objects "$pod,\"status\":$status}"
    else
        [ "$(kr_call GET "/api/v1/namespaces/efa-preflight/pods/$name" --status)" = 200 ] ||
            kr_ok POST /api/v1/namespaces/efa-preflight/pods --data "$pod}"
        kr_ok PATCH "/api/v1/namespaces/efa-preflight/pods/$name/status" \
            --ctype application/merge-patch+json --data "{\"status\":$status}"
    fi
    kube_token efa-preflight efa-preflight "$name" > "$T/token-$i"
}

for i in $(seq 0 $((N - 1))); do
    kube_node "node-$i" '{"efa-preflight.io/status":"pending","node.kubernetes.io/instance-type":"p5.48xlarge","topology.kubernetes.io/zone":"us-east-1a"}'
    ds_pod "$i" "efa-preflight-ds-$i" "$([ "$i" = 3 ] && echo waiting || echo running)"
done

declare -A pid
agent() {   # agent I POD
    kube_ds_agent "$1" "$2" "$2" -b 64K -e 256K -n 2 -w 1 --timeout 40 -vv
    pid[$2]=$KUBE_AGENT_PID
}

lease() {   # lease FIELD: the Lease's spec field, "" when none
    kube_state "$T/lease.json"
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
    { tail -n 20 "$T"/out/*.stderr; kube_die "no coordinator with 3 agents waiting after 10 s"; }
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
[ -n "$h" ] && [ "$h" != "$holder" ] || { tail -n 20 "$T"/out/*.stderr; kube_die "nobody took the Lease within 20 s of the kill"; }
took=$(kube_elapsed "$t_kill")
acquired=$(lease acquireTime)
transitions=$(lease leaseTransitions)
python3 - "$renewed" "$acquired" "$duration" <<'EOF' || kube_die "the Lease was taken before it expired"
import datetime, sys
f = lambda s: datetime.datetime.strptime(s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
gap = (f(sys.argv[2]) - f(sys.argv[1])).total_seconds()
print("new holder acquired %.2f s after the last renewal seen before the kill" % gap)
sys.exit(0 if gap >= int(sys.argv[3]) - 0.5 else 1)
EOF
echo "new coordinator ${h%_*} holds the Lease ${took}s after the kill (transitions $transitions)"
[ "$transitions" -ge 1 ] || kube_die "leaseTransitions $transitions, want >= 1"

# Only now does the DaemonSet controller replace the pod on node-$ci
# (until then its pod object stood: the agents could not tell its holder
# was dead and waited the record out; a holder whose pod is gone is taken
# over at once: test_k8s_ds_lease_trouble).
kube_delete_pod efa-preflight "$cpod"
ds_pod "$ci" "$cpod-b" running
agent "$ci" "$cpod-b"

# node-3's agent is up now.
ds_pod 3 efa-preflight-ds-3 running
agent 3 efa-preflight-ds-3

kube_wait_verdicts pending "$WAIT" "$T"/out/*.stderr
kube_check "$T/state.json" '
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
        { tail -n 20 "$T/out/$p.stderr"; kube_die "$p did not validate in a group of 2"; }
done
echo "all 4 nodes fabric=tested in groups of 2 (the replacement pod on node-$ci included); no error"
for p in "${!pid[@]}"; do
    [ "$p" = "$cpod" ] || kill -TERM "${pid[$p]}" 2>/dev/null
done
for p in "${!pid[@]}"; do
    [ "$p" = "$cpod" ] || wait "${pid[$p]}"
done
kube_no_token_in "$T/out"
echo "PASS"
