#!/bin/bash
# DaemonSet mode when the pool's Lease misbehaves. Four pending p5 nodes
# that can pair (group size 2), each agent in its own network namespace:
#   A  the Lease is held by a dead holder (its pod is gone) that claims
#      leaseDurationSeconds 3600: the agents take it over at once (warn),
#      pair, and all four end fabric=tested;
#   B  every Lease write answers 409;
#   C  every Lease read answers 500:
#      no group can form, and the pool has partners, so no node leaves
#      pending: each keeps status=pending with no verdict label,
#      EFAFabricReady says GroupNotFormed, the agent warns about the Lease
#      and exits 3 (to be started again by the kubelet). Never
#      status=warn/pass with fabric=untested.
#   C' the 500s stop and the agents start again: they pair, fabric=tested.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
pfk8s_init
T=$PFK8S_TMP
N=4
LEASE=efa-preflight-p5.48xlarge-us-east-1a

pfk8s_netns_up $N
pfk8s_ds_objects "$T/objects.json" 4 pending running 2025-12-01T00:00:00Z
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json"
pfk8s_netns_check

declare -A pid
start_all() {   # start_all TAG TIMEOUT
    local i
    for i in $(seq 0 $((N - 1))); do
        kube_ds_agent "$i" "efa-preflight-ds-$i" "$1-$i" -b 64K -e 64K -n 1 -w 0 --timeout "$2" -v
        pid[$i]=$KUBE_AGENT_PID
    done
}
stop_all() {
    local i
    for i in $(seq 0 $((N - 1))); do kill -TERM "${pid[$i]}" 2>/dev/null; done
    for i in $(seq 0 $((N - 1))); do wait "${pid[$i]}" 2>/dev/null; done
}
reset() {   # every node pending again, no Lease
    pfk8s_admin POST /objects "$(cat "$T/objects.json.nodes")"
    pfk8s_admin DELETE "/objects/Lease/efa-preflight/$LEASE"
}
wait_left_pending() {   # wait_left_pending TAG: every node has a result
    echo "$1: waiting for every node's result"
    kube_wait_verdicts pending 120 "$T"/out/"$1"-*.stderr
}
all_tested() {   # all_tested TAG
    pfk8s_check "$T/state.json" '
for i in range(4):
    l = labels("node-%d" % i)
    assert l["efa-preflight.io/status"] == "warn", (i, l)    # tcp stands in for EFA
    assert l["efa-preflight.io/fabric"] == "tested", (i, l)
    assert "efa-preflight.io/busbw-gbps" in l, (i, l)
'
}
# wait_exit TAG: every agent exits by itself (it must not idle), with 3.
wait_exit() {
    local i t rc
    for i in $(seq 0 $((N - 1))); do
        for t in $(seq 1 120); do
            kill -0 "${pid[$i]}" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "${pid[$i]}" 2>/dev/null && { stop_all; pfk8s_die "$1: agent $i did not exit (it idles on a pending node)"; }
        wait "${pid[$i]}"; rc=$?
        [ $rc -eq 3 ] || { tail -n 20 "$T/out/$1-$i.stderr"; pfk8s_die "$1: agent $i exited $rc, want 3"; }
    done
}
still_pending() {   # still_pending TAG WARNING_REGEX
    pfk8s_state "$T/state.json"
    pfk8s_check "$T/state.json" '
for i, n, l in node_rows(4):
    assert l["efa-preflight.io/status"] == "pending", (n, l)
    for k in ("fabric", "busbw-gbps", "validated-at", "valid-until", "valid-until-epoch"):
        assert "efa-preflight.io/" + k not in l, (n, k, l)
    f = cond(n, "EFAFabricReady")
    assert f["reason"] == "GroupNotFormed" and f["status"] != "True", (n, f)
    assert "pending" in f["message"], f
    ev = events(n)[-1]
    assert ev["type"] == "Warning" and ev["reason"] == "GroupNotFormed", ev
'
    for i in $(seq 0 $((N - 1))); do
        grep -Eq "warn: daemonset: $2" "$T/out/$1-$i.stderr" ||
            { tail -n 20 "$T/out/$1-$i.stderr"; pfk8s_die "$1: agent $i did not warn about the Lease ('$2')"; }
        grep -q "warn: daemonset: .*the node stays pending" "$T/out/$1-$i.stderr" ||
            { tail -n 20 "$T/out/$1-$i.stderr"; pfk8s_die "$1: agent $i did not warn that the node stays pending"; }
    done
}

# A. A dead holder's Lease claiming an hour.
now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
pfk8s_admin POST /objects "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\",
 \"metadata\":{\"name\":\"$LEASE\",\"namespace\":\"efa-preflight\"},
 \"spec\":{\"holderIdentity\":\"efa-preflight-ds-old_00112233aabbccdd\",\"leaseDurationSeconds\":3600,
  \"acquireTime\":\"$now\",\"renewTime\":\"$now\",\"leaseTransitions\":0}}"
t0=$(date +%s.%N)
start_all A 30
wait_left_pending A
all_tested A
echo "A: dead holder (3600 s, pod gone): all 4 nodes fabric=tested after $(pfk8s_elapsed "$t0") s"
pfk8s_check "$T/state.json" '
x = s["leases"][0]
assert x["spec"]["holderIdentity"] != "efa-preflight-ds-old_00112233aabbccdd", x
assert x["spec"]["leaseTransitions"] >= 1, x
'
grep -h "warn: daemonset: lease efa-preflight/$LEASE is held by efa-preflight-ds-old_00112233aabbccdd: coordinator pod efa-preflight-ds-old is gone; taking it over" \
    "$T"/out/A-*.stderr | head -1 | grep -q . || { tail -n 20 "$T"/out/A-*.stderr; pfk8s_die "A: no warning about the dead holder"; }
stop_all

# B. 409 on every Lease write.
reset
pfk8s_admin POST /faults '[{"method": "PUT", "path": "/leases/", "status": 409, "count": 1000000},
                           {"method": "POST", "path": "/leases$", "status": 409, "count": 1000000}]'
t0=$(date +%s.%N)
start_all B 20
wait_exit B
still_pending B "lease efa-preflight/$LEASE: [0-9]+ writes in a row lost to a conflict \(409\)"
echo "B: 409 on every Lease write: all 4 still pending (GroupNotFormed), agents exited 3 after $(pfk8s_elapsed "$t0") s"

# C. 500 on every Lease read.
reset
pfk8s_admin POST /faults '[{"method": "GET", "path": "/leases/", "status": 500, "count": 1000000}]'
t0=$(date +%s.%N)
start_all C 20
wait_exit C
still_pending C "lease efa-preflight/$LEASE: .*HTTP 500"
echo "C: 500 on every Lease read: all 4 still pending (GroupNotFormed), agents exited 3 after $(pfk8s_elapsed "$t0") s"

# C'. The API server recovers; the kubelet starts the agents again.
pfk8s_admin POST /faults '[]'
t0=$(date +%s.%N)
start_all R 30
wait_left_pending R
all_tested R
echo "C': after the 500s stop, the restarted agents pair: all 4 fabric=tested after $(pfk8s_elapsed "$t0") s"
stop_all
pfk8s_no_token_in "$T/out"
echo "PASS"
