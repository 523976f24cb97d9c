#!/bin/bash
# Blast radius and remediation. Ten Nodes, two of which already carry our
# taint (and a third, node-2, a stale one). A node that fails its own checks (GPUCountMismatch: --expect-gpus 8
# on a host with none) with --taint-on-failure and the default cap (20%):
# 2 of 10 marked already, so it is labelled status=fail but not tainted,
# and its Event says why. With --max-tainted 30% and --on-fail-action
# hyperpod-replace the next failing node is tainted and gets HyperPod's
# UnschedulablePendingReplacement label. A node that passes is never
# tainted and its stale taint is removed.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP

pfk8s_netns_up 1
pfk8s_jobset_objects "$T/objects.json" 0:10.254.40.11 1:x 2:x 3:x 4:x 5:x 6:x 7:x 8:x 9:x
python3 - "$T/objects.json" <<'PY'
import json, sys
objs = json.load(open(sys.argv[1]))
for o in objs:
    if o["kind"] == "Node" and o["metadata"]["name"] in ("node-5", "node-6", "node-2"):
        o["spec"]["taints"].append({"key": "efa-preflight.io/unhealthy",
                                    "value": "GPUCountMismatch", "effect": "NoSchedule"})
json.dump(objs, open(sys.argv[1], "w"))
PY
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json"
pfk8s_netns_check

# Each run is a one-pod job (pod train-workers-0-0-p0, rank 0 of 1) that
# writes the Node named by --node-name.
agent() {   # agent NODE_INDEX [extra args]
    local i=$1
    shift
    ip netns exec pfk8s-1 "$PF_BIN" run \
        --api-server "https://$PFK8S_HOST_IP:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
        --pod-name train-workers-0-0-p0 --namespace ml --node-name "node-$i" \
        --peer-selector batch.kubernetes.io/job-name=train-workers-0 --world-size 1 \
        --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 256K -n 2 -w 1 --timeout 20 --taint-on-failure \
        --report "$T/out/r$i.json" "$@" \
        > "$T/out/r$i.stdout" 2> "$T/out/r$i.stderr"
}

# 1. node-2 carries a stale taint and passes: the taint goes, leaving two
#    of ten marked (node-5, node-6). Then node-0 fails at the 20% cap.
agent 2
rc=$?
[ $rc -eq 0 ] || { cat "$T/out/r2.stderr"; pfk8s_die "node-2 (healthy) exited $rc, want 0"; }
agent 0 --expect-gpus 8
rc=$?
[ $rc -eq 1 ] || { cat "$T/out/r0.stderr"; pfk8s_die "node-0 exited $rc, want 1"; }
pfk8s_state "$T/s1.json"
pfk8s_check "$T/s1.json" '
mine = lambda n: [t for t in node(n).get("spec", {}).get("taints", []) if t["key"] == "efa-preflight.io/unhealthy"]
assert not mine("node-2"), ("a passing node kept our taint", node("node-2")["spec"])
# warn: ProviderFallback (tcp stands in for EFA here); a pass class all the same
assert labels("node-2")["efa-preflight.io/status"] == "warn", labels("node-2")
assert labels("node-0")["efa-preflight.io/status"] == "fail", labels("node-0")
assert cond("node-0", "EFADevicesReady")["reason"] == "GPUCountMismatch", cond("node-0", "EFADevicesReady")
assert not mine("node-0"), "node-0 was tainted beyond the cap"
assert any(t["key"] == "nvidia.com/gpu" for t in node("node-0")["spec"]["taints"]), "other taints lost"
ev = events("node-0")
assert len(ev) == 1 and "not tainted: 2 of 10 nodes already carry efa-preflight.io/unhealthy" in ev[0]["message"] \
    and "max_tainted 20% allows 2" in ev[0]["message"], ev
assert "sagemaker.amazonaws.com/node-health-status" not in labels("node-0"), labels("node-0")
print("at the cap: node-0 labelled fail, not tainted; Event: ...%s" % ev[0]["message"][-110:])
'

# 2. Under a larger cap, with HyperPod recovery asked for.
agent 1 --expect-gpus 8 --max-tainted 30% --on-fail-action hyperpod-replace
rc=$?
[ $rc -eq 1 ] || { cat "$T/out/r1.stderr"; pfk8s_die "node-1 exited $rc, want 1"; }
pfk8s_state "$T/s2.json"
pfk8s_check "$T/s2.json" '
mine = [t for t in node("node-1")["spec"]["taints"] if t["key"] == "efa-preflight.io/unhealthy"]
assert len(mine) == 1 and mine[0]["effect"] == "NoSchedule", node("node-1")["spec"]
l = labels("node-1")
assert l["efa-preflight.io/status"] == "fail", l
assert l["sagemaker.amazonaws.com/node-health-status"] == "UnschedulablePendingReplacement", l
assert "sagemaker.amazonaws.com/node-health-status" not in labels("node-0"), labels("node-0")
print("under 30%%: node-1 tainted and %s" % l["sagemaker.amazonaws.com/node-health-status"])
'
pfk8s_no_token_in "$T/out"
echo "PASS"
