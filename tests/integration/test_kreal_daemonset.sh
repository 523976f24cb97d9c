#!/bin/bash
# DaemonSet pre-flight mode against a real kube-apiserver (tests/kube_real):
# the chart's RBAC (mode daemonset), a DaemonSet object and its five pods
# (podIPs patched in: no kubelet), each agent with a TokenRequest token bound
# to its pod. node-0..3 p5.48xlarge under two layer-3 network nodes, node-4 a
# g5.48xlarge alone. The coordinator Leases are real coordination.k8s.io
# objects (resourceVersion preconditions, 409s from the server itself): p5
# pairs by spine {node-0, node-2} {node-1, node-3}, g5 alone (fabric
# untested). Every node leaves `pending`; both Leases end released (holder
# ""); the agents idle until SIGTERM and exit 0. No request is refused
# (audit log).
set -u
. "$PF_ROOT/tests/kube_real/lib.sh"
N=5
kr_init $N
T=$KR_TMP
kr_start
kr_namespace efa-preflight
kr_rbac_from_chart --set mode=daemonset
kr_ok POST /apis/apps/v1/namespaces/efa-preflight/daemonsets --data '{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"efa-preflight","namespace":"efa-preflight"},"spec":{"selector":{"matchLabels":{"app.kubernetes.io/name":"efa-preflight"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"efa-preflight"}},"spec":{"containers":[{"name":"agent","image":"registry.invalid/efa-preflight"}]}}}}'
ds_uid=$(kr_call GET /apis/apps/v1/namespaces/efa-preflight/daemonsets/efa-preflight |
         python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["uid"])')
for i in $(seq 0 $((N - 1))); do
    if [ "$i" -lt 4 ]; then
        spine=$([ $((i % 2)) -eq 0 ] && echo nn-spine-x || echo nn-spine-y)
        kr_node "node-$i" '{"efa-preflight.io/status":"pending","node.kubernetes.io/instance-type":"p5.48xlarge","topology.kubernetes.io/zone":"us-east-1a","topology.k8s.aws/network-node-layer-1":"nn-top","topology.k8s.aws/network-node-layer-2":"nn-mid","topology.k8s.aws/network-node-layer-3":"'$spine'"}'
    else
        kr_node "node-$i" '{"efa-preflight.io/status":"pending","node.kubernetes.io/instance-type":"g5.48xlarge","topology.kubernetes.io/zone":"us-east-1a"}'
    fi
    kr_ok POST /api/v1/namespaces/efa-preflight/pods --data '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"efa-preflight-ds-'$i'","namespace":"efa-preflight","labels":{"app.kubernetes.io/name":"efa-preflight","app.kubernetes.io/instance":"efa-preflight"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"efa-preflight","uid":"'$ds_uid'","controller":true}]},"spec":{"nodeName":"node-'$i'","serviceAccountName":"efa-preflight","automountServiceAccountToken":false,"containers":[{"name":"agent","image":"registry.invalid/efa-preflight"}]}}'
    kr_pod_ip efa-preflight "efa-preflight-ds-$i" "10.254.42.$((11 + i))"
    kr_token efa-preflight efa-preflight "efa-preflight-ds-$i" > "$T/token-$i"
done
openssl rand -hex 32 > "$T/secret"

start=$(date +%s.%N)
pids=""
for i in $(seq 0 $((N - 1))); do
    ip netns exec "pfkr-$((i + 1))" env POD_NAME="efa-preflight-ds-$i" \
        POD_NAMESPACE=efa-preflight NODE_NAME="node-$i" \
        "$PF_BIN" run --mode daemonset --group-size 2 --expect-gpus 0 \
        --api-server "$KR_API" --token-file "$T/token-$i" --ca-file "$KR_CA" --no-imds \
        --secret-file "$T/secret" \
        --port "$KR_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 256K -n 2 -w 1 --timeout 60 --report "$T/out/ds-$i.json" -vv \
        > "$T/out/ds-$i.stdout" 2> "$T/out/ds-$i.stderr" &
    pids="$pids $!"
done

for t in $(seq 1 180); do
    kr_state "$T/state.json"
    left=$(python3 -c "
import json; s = json.load(open('$T/state.json'))
print(sum(1 for n in s['nodes'] if n['metadata']['labels'].get('efa-preflight.io/status') in ('pending', 'validating')))")
    [ "$left" = 0 ] && break
    sleep 0.5
done
[ "$left" = 0 ] || { tail -n 20 "$T"/out/ds-*.stderr; kr_die "$left node(s) still pending after 90 s"; }
echo "all $N nodes have a verdict after $(kr_elapsed "$start")s"
# The Leases are released after the groups ran: wait for the last release.
for t in $(seq 1 60); do
    kr_state "$T/state.json"
    python3 -c "
import json, sys; s = json.load(open('$T/state.json'))
sys.exit(0 if len(s['leases']) == 2 and all(x['spec'].get('holderIdentity', '') == '' for x in s['leases']) else 1)" && break
    sleep 0.5
done

kr_check "$T/state.json" '
for i in range(4):
    n = "node-%d" % i
    l = labels(n)
    assert l["efa-preflight.io/status"] == "warn", (n, l)   # tcp stands in for EFA
    assert l["efa-preflight.io/fabric"] == "tested", l
    rep = json.load(open("'"$T"'/out/ds-%d.json" % i))
    assert l["efa-preflight.io/busbw-gbps"] == "%.2f" % rep["collective"]["peak_busbw_gbps"], l
    f = cond(n, "EFAFabricReady")
    assert f["status"] == "True" and f["reason"] == "ProviderFallback", f
    assert len(events(n)) == 1, events(n)
l = labels("node-4")
assert l["efa-preflight.io/fabric"] == "untested", l
assert "efa-preflight.io/busbw-gbps" not in l, l
f = cond("node-4", "EFAFabricReady")
assert f["status"] == "Unknown" and f["reason"] == "FabricUntested", f
leases = {x["metadata"]["name"]: x for x in s["leases"]}
assert sorted(leases) == ["efa-preflight-g5.48xlarge-us-east-1a",
                          "efa-preflight-p5.48xlarge-us-east-1a"], sorted(leases)
for x in leases.values():
    assert x["metadata"]["namespace"] == "efa-preflight", x
    assert x["spec"].get("holderIdentity", "") == "", ("Lease not released", x)
a = audit()
done_ = [x for x in a if x["stage"] == "ResponseComplete"]
# 404: a Lease read before its first holder created it, or the fleet
# baseline read before any run passed; 409: a Lease write that lost to one
# by another agent.
lease_404 = lambda x: x["responseStatus"]["code"] == 404 and x["verb"] == "get" and \
    (x["objectRef"].get("resource") == "leases" or
     (x["objectRef"].get("resource") == "configmaps" and
      x["objectRef"].get("name", "").endswith("-baseline")))
bad = [(x["verb"], x["requestURI"], x["responseStatus"]["code"]) for x in done_
       if x["responseStatus"]["code"] >= 400 and x["responseStatus"]["code"] != 409 and not lease_404(x)]
assert not bad, bad
lease_writes = [x for x in done_ if x["objectRef"].get("resource") == "leases" and x["verb"] in ("create", "update")]
conflicts = [x for x in lease_writes if x["responseStatus"]["code"] == 409]
print("Lease writes: %d (%d answered 409 by the server); node-4 label status=%s" % (
    len(lease_writes), len(conflicts), l["efa-preflight.io/status"]))
'
group_of() { grep -o "daemonset: group of [0-9]*, rank [0-9]*, rank 0 on node-[0-9]" "$T/out/ds-$1.stderr" |
             sed 's/, rank [0-9]*, / /'; }
for i in 0 2; do
    [ "$(group_of $i)" = "daemonset: group of 2 rank 0 on node-0" ] ||
        { tail -n 30 "$T/out/ds-$i.stderr"; kr_die "node-$i: '$(group_of $i)', want the group of node-0 and node-2"; }
done
for i in 1 3; do
    [ "$(group_of $i)" = "daemonset: group of 2 rank 0 on node-1" ] ||
        { tail -n 30 "$T/out/ds-$i.stderr"; kr_die "node-$i: '$(group_of $i)', want the group of node-1 and node-3"; }
done
[ "$(group_of 4)" = "daemonset: group of 1 rank 0 on node-4" ] || kr_die "node-4 was not alone: '$(group_of 4)'"
echo "p5 paired by spine {0,2} {1,3}; g5 alone: fabric=untested, FabricUntested; 2 Leases, both released"

for p in $pids; do
    kill -0 "$p" 2>/dev/null || kr_die "an agent exited instead of idling"
done
for p in $pids; do kill -TERM "$p"; done
t0=$(date +%s.%N)
for p in $pids; do
    wait "$p"
    rc=$?
    [ $rc -eq 0 ] || kr_die "agent exited $rc after SIGTERM, want 0"
done
echo "all $N agents idled, then exited 0 within $(kr_elapsed "$t0")s of SIGTERM"
kr_no_token_in "$T/out"
echo "PASS"
