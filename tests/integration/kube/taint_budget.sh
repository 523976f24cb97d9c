#!/bin/bash
# --max-tainted holds when many nodes fail in the same second. Twenty
# Nodes; AGENTS agents (default 10), one per node, all started at once and
# all failing their own checks (GPUCountMismatch: --expect-gpus 8 on a host
# with none). Every Node list page is slowed by 200 ms (pages of 8), so
# every agent is between its count and its write at the same time: a
# count-then-write cap lets them all through. Each round starts from clean Nodes and no budget:
#   A  --taint-on-failure --max-tainted 2        exactly 2 nodes tainted
#   B  --on-fail-action hyperpod-reboot --max-tainted 1
#                                                 exactly 1 node labelled
# (ROUNDS rounds of each, default 10). The taint budget ConfigMap ends
# naming exactly the marked nodes; every other failing node's Event and
# report say TaintCapReached. Then the budget's life: a marked node that
# passes gives its slot back; a budget the agent may not write (403 on the
# ConfigMap) taints nobody and says TaintBudgetUnavailable; the default
# 20% lets one node of a 4-node cluster be tainted.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
AGENTS=${PF_BUDGET_AGENTS:-10}
ROUNDS=${PF_BUDGET_ROUNDS:-10}
NODES=20
BUDGET_NS=efa-preflight
BUDGET=efa-preflight-taint-budget

specs=""
for i in $(seq 0 $((NODES - 1))); do specs="$specs $i:127.0.0.1"; done
# shellcheck disable=SC2086
pfk8s_jobset_objects "$T/objects.json" $specs
python3 - "$T/objects.json" "$T/nodes.json" <<'PY'
import json, sys
objs = json.load(open(sys.argv[1]))
# One single-pod Job per node, no JobSet: each agent is rank 0 of 1.
for o in objs:
    if o["kind"] == "Pod":
        for k in list(o["metadata"]["labels"]):
            if k.startswith("jobset.sigs.k8s.io/"):
                del o["metadata"]["labels"][k]
json.dump(objs, open(sys.argv[1], "w"))
json.dump([o for o in objs if o["kind"] == "Node"], open(sys.argv[2], "w"))
PY
cat > "$T/faults.json" <<'EOF'
[{"method": "GET", "path": "^/api/v1/nodes$", "latency_ms": 200, "count": 1000000}]
EOF
# No state file: rewriting it after every write of 28 agents is what
# would take the time.
# Node lists come in pages of 8 (limit/continue): the count spans pages.
pfk8s_server 127.0.0.1 "$T/objects.json" --faults "$T/faults.json" --dump "" --page-size 8

agent() {   # agent NODE_INDEX OUT_TAG [extra args]
    local i=$1 tag=$2
    shift 2
    "$PF_BIN" run \
        --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
        --pod-name "train-workers-$i-0-p$i" --namespace ml --node-name "node-$i" \
        --peer-selector "batch.kubernetes.io/job-name=train-workers-$i" --world-size 1 \
        --bind-addr 127.0.0.1 --port "$PFK8S_RDV_PORT" --fabric-provider shm --engine host \
        -b 64K -e 64K -n 1 -w 0 --timeout 30 \
        --report "$T/out/$tag-$i.json" "$@" \
        > "$T/out/$tag-$i.stdout" 2> "$T/out/$tag-$i.stderr"
}

reset() {   # clean Nodes, no budget
    pfk8s_admin POST /objects "$(cat "$T/nodes.json")"
    pfk8s_admin DELETE "/objects/ConfigMap/$BUDGET_NS/$BUDGET"
}

# check_round TAG MODE CAP: exactly CAP nodes marked, the budget names
# them, every agent exited 1, the unmarked ones say TaintCapReached.
check_round() {
    pfk8s_state "$T/state.json"
    python3 - "$T/state.json" "$T/out" "$1" "$2" "$3" "$AGENTS" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
out, tag, mode, cap, agents = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
def marked(n):
    if mode == "taint":
        return any(t["key"] == "efa-preflight.io/unhealthy"
                   for t in n.get("spec", {}).get("taints", []))
    return n["metadata"].get("labels", {}).get(
        "sagemaker.amazonaws.com/node-health-status") == "UnschedulablePendingReboot"
m = sorted(n["metadata"]["name"] for n in s["nodes"] if marked(n))
if len(m) > cap:
    print("FAIL: %s: %d nodes marked over a cap of %d: %s" % (tag, len(m), cap, m))
    sys.exit(1)
if len(m) != cap:
    print("FAIL: %s: %d nodes marked, want exactly %d (the budget was free)" % (tag, len(m), cap))
    sys.exit(1)
cms = [c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-taint-budget"]
assert len(cms) == 1 and cms[0]["metadata"]["namespace"] == "efa-preflight", cms
held = sorted(cms[0].get("data", {}))
assert held == m, ("budget holds %s, marked %s" % (held, m))
withheld = 0
for i in range(agents):
    r = json.load(open("%s/%s-%d.json" % (out, tag, i)))
    reasons = [c["reason"] for c in r["checks"]]
    assert "GPUCountMismatch" in reasons, (i, reasons)
    if "node-%d" % i in m:
        assert "TaintCapReached" not in reasons, (i, reasons)
    else:
        assert "TaintCapReached" in reasons, (i, reasons)
        withheld += 1
assert withheld == agents - cap, (withheld, agents, cap)
print("%s: %d of %d failing nodes marked (%s), budget %s" % (tag, len(m), agents, ",".join(m), ",".join(held)))
PY
}

start=$(date +%s.%N)
for mode in taint hyperpod; do
    for r in $(seq 1 "$ROUNDS"); do
        reset
        tag="$mode$r"
        if [ $mode = taint ]; then extra="--taint-on-failure --max-tainted 2"; cap=2
        else extra="--on-fail-action hyperpod-reboot --max-tainted 1"; cap=1; fi
        pids=""
        for i in $(seq 0 $((AGENTS - 1))); do
            # shellcheck disable=SC2086
            agent "$i" "$tag" --expect-gpus 8 $extra &
            pids="$pids $!"
        done
        bad=0
        for p in $pids; do wait "$p"; rc=$?; [ $rc -eq 1 ] || bad=$rc; done
        [ $bad -eq 0 ] || { tail -n 5 "$T"/out/"$tag"-*.stderr; pfk8s_die "$tag: an agent exited $bad, want 1"; }
        check_round "$tag" "$mode" "$cap"
    done
done
echo "$((2 * ROUNDS)) rounds of $AGENTS agents failing at once: never over the cap, in $(pfk8s_elapsed "$start") s"

# The budget's life, one agent at a time under --max-tainted 1: node-0
# takes the one slot, node-1 finds it held.
reset
agent 0 slot --expect-gpus 8 --taint-on-failure --max-tainted 1
[ $? -eq 1 ] || pfk8s_die "node-0 did not fail"
agent 1 slot --expect-gpus 8 --taint-on-failure --max-tainted 1
[ $? -eq 1 ] || pfk8s_die "node-1 did not fail"
slots='
cm = next(c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-taint-budget")
slots = sorted(cm["data"])
'
pfk8s_state "$T/s1.json"
pfk8s_check "$T/s1.json" "$slots"'
assert slots == ["node-0"], cm["data"]
ev = events("node-1")[-1]["message"]
assert "not tainted: 1 of 20 nodes already carry efa-preflight.io/unhealthy" in ev and "max_tainted 1 allows 1" in ev, ev
'
# node-0 passes: its taint and its slot go; node-1 may then take the slot.
agent 0 slot --taint-on-failure --max-tainted 1
[ $? -eq 0 ] || { cat "$T/out/slot-0.stderr"; pfk8s_die "node-0 did not pass"; }
agent 1 slot --expect-gpus 8 --taint-on-failure --max-tainted 1
[ $? -eq 1 ] || pfk8s_die "node-1 did not fail"
pfk8s_state "$T/s2.json"
pfk8s_check "$T/s2.json" "$slots"'
assert slots == ["node-1"], cm["data"]
mine = lambda n: [t for t in node(n)["spec"]["taints"] if t["key"] == "efa-preflight.io/unhealthy"]
assert not mine("node-0") and mine("node-1"), (node("node-0")["spec"], node("node-1")["spec"])
print("a passing node gave its slot back; the next failing node took it")
'

# A budget that cannot be written: 403 on every ConfigMap write. The node
# is labelled fail, not tainted; Event and report say why.
reset
pfk8s_admin POST /faults '[{"method": "PUT", "path": "/configmaps", "status": 403, "count": 100},
                           {"method": "POST", "path": "/configmaps", "status": 403, "count": 100}]'
agent 2 deny --expect-gpus 8 --taint-on-failure --max-tainted 5
[ $? -eq 1 ] || pfk8s_die "node-2 did not fail"
grep -q "warn.*not marked: taint budget efa-preflight/efa-preflight-taint-budget" "$T/out/deny-2.stderr" ||
    { cat "$T/out/deny-2.stderr"; pfk8s_die "no warning for the unwritable budget"; }
pfk8s_state "$T/s3.json"
pfk8s_check "$T/s3.json" '
assert labels("node-2")["efa-preflight.io/status"] == "fail", labels("node-2")
assert not [t for t in node("node-2")["spec"]["taints"] if t["key"] == "efa-preflight.io/unhealthy"], node("node-2")["spec"]
ev = events("node-2")[-1]["message"]
assert "not tainted: the taint budget efa-preflight/efa-preflight-taint-budget could not be taken" in ev and "configmaps" in ev, ev
r = json.load(open("'"$T"'/out/deny-2.json"))
w = [c for c in r["checks"] if c["reason"] == "TaintBudgetUnavailable"]
assert len(w) == 1 and w[0]["status"] == "warn", r["checks"]
print("budget unwritable (403): not tainted; Event: ...%s" % ev[-90:])
'

# The default 20% in a 4-node cluster allows one node (it rounded to 0).
pfk8s_admin POST /faults '[]'
reset
for i in $(seq 4 $((NODES - 1))); do pfk8s_admin DELETE "/objects/Node/-/node-$i"; done
agent 3 small --expect-gpus 8 --taint-on-failure
[ $? -eq 1 ] || pfk8s_die "node-3 did not fail"
pfk8s_state "$T/s4.json"
pfk8s_check "$T/s4.json" '
assert len(s["nodes"]) == 4, [n["metadata"]["name"] for n in s["nodes"]]
assert [t for t in node("node-3")["spec"]["taints"] if t["key"] == "efa-preflight.io/unhealthy"], node("node-3")["spec"]
print("default 20%% of 4 nodes: one node tainted")
'
pfk8s_reports_valid "$T"/out/*.json
pfk8s_no_token_in "$T/out"
echo "PASS"
