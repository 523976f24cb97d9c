#!/bin/bash
# DaemonSet pre-flight mode (run --mode daemonset --group-size 2), two
# instance types at once plus a third alone, every agent in its own network
# namespace "pod":
#   node-0..3  p5.48xlarge, EKS topology labels: node-0 and node-2 under
#              one layer-3 network node, node-1 and node-3 under another
#   node-4..6  p4d.24xlarge
#   node-7     g5.48xlarge
# One coordinator per type (a Lease each) forms the groups: p5 by spine,
# {node-0, node-2} and {node-1, node-3} (not name order); p4d one group of
# 3 (the lone leftover joins); g5 alone: status=untested, fabric=untested,
# EFAFabricReady=Unknown (FabricUntested). Every other node ends
# fabric=tested with a busbw label. Each Lease ends released (holder "",
# as client-go releases), through injected Lease conflicts, a 500 and a
# lost create reply. Every agent mounts one secret, so registrations,
# assignments and HELLOs are all signed. Every agent then idles until
# SIGTERM and exits 0.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
N=8

pfk8s_netns_up $N
python3 - "$T/objects.json" <<'EOF'
import json, sys
objs = []
types = ["p5.48xlarge"] * 4 + ["p4d.24xlarge"] * 3 + ["g5.48xlarge"]
for i, itype in enumerate(types):
    labels = {"efa-preflight.io/status": "pending",
              "node.kubernetes.io/instance-type": itype,
              "topology.kubernetes.io/zone": "us-east-1a"}
    if i < 4:
        labels.update({"topology.k8s.aws/network-node-layer-1": "nn-top",
                       "topology.k8s.aws/network-node-layer-2": "nn-mid",
                       "topology.k8s.aws/network-node-layer-3":
                           "nn-spine-x" if i % 2 == 0 else "nn-spine-y"})
    objs.append({"kind": "Node", "apiVersion": "v1", "metadata": {
        "name": "node-%d" % i, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastTransitionTime": "2025-12-01T00:00:00Z"}]}})
    objs.append({"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": "efa-preflight-ds-%d" % i, "namespace": "efa-preflight",
        "labels": {"app.kubernetes.io/name": "efa-preflight",
                   "app.kubernetes.io/instance": "efa-preflight"},
        "ownerReferences": [{"kind": "DaemonSet", "name": "efa-preflight",
                             "uid": "0c9d8e7f-1a2b-4c3d-8e9f-a0b1c2d3e4f5",
                             "controller": True}]},
        "spec": {"nodeName": "node-%d" % i},
        "status": {"phase": "Pending", "podIP": "10.254.40.%d" % (11 + i)}})
json.dump(objs, open(sys.argv[1], "w"), indent=1)
EOF
# Lease faults: renewals and takes that lose to a conflict (409), a 500 on
# a read (retried), a create whose answer is lost though it landed (the
# retry gets 409 AlreadyExists; the next read shows the Lease is ours).
cat > "$T/faults.json" <<'EOF2'
[
 {"method": "PUT", "path": "/leases/", "status": 409, "count": 2},
 {"method": "GET", "path": "/leases/", "status": 500, "count": 1},
 {"method": "POST", "path": "/leases$", "reply_lost": true, "count": 1}
]
EOF2
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json" --faults "$T/faults.json"
pfk8s_netns_check
openssl rand -hex 32 > "$T/secret"

pids=""
for i in $(seq 0 $((N - 1))); do
    ip netns exec "pfk8s-$((i + 1))" env POD_NAME="efa-preflight-ds-$i" \
        POD_NAMESPACE=efa-preflight NODE_NAME="node-$i" \
        "$PF_BIN" run --mode daemonset --group-size 2 --expect-gpus 0 \
        --api-server "https://$PFK8S_HOST_IP:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
        --secret-file "$T/secret" \
        --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 256K -n 2 -w 1 --timeout 45 --report "$T/out/ds-$i.json" -vv \
        > "$T/out/ds-$i.stdout" 2> "$T/out/ds-$i.stderr" &
    pids="$pids $!"
done

# Wait (bounded) until no node is pending any more.
for t in $(seq 1 120); do
    pfk8s_state "$T/state.json"
    left=$(python3 -c "
import json; s = json.load(open('$T/state.json'))
print(sum(1 for n in s['nodes'] if n['metadata']['labels'].get('efa-preflight.io/status') == 'pending'))")
    [ "$left" = 0 ] && break
    sleep 0.5
done
[ "$left" = 0 ] || { tail -n 20 "$T"/out/ds-*.stderr; pfk8s_die "$left node(s) still pending after 60 s"; }
echo "all $N nodes left 'pending' after ~$((t / 2))s"

pfk8s_check "$T/state.json" '
for i in range(7):
    n = "node-%d" % i
    l = labels(n)
    assert l["efa-preflight.io/status"] == "warn", (n, l)   # tcp stands in for EFA
    assert l["efa-preflight.io/fabric"] == "tested", l
    rep = json.load(open("'"$T"'/out/ds-%d.json" % i))
    want = "%.2f" % rep["collective"]["peak_busbw_gbps"]
    assert l["efa-preflight.io/busbw-gbps"] == want, (l, want)
    f = cond(n, "EFAFabricReady")
    assert f["status"] == "True" and f["reason"] == "ProviderFallback", f
    assert len(events(n)) == 1, events(n)
    assert cond(n, "Ready")["lastTransitionTime"] == "2025-12-01T00:00:00Z"
l = labels("node-7")
assert l["efa-preflight.io/status"] == "untested", l     # not admitted by status in (pass,warn)
assert l["efa-preflight.io/fabric"] == "untested", l
assert "efa-preflight.io/busbw-gbps" not in l, l
f = cond("node-7", "EFAFabricReady")
assert f["status"] == "Unknown" and f["reason"] == "FabricUntested", f
leases = {x["metadata"]["name"]: x for x in s["leases"]}
assert sorted(leases) == ["efa-preflight-g5.48xlarge-us-east-1a",
                          "efa-preflight-p4d.24xlarge-us-east-1a",
                          "efa-preflight-p5.48xlarge-us-east-1a"], sorted(leases)
for x in leases.values():
    assert x["metadata"]["namespace"] == "efa-preflight", x
    assert x["spec"]["holderIdentity"] == "" and x["spec"]["leaseDurationSeconds"] == 1, x
'
# Who ran with whom: each agent logs its group's size and rank 0's node.
group_of() { grep -o "daemonset: group of [0-9]*, rank [0-9]*, rank 0 on node-[0-9]" "$T/out/ds-$1.stderr" |
             sed 's/, rank [0-9]*, / /'; }
for i in 0 2; do
    [ "$(group_of $i)" = "daemonset: group of 2 rank 0 on node-0" ] ||
        { tail -n 30 "$T/out/ds-$i.stderr"; pfk8s_die "node-$i: '$(group_of $i)', want the group of node-0 and node-2 (spine x)"; }
done
for i in 1 3; do
    [ "$(group_of $i)" = "daemonset: group of 2 rank 0 on node-1" ] ||
        { tail -n 30 "$T/out/ds-$i.stderr"; pfk8s_die "node-$i: '$(group_of $i)', want the group of node-1 and node-3 (spine y)"; }
done
for i in 4 5 6; do
    [ "$(group_of $i)" = "daemonset: group of 3 rank 0 on node-4" ] ||
        { tail -n 30 "$T/out/ds-$i.stderr"; pfk8s_die "node-$i: '$(group_of $i)', want one p4d group of 3"; }
    grep -q "3 ranks on 3 nodes" "$T/out/ds-$i.stdout" ||
        { cat "$T/out/ds-$i.stdout"; pfk8s_die "agent $i did not run in the group of 3"; }
done
[ "$(group_of 7)" = "daemonset: group of 1 rank 0 on node-7" ] || pfk8s_die "node-7 was not alone"
pfk8s_http GET /faults > "$T/faults-after.json"
python3 - "$T/faults-after.json" <<'EOF2' || pfk8s_die "a Lease fault did not fire"
import json, sys
for r in json.load(open(sys.argv[1])):
    assert r["count"] == 0, ("fault not used up", r)
EOF2
echo "p5 by spine {0,2} {1,3}; p4d one group of 3 (leftover joined); g5 alone: fabric=untested, EFAFabricReady Unknown/FabricUntested; 3 Leases, all released; Lease faults (2 x 409, a 500, a lost create reply) all fired"

# The agents idle until their pods are removed; SIGTERM ends them promptly.
# Each says so once its verdict is on the Node (within 15 s).
for t in $(seq 1 150); do
    n=0
    for i in $(seq 0 $((N - 1))); do
        grep -q "idling until the pod is removed" "$T/out/ds-$i.stderr" && n=$((n + 1))
    done
    [ "$n" -eq "$N" ] && break
    sleep 0.1
done
[ "$n" -eq "$N" ] || { tail -n 5 "$T"/out/ds-*.stderr; pfk8s_die "$n of $N agents said they idle"; }
for p in $pids; do
    kill -0 "$p" 2>/dev/null || pfk8s_die "an agent exited instead of idling"
done
for p in $pids; do kill -TERM "$p"; done
t0=$(date +%s.%N)
for p in $pids; do
    wait "$p"
    rc=$?
    [ $rc -eq 0 ] || pfk8s_die "agent exited $rc after SIGTERM, want 0"
done
echo "all $N agents idled, then exited 0 within $(pfk8s_elapsed "$t0")s of SIGTERM"
pfk8s_no_token_in "$T/out"
echo "PASS"
