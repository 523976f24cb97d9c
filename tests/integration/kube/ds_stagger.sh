#!/bin/bash
# DaemonSet nodes turning pending at staggered times (the race the
# per-agent grouping lost: a node that turned pending while two others
# validated computed a group of 3 nobody joined, ended status=error with
# PeerTimeout, and yet read fabric=tested). Five p5 nodes, group size 2:
#   t0       node-0 and node-1 turn pending (their agent pods start)
#   as soon as they validate together: node-2 turns pending, node-3 one
#            second later: they must form the next group, not join the one
#            running
#   as soon as those two validate: node-4 turns pending and has nobody:
#            node checks alone, status=untested, fabric=untested, not an
#            error
# No node may end status=error or carry PeerTimeout; fabric=tested exactly
# where two nodes ran together; node-4 prints progress lines while it
# waits. PF_STAGGER_RUNS (default 1) repeats the whole scenario, each run
# on nodes, pods and a Lease made afresh; scripts/ds_race_loop.sh runs it
# 20 times in a row, each under the lock on its own. Real side: the
# chart's RBAC (daemonset), a DaemonSet owning the pods, tokens bound to
# them; the verdicts waited for longer.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
N=5
RUNS=${PF_STAGGER_RUNS:-1}
if kube_fake; then WAIT=120; else WAIT=180; fi
kube_init $N --set mode=daemonset
ds_uid=$(kube_daemonset efa-preflight efa-preflight)
NODE_LABELS='{"node.kubernetes.io/instance-type":"p5.48xlarge","topology.kubernetes.io/zone":"us-east-1a"}'

# fresh: every node, none pending yet; no agent pod, no Lease (the last
# run's gone).
fresh() {
    local i
    for i in $(seq 0 $((N - 1))); do
        if kube_fake; then
            pfk8s_http DELETE "/objects/Pod/efa-preflight/efa-preflight-ds-$i" >/dev/null
        elif [ "$run" -gt 1 ]; then
            kr_ok DELETE "/api/v1/namespaces/efa-preflight/pods/efa-preflight-ds-$i?gracePeriodSeconds=0"
            kr_ok DELETE "/api/v1/nodes/node-$i"
        fi
        kube_node "node-$i" "$NODE_LABELS"
    done
    if kube_fake; then
        pfk8s_http DELETE /objects/Lease/efa-preflight/efa-preflight-p5.48xlarge-us-east-1a >/dev/null
    elif [ "$run" -gt 1 ]; then
        kr_ok DELETE /apis/coordination.k8s.io/v1/namespaces/efa-preflight/leases/efa-preflight-p5.48xlarge-us-east-1a
    fi
}

# pending I: the node turns pending, the DaemonSet controller creates its
# pod (running, as the kubelet reports it), and the agent starts.
pending() {
    local i=$1
    kube_call PATCH "/api/v1/nodes/node-$i" --ctype application/merge-patch+json \
        --data '{"metadata":{"labels":{"efa-preflight.io/status":"pending"}}}' >/dev/null ||
        kube_die "node-$i: cannot label it pending"
    kube_pod '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"efa-preflight-ds-'$i'","namespace":"efa-preflight","labels":{"app.kubernetes.io/name":"efa-preflight","app.kubernetes.io/instance":"efa-preflight"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"efa-preflight","uid":"'$ds_uid'","controller":true}]},"spec":{"nodeName":"node-'$i'","serviceAccountName":"efa-preflight","automountServiceAccountToken":false,"containers":[{"name":"agent","image":"registry.invalid/efa-preflight"}]}}' \
        "$(kube_pod_ip $((i + 1)))"
    kube_token efa-preflight efa-preflight "efa-preflight-ds-$i" > "$T/token-$i"
    kube_ds_agent "$i" "efa-preflight-ds-$i" "r$run-$i" -b 64K -e 8M -n 8 -w 2 --timeout 40 -vv \
        --progress-interval 2
    pids="$pids $KUBE_AGENT_PID"
}

grouped() {   # grouped I: the agent has its group (bounded wait, 30 s)
    local t
    for t in $(seq 1 300); do
        grep -q "daemonset: group of" "$T/out/r$run-$1.stderr" 2>/dev/null && return 0
        sleep 0.1
    done
    tail -n 30 "$T/out/r$run-$1.stderr"
    kube_die "run $run: agent $1 got no group within 30 s"
}

still_pending() {   # still_pending I: node-I has no result label yet
    kube_state "$T/now.json"
    python3 -c "
import json, sys; s = json.load(open('$T/now.json'))
n = next(x for x in s['nodes'] if x['metadata']['name'] == 'node-$1')
sys.exit(0 if n['metadata']['labels'].get('efa-preflight.io/status') == 'pending' else 1)"
}

start_all=$(date +%s.%N)
for run in $(seq 1 "$RUNS"); do
    t_run=$(date +%s.%N)
    fresh
    pids=""
    pending 0
    pending 1
    grouped 0
    # The race: node-2 turns pending while node-0 and node-1 validate.
    still_pending 0 || kube_die "run $run: node-0 finished before node-2 came; the race was not reached"
    pending 2
    sleep 1
    pending 3
    grouped 2
    still_pending 2 || kube_die "run $run: node-2 finished before node-4 came"
    pending 4

    echo "run $run: waiting for every node's result"
    kube_wait_verdicts pending "$WAIT" "$T"/out/r$run-*.stderr
    # The Lease is released by agents that race the last verdict: wait for
    # the release (15 s).
    for t in $(seq 1 30); do
        python3 -c "
import json, sys; s = json.load(open('$T/state.json'))
sys.exit(0 if len(s['leases']) == 1 and s['leases'][0]['spec'].get('holderIdentity', '') == '' else 1)" && break
        sleep 0.5
        kube_state "$T/state.json"
    done

    kube_check "$T/state.json" '
for i in range(5):
    n = "node-%d" % i
    l = labels(n)
    # node-4 has no partner left: its own word, which a status in
    # (pass,warn) selector does not admit
    assert l["efa-preflight.io/status"] == ("untested" if i == 4 else "warn"), (n, l)
    f = cond(n, "EFAFabricReady")
    assert f["reason"] != "PeerTimeout", (n, f)
    if i < 4:
        assert l["efa-preflight.io/fabric"] == "tested", (n, l)
        assert "efa-preflight.io/busbw-gbps" in l, (n, l)
    else:
        assert l["efa-preflight.io/fabric"] == "untested", (n, l)
        assert f["status"] == "Unknown" and f["reason"] == "FabricUntested", f
lease = s["leases"][0]
assert len(s["leases"]) == 1, s["leases"]
assert lease["spec"].get("holderIdentity", "") == "", lease
assert lease["spec"]["leaseTransitions"] >= 2, lease
' || exit 1
    group_of() { grep -o "daemonset: group of [0-9]*, rank [0-9]*, rank 0 on node-[0-9]" \
                 "$T/out/r$run-$1.stderr" | sed 's/, rank [0-9]*, / /'; }
    for i in 0 1; do
        [ "$(group_of $i)" = "daemonset: group of 2 rank 0 on node-0" ] ||
            kube_die "run $run: node-$i: '$(group_of $i)', want the first pair"
    done
    for i in 2 3; do
        [ "$(group_of $i)" = "daemonset: group of 2 rank 0 on node-2" ] ||
            kube_die "run $run: node-$i: '$(group_of $i)', want the second pair"
    done
    [ "$(group_of 4)" = "daemonset: group of 1 rank 0 on node-4" ] ||
        kube_die "run $run: node-4: '$(group_of 4)', want alone"
    # node-4 coordinated alone for seconds (until no pending node was left
    # to wait for): it said so meanwhile.
    n=$(grep -c 'progress: waiting for a group: coordinating: 1 agent(s) registered, [0-9]* more node(s) expected' "$T/out/r$run-4.stderr")
    [ "$n" -ge 1 ] || { tail -n 20 "$T/out/r$run-4.stderr"; kube_die "run $run: node-4 printed no progress line while it waited alone"; }
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    for p in $pids; do wait "$p"; done
    echo "run $run: {0,1} then {2,3} (turned pending while {0,1} validated), then 4 alone (untested, $n progress line(s) while it waited); no error, no PeerTimeout; $(kube_elapsed "$t_run")s"
done
echo "$RUNS run(s) in a row in $(kube_elapsed "$start_all")s"
kube_no_token_in "$T/out"
echo "PASS"
