#!/bin/bash
# DaemonSet pre-flight mode (run --mode daemonset --group-size 2), instance
# types at once, every agent in its own network namespace "pod" with a token
# for its pod (real: a TokenRequest bound to it; the chart's RBAC, mode
# daemonset, and a DaemonSet object owning the pods):
#   node-0..3  p5.48xlarge, EKS topology labels: node-0 and node-2 under
#              one layer-3 network node, node-1 and node-3 under another
#   node-4..6  p4d.24xlarge
#   node-7     g5.48xlarge, alone
# One coordinator per type (a Lease each) forms the groups: p5 by spine,
# {node-0, node-2} and {node-1, node-3} (not name order); p4d one group of
# 3 (the lone leftover joins); g5 alone: status=untested, fabric=untested,
# EFAFabricReady=Unknown (FabricUntested). Every other node ends
# fabric=tested with a busbw label, the kubelet's Ready untouched. Each
# Lease ends released (holder "", as client-go releases). Fake side: through
# injected Lease conflicts, a 500 and a lost create reply, all used up.
# Real side: the Leases' 409s are the server's own, and no request is
# refused otherwise (audit log). Every agent mounts one secret, so
# registrations, assignments and HELLOs are all signed. Every agent then
# idles until SIGTERM and exits 0.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
types="p5.48xlarge p5.48xlarge p5.48xlarge p5.48xlarge p4d.24xlarge p4d.24xlarge p4d.24xlarge g5.48xlarge"
# The agents' deadline and the wait for their verdicts (half seconds): a
# real server's writes take longer.
if kube_fake; then TIMEOUT=45 WAIT=120; else TIMEOUT=60 WAIT=180; fi
N=$(wc -w <<<"$types")
LONE=$((N - 1))
kube_init "$N" --set mode=daemonset

ds_uid=$(kube_daemonset efa-preflight efa-preflight)
i=0
for itype in $types; do
    topo=
    if [ "$i" -lt 4 ]; then
        spine=$([ $((i % 2)) -eq 0 ] && echo nn-spine-x || echo nn-spine-y)
        topo=',"topology.k8s.aws/network-node-layer-1":"nn-top","topology.k8s.aws/network-node-layer-2":"nn-mid","topology.k8s.aws/network-node-layer-3":"'$spine'"'
    fi
    kube_node "node-$i" '{"efa-preflight.io/status":"pending","node.kubernetes.io/instance-type":"'$itype'","topology.kubernetes.io/zone":"us-east-1a"'"$topo"'}'
    kube_pod '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"efa-preflight-ds-'$i'","namespace":"efa-preflight","labels":{"app.kubernetes.io/name":"efa-preflight","app.kubernetes.io/instance":"efa-preflight"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"efa-preflight","uid":"'$ds_uid'","controller":true}]},"spec":{"nodeName":"node-'$i'","serviceAccountName":"efa-preflight","automountServiceAccountToken":false,"containers":[{"name":"agent","image":"registry.invalid/efa-preflight"}]}}' \
        "$(kube_pod_ip $((i + 1)))"
    kube_token efa-preflight efa-preflight "efa-preflight-ds-$i" > "$T/token-$i"
    i=$((i + 1))
done
if kube_fake; then
    # Lease faults: renewals and takes that lose to a conflict (409), a 500
    # on a read (retried), a create whose answer is lost though it landed
    # (the retry gets 409 AlreadyExists; the next read shows the Lease is
    # ours).
    pfk8s_admin POST /faults '[
 {"method": "PUT", "path": "/leases/", "status": 409, "count": 2},
 {"method": "GET", "path": "/leases/", "status": 500, "count": 1},
 {"method": "POST", "path": "/leases$", "reply_lost": true, "count": 1}]'
fi
openssl rand -hex 32 > "$T/secret"

start=$(date +%s.%N)
pids=""
for i in $(seq 0 $((N - 1))); do
    kube_ds_agent "$i" "efa-preflight-ds-$i" "ds-$i" --secret-file "$T/secret" \
        -b 64K -e 256K -n 2 -w 1 --timeout "$TIMEOUT" -vv
    pids="$pids $KUBE_AGENT_PID"
done

# Wait (bounded) until every node has a verdict.
kube_wait_verdicts "pending validating" "$WAIT" "$T"/out/ds-*.stderr
echo "all $N nodes have a verdict after $(kube_elapsed "$start")s"
# A real server's Leases are released after the groups ran, by agents that
# race the last verdict: wait for the last release.
if kube_real; then
    for t in $(seq 1 60); do
        kube_state "$T/state.json"
        python3 -c "
import json, sys; s = json.load(open('$T/state.json'))
sys.exit(0 if len(s['leases']) == 3 and all(x['spec'].get('holderIdentity', '') == '' for x in s['leases']) else 1)" && break
        sleep 0.5
    done
fi

kube_check "$T/state.json" '
types = "'"$types"'".split()
lone = "node-%d" % '"$LONE"'
for i, itype in enumerate(types[:-1]):
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
l = labels(lone)
assert l["efa-preflight.io/status"] == "untested", l     # not admitted by status in (pass,warn)
assert l["efa-preflight.io/fabric"] == "untested", l
assert "efa-preflight.io/busbw-gbps" not in l, l
f = cond(lone, "EFAFabricReady")
assert f["status"] == "Unknown" and f["reason"] == "FabricUntested", f
leases = {x["metadata"]["name"]: x for x in s["leases"]}
want = sorted("efa-preflight-%s-us-east-1a" % t for t in set(types))
assert sorted(leases) == want, (sorted(leases), want)
for x in leases.values():
    assert x["metadata"]["namespace"] == "efa-preflight", x
    assert x["spec"].get("holderIdentity", "") == "", ("Lease not released", x)
    assert x["spec"]["leaseDurationSeconds"] == 1, x
'
if kube_real; then
    kube_check "$T/state.json" '
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
print("Lease writes: %d (%d answered 409 by the server)" % (len(lease_writes), len(conflicts)))
'
fi
# Who ran with whom: each agent logs its group's size and rank 0's node.
group_of() { grep -o "daemonset: group of [0-9]*, rank [0-9]*, rank 0 on node-[0-9]" "$T/out/ds-$1.stderr" |
             sed 's/, rank [0-9]*, / /'; }
in_group() {   # in_group WANT WHAT NODE...
    local want=$1 what=$2 i
    shift 2
    for i in "$@"; do
        [ "$(group_of "$i")" = "$want" ] ||
            { tail -n 30 "$T/out/ds-$i.stderr"; kube_die "node-$i: '$(group_of "$i")', want $what"; }
    done
}
in_group "daemonset: group of 2 rank 0 on node-0" "the group of node-0 and node-2 (spine x)" 0 2
in_group "daemonset: group of 2 rank 0 on node-1" "the group of node-1 and node-3 (spine y)" 1 3
in_group "daemonset: group of 3 rank 0 on node-4" "one p4d group of 3" 4 5 6
for i in 4 5 6; do
    grep -q "3 ranks on 3 nodes" "$T/out/ds-$i.stdout" ||
        { cat "$T/out/ds-$i.stdout"; kube_die "agent $i did not run in the group of 3"; }
done
in_group "daemonset: group of 1 rank 0 on node-$LONE" "node-$LONE alone" "$LONE"
if kube_fake; then
    pfk8s_http GET /faults > "$T/faults-after.json"
    python3 - "$T/faults-after.json" <<'EOF2' || kube_die "a Lease fault did not fire"
import json, sys
for r in json.load(open(sys.argv[1])):
    assert r["count"] == 0, ("fault not used up", r)
EOF2
    echo "Lease faults (2 x 409, a 500, a lost create reply) all fired"
fi
echo "p5 by spine {0,2} {1,3}; p4d one group of 3 (leftover joined); g5 alone: fabric=untested, EFAFabricReady Unknown/FabricUntested; every Lease released"

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
[ "$n" -eq "$N" ] || { tail -n 5 "$T"/out/ds-*.stderr; kube_die "$n of $N agents said they idle"; }
for p in $pids; do
    kill -0 "$p" 2>/dev/null || kube_die "an agent exited instead of idling"
done
for p in $pids; do kill -TERM "$p"; done
t0=$(date +%s.%N)
kube_wait_pids 0 "$T/out/ds" "after SIGTERM, agent" $pids
echo "all $N agents idled, then exited 0 within $(kube_elapsed "$t0")s of SIGTERM"
kube_no_token_in "$T/out"
echo "PASS"
