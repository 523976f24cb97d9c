#!/bin/bash
# initContainer gang against a real kube-apiserver (tests/kube_real): the
# chart's RBAC (mode initcontainer, job namespace ml) applied, three Nodes,
# three Jobs and their JobSet-labelled pods created in the API without
# podIPs (there is no kubelet; the test patches status.podIP as one would).
# Three agents, one per network-namespace "pod", each with its own
# TokenRequest token bound to its pod, the identity from the downward-API
# env. Pass: pod 2 gets its IP only after every agent is waiting, so the
# real watch delivers it; every agent exits 0; every Node carries the labels,
# both conditions and one Event in `default`; the kubelet's condition and
# the taints are untouched. Fail: a second gang whose third pod never gets a
# podIP: the other two exit 3 at their deadline with PeerTimeout,
# status=error, fabric=untested, EFAFabricReady False/PeerTimeout. Only the
# verbs the chart grants are used (audit log: no 403).
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 3 --set mode=initcontainer --set 'jobNamespaces={ml}'
for i in 0 1 2; do
    kr_node "node-$i" '{"kubernetes.io/hostname":"node-'$i'","node.kubernetes.io/instance-type":"test.fake","topology.kubernetes.io/zone":"us-east-1a"}' \
        '[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]'
done
kr_jobset_pods ml 3
kr_pod_ip ml train-workers-0-0-p0 10.254.42.11
kr_pod_ip ml train-workers-1-0-p1 10.254.42.12
for i in 0 1 2; do
    kr_token ml efa-preflight-job "train-workers-$i-0-p$i" > "$T/token-$i"
done
kr_state "$T/before.json"

agent() {   # agent INDEX TAG TIMEOUT: in pod pfkr-(INDEX+1), its pid added to pids
    kube_jobset_agent "$1" "$2-$1" -b 64K -e 1M -n 3 -w 1 --timeout "$3" --taint-on-failure -vv
    pids="$pids $KUBE_AGENT_PID"
}

# Wait (bounded) until every agent has asked the server something (a bound
# token names its pod in the audit log).
all_seen() {
    local t
    for t in $(seq 1 150); do
        python3 - "$T/out/audit.log" <<'EOF' && return 0
import json, sys
seen = set()
for l in open(sys.argv[1]):
    x = json.loads(l)
    pod = (x["user"].get("extra") or {}).get("authentication.kubernetes.io/pod-name", [""])[0]
    seen.add(pod)
sys.exit(0 if len(seen - {""}) == 3 else 1)
EOF
        sleep 0.2
    done
    kr_die "the agents never all reached the server"
}

start=$(date +%s.%N)
pids=""
for i in 0 1 2; do agent $i pass 60; done
# Rank 0 lists the group and waits for pod 2's IP, as the kubelet would
# report it; it comes once every agent is up.
all_seen
kr_wait_watchers pods 1
kr_pod_ip ml train-workers-2-0-p2 10.254.42.13
kube_wait_pids 0 "$T/out/pass" "pass: agent" $pids
echo "gang of 3: every agent exit 0 in $(kr_elapsed "$start")s (pod 2's IP delivered by the watch)"
kr_state "$T/pass.json"
kr_check "$T/pass.json" '
before = json.load(open("'"$T/before.json"'"))
old = {n["metadata"]["name"]: n for n in before["nodes"]}
for i in range(3):
    n = "node-%d" % i
    l = labels(n)
    assert l["efa-preflight.io/status"] == "warn", (n, l)     # tcp stands in for EFA
    assert l["efa-preflight.io/fabric"] == "tested", l
    rep = json.load(open("'"$T"'/out/pass-%d.json" % i))
    assert l["efa-preflight.io/busbw-gbps"] == "%.2f" % rep["collective"]["peak_busbw_gbps"], l
    for k, v in old[n]["metadata"]["labels"].items():
        assert l[k] == v, ("foreign label changed", k)
    d, f = cond(n, "EFADevicesReady"), cond(n, "EFAFabricReady")
    assert d and d["status"] == "Unknown" and d["reason"] == "EFANotRequired", d
    assert f and f["status"] == "True" and f["reason"] == "ProviderFallback", f
    assert cond(n, "Ready") == next(c for c in old[n]["status"]["conditions"] if c["type"] == "Ready")
    assert taints(n) == old[n]["spec"]["taints"], taints(n)
    ev = events(n)
    assert len(ev) == 1, ev
    e = ev[0]
    assert e["metadata"]["namespace"] == "default", e
    assert e["involvedObject"]["uid"] == node(n)["metadata"]["uid"], e
    assert e["type"] == "Warning" and e["reason"] == "ProviderFallback", e
    assert re.search(r"busbw \d+\.\d\d GB/s over 3 nodes", e["message"]), e["message"]
a = audit()
users = {x["user"]["username"] for x in a}
assert users == {"system:serviceaccount:ml:efa-preflight-job"}, users
bad = [(x["verb"], x["requestURI"], x["responseStatus"]["code"]) for x in a
       if x["stage"] == "ResponseComplete" and x["responseStatus"]["code"] >= 400
       and not (x["verb"] == "get" and x["responseStatus"]["code"] == 404
                and x["objectRef"].get("resource") == "configmaps")]
assert not bad, bad
print("%d agent requests, all as ml/efa-preflight-job, none refused; verbs: %s" % (
    len([x for x in a if x["stage"] == "ResponseComplete"]),
    ", ".join(sorted({"%s %s%s" % (x["verb"], x["objectRef"].get("resource", ""),
                                   "/" + x["objectRef"]["subresource"] if x["objectRef"].get("subresource") else "")
                      for x in a}))))
'
echo "every Node: status=warn, fabric=tested, busbw, both conditions, one Event in default; kubelet condition, labels and taints kept"

# Fail: a gang of three whose third pod never gets an IP.
kr_ok DELETE "/api/v1/namespaces/ml/pods/train-workers-2-0-p2?gracePeriodSeconds=0"
kr_call POST /api/v1/namespaces/ml/pods --data '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-workers-2-0-p2","namespace":"ml","labels":{"jobset.sigs.k8s.io/jobset-name":"train","jobset.sigs.k8s.io/jobset-uid":"7d2c0b1e-5a4f-4c3e-9b8a-1f2e3d4c5b6a","jobset.sigs.k8s.io/replicatedjob-name":"workers","jobset.sigs.k8s.io/replicatedjob-replicas":"3","jobset.sigs.k8s.io/job-index":"2","batch.kubernetes.io/job-completion-index":"0","batch.kubernetes.io/job-name":"train-workers-2"}},"spec":{"nodeName":"node-2","restartPolicy":"Never","serviceAccountName":"efa-preflight-job","automountServiceAccountToken":false,"containers":[{"name":"train","image":"registry.invalid/train"}]}}' >/dev/null ||
    kr_die "recreating pod 2"
start=$(date +%s.%N)
pids=""
for i in 0 1; do agent $i fail 8; done
kube_wait_pids 3 "$T/out/fail" "fail: agent" $pids
for i in 0 1; do
    grep -q PeerTimeout "$T/out/fail-$i.json" || kr_die "fail: agent $i: no PeerTimeout in its report"
done
grep -q "train-workers-2-0-p2 (Pending, no podIP)" "$T/out/fail-0.json" ||
    { cat "$T/out/fail-0.json"; kr_die "rank 0 does not name the pod without an IP"; }
echo "gang with a pod that never gets an IP: ranks 0-1 exit 3 PeerTimeout after $(kr_elapsed "$start")s; rank 0 names train-workers-2-0-p2 (Pending, no podIP)"
kr_state "$T/fail.json"
kr_check "$T/fail.json" '
for i, n, l in node_rows(2):
    assert l["efa-preflight.io/status"] == "error", (n, l)
    assert l["efa-preflight.io/fabric"] == "untested", l
    assert "efa-preflight.io/busbw-gbps" not in l, l
    f = cond(n, "EFAFabricReady")
    assert f["status"] == "Unknown" and f["reason"] == "PeerTimeout", f
    ev = events(n)
    assert len(ev) == 2 and ev[-1]["reason"] == "PeerTimeout" or \
        sorted(e["reason"] for e in ev) == ["PeerTimeout", "ProviderFallback"], ev
    assert [t["key"] for t in taints(n)] == ["nvidia.com/gpu"], taints(n)
# node-2 keeps the pass of the first gang
assert labels("node-2")["efa-preflight.io/status"] == "warn", labels("node-2")
'
echo "nodes 0-1: status=error, fabric=untested, EFAFabricReady False/PeerTimeout, a PeerTimeout Event, no taint; node-2 kept its verdict"
kr_no_token_in "$T/out"
echo "no token in $(ls "$T/out" | wc -l) log/report files"
echo "PASS"
