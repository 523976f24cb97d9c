#!/bin/bash
# Taint and blast-radius cap against a real kube-apiserver (tests/kube_real),
# the chart's RBAC (initcontainer, job namespace ml), a TokenRequest token.
# Ten Nodes; node-5 and node-6 carry our taint, node-2 a stale one. One-pod
# runs (world size 1) name the Node to write with --node-name:
#   1. node-2 passes: its stale taint goes (the taint list is written with
#      the Node's resourceVersion), other taints stay.
#   2. node-0 fails (--expect-gpus 8 on a host without GPUs) at the default
#      cap, 20 % of 10 = 2, already used: status=fail, not tainted, and the
#      Event says why.
#   3. node-1 fails under --max-tainted 30% with --on-fail-action
#      hyperpod-replace: tainted NoSchedule and labelled for replacement.
# Never more than the cap carry the taint; no request is refused.
set -u
. "$PF_ROOT/tests/kube_real/lib.sh"
kr_init 0
T=$KR_TMP
kr_start
kr_namespace efa-preflight ml
kr_rbac_from_chart --set mode=initcontainer --set 'jobNamespaces={ml}'
for i in $(seq 0 9); do
    taints='[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}'
    case $i in 2|5|6) taints="$taints"',{"key":"efa-preflight.io/unhealthy","value":"GPUCountMismatch","effect":"NoSchedule"}' ;; esac
    kr_node "node-$i" '{"kubernetes.io/hostname":"node-'$i'","node.kubernetes.io/instance-type":"test.fake"}' "$taints]"
done
kr_jobset_pods ml 1
kr_pod_ip ml train-workers-0-0-p0 127.0.0.1
kr_token ml efa-preflight-job train-workers-0-0-p0 > "$T/token"
port=$(kr_free_port 127.0.0.1)

agent() {   # agent NODE_INDEX [extra args]
    local i=$1
    shift
    "$PF_BIN" run --api-server "$KR_API" \
        --token-file "$T/token" --ca-file "$KR_CA" --no-imds \
        --pod-name train-workers-0-0-p0 --namespace ml --node-name "node-$i" \
        --peer-selector batch.kubernetes.io/job-name=train-workers-0 --world-size 1 \
        --port "$port" --fabric-provider tcp --engine host \
        -b 64K -e 256K -n 2 -w 1 --timeout 30 --taint-on-failure \
        --report "$T/out/r$i.json" "$@" \
        > "$T/out/r$i.stdout" 2> "$T/out/r$i.stderr"
}

agent 2
rc=$?
[ $rc -eq 0 ] || { cat "$T/out/r2.stderr"; kr_die "node-2 (healthy) exited $rc, want 0"; }
agent 0 --expect-gpus 8
rc=$?
[ $rc -eq 1 ] || { cat "$T/out/r0.stderr"; kr_die "node-0 exited $rc, want 1"; }
kr_state "$T/s1.json"
kr_check "$T/s1.json" '
mine = lambda n: [t for t in taints(n) if t["key"] == "efa-preflight.io/unhealthy"]
assert not mine("node-2"), ("a passing node kept our taint", taints("node-2"))
assert [t["key"] for t in taints("node-2")] == ["nvidia.com/gpu"], taints("node-2")
assert labels("node-2")["efa-preflight.io/status"] == "warn", labels("node-2")
assert labels("node-0")["efa-preflight.io/status"] == "fail", labels("node-0")
assert cond("node-0", "EFADevicesReady")["reason"] == "GPUCountMismatch", cond("node-0", "EFADevicesReady")
assert not mine("node-0"), "node-0 was tainted beyond the cap"
assert any(t["key"] == "nvidia.com/gpu" for t in taints("node-0")), "other taints lost"
ev = events("node-0")
assert len(ev) == 1 and "not tainted" in ev[0]["message"], ev
assert sum(1 for i in range(10) if mine("node-%d" % i)) == 2
print("at the cap: node-0 labelled fail, not tainted; Event: ...%s" % ev[0]["message"][-110:])
'

agent 1 --expect-gpus 8 --max-tainted 30% --on-fail-action hyperpod-replace
rc=$?
[ $rc -eq 1 ] || { cat "$T/out/r1.stderr"; kr_die "node-1 exited $rc, want 1"; }
kr_state "$T/s2.json"
kr_check "$T/s2.json" '
mine = lambda n: [t for t in taints(n) if t["key"] == "efa-preflight.io/unhealthy"]
m = mine("node-1")
assert len(m) == 1 and m[0]["effect"] == "NoSchedule", taints("node-1")
assert any(t["key"] == "nvidia.com/gpu" for t in taints("node-1")), "other taints lost"
l = labels("node-1")
assert l["efa-preflight.io/status"] == "fail", l
assert l["sagemaker.amazonaws.com/node-health-status"] == "UnschedulablePendingReplacement", l
assert "sagemaker.amazonaws.com/node-health-status" not in labels("node-0"), labels("node-0")
assert sum(1 for i in range(10) if mine("node-%d" % i)) == 3
bad = [(x["verb"], x["requestURI"], x["responseStatus"]["code"]) for x in audit()
       if x["stage"] == "ResponseComplete" and x["responseStatus"]["code"] >= 400
       and not (x["verb"] == "get" and x["responseStatus"]["code"] == 404
                and x["objectRef"].get("resource") == "configmaps")]
assert not bad, bad
print("under 30%%: node-1 tainted and %s; 3 of 10 tainted" % l["sagemaker.amazonaws.com/node-health-status"])
'
kr_no_token_in "$T/out"
echo "PASS"
