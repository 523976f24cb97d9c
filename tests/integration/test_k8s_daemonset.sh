#!/bin/bash
# DaemonSet pre-flight mode (run --mode daemonset --group-size 2): three
# nodes of one type and zone labelled efa-preflight.io/status=pending, plus
# a fourth pending node of another type, each with an agent pod in its own
# network namespace. The three form one group of 3 (a lone leftover joins
# the last group) and all end labelled, fabric=tested, over 3 nodes; the
# fourth has no partner: fabric=untested, EFAFabricReady=Unknown
# (FabricUntested). Every agent then idles until SIGTERM and exits 0.
set -u
. "$PF_ROOT/tests/fake_apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP

pfk8s_netns_up 4
python3 - "$T/objects.json" <<'EOF'
import json, sys
objs = []
for i in range(4):
    itype = "p5.48xlarge" if i < 3 else "p4d.24xlarge"
    objs.append({"kind": "Node", "apiVersion": "v1", "metadata": {
        "name": "node-%d" % i, "labels": {
            "efa-preflight.io/status": "pending",
            "node.kubernetes.io/instance-type": itype,
            "topology.kubernetes.io/zone": "us-east-1a"}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastTransitionTime": "2025-12-01T00:00:00Z"}]}})
    objs.append({"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": "efa-preflight-ds-%d" % i, "namespace": "efa-preflight",
        "labels": {"app.kubernetes.io/name": "efa-preflight",
                   "app.kubernetes.io/instance": "efa-preflight"},
        "ownerReferences": [{"kind": "DaemonSet", "name": "efa-preflight"}]},
        "spec": {"nodeName": "node-%d" % i},
        "status": {"phase": "Pending", "podIP": "10.254.40.%d" % (11 + i)}})
json.dump(objs, open(sys.argv[1], "w"), indent=1)
EOF
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json"
pfk8s_netns_check

pids=""
for i in 0 1 2 3; do
    ip netns exec "pfk8s-$((i + 1))" env POD_NAME="efa-preflight-ds-$i" \
        POD_NAMESPACE=efa-preflight NODE_NAME="node-$i" \
        "$PF_BIN" run --mode daemonset --group-size 2 \
        --api-server "https://$PFK8S_HOST_IP:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
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
echo "all 4 nodes left 'pending' after ~$((t / 2))s"

pfk8s_check "$T/state.json" '
for i in range(3):
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
l = labels("node-3")
assert l["efa-preflight.io/status"] in ("pass", "warn"), l
assert l["efa-preflight.io/fabric"] == "untested", l
assert "efa-preflight.io/busbw-gbps" not in l, l
f = cond("node-3", "EFAFabricReady")
assert f["status"] == "Unknown" and f["reason"] == "FabricUntested", f
'
for i in 0 1 2; do
    grep -q "3 ranks on 3 nodes" "$T/out/ds-$i.stdout" ||
        { cat "$T/out/ds-$i.stdout"; pfk8s_die "agent $i did not run in the group of 3"; }
done
echo "nodes 0-2: one group of 3 (group size 2, leftover joined), fabric=tested; node-3 (other type) alone: fabric=untested, EFAFabricReady Unknown/FabricUntested"

# The agents idle until their pods are removed; SIGTERM ends them promptly.
for p in $pids; do
    kill -0 "$p" 2>/dev/null || pfk8s_die "an agent exited instead of idling"
done
sleep 1
for p in $pids; do kill -TERM "$p"; done
t0=$(date +%s.%N)
for p in $pids; do
    wait "$p"
    rc=$?
    [ $rc -eq 0 ] || pfk8s_die "agent exited $rc after SIGTERM, want 0"
done
echo "all 4 agents idled, then exited 0 within $(pfk8s_elapsed "$t0")s of SIGTERM"
pfk8s_no_token_in "$T/out"
echo "PASS"
