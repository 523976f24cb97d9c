#!/bin/bash
# A k8s gang run feeds the fleet baseline: 3 agents in network-namespace
# "pods" (JobSet pods, as the jobset scenario) pass; the
# leader alone (rank 0, the one that read the baseline before the
# collective) folds the run's median pair link and ring busbw into the
# baseline ConfigMap: one write, pair and ring keys with runs 1. A second
# run reads it back (its report names the ConfigMap) and folds again.
# Real side: the chart's RBAC (initcontainer), tokens bound to the pods.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
N=3
kube_init $N --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_jobset $(for i in $(seq 0 $((N - 1))); do echo "$i:$(kube_pod_ip $((i + 1)))"; done)

run_all() {   # run_all TAG
    local i pids=""
    for i in $(seq 0 $((N - 1))); do
        kube_jobset_agent "$i" "$1-$i" --instance-type test.fake --debug-floor-any-provider \
            -b 256K -e 256K -n 2 -w 1 --timeout 40 -v
        pids="$pids $KUBE_AGENT_PID"
    done
    kube_wait_pids 0 "$T/out/$1" "$1: agent" $pids
}

check_cm() {   # check_cm TAG RUNS WRITES
    kube_state "$T/$1.json"
    kube_check "$T/$1.json" '
tag, runs, nwrites = "'"$1"'", '"$2"', '"$3"'
cm = [c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-baseline"]
assert len(cm) == 1, "no baseline ConfigMap"
kinds = {}
for k, v in cm[0]["data"].items():
    e = json.loads(v)
    kinds[e["kind"]] = e
    assert e["type"] == "test.fake" and e["runs"] == runs, (k, e)
assert set(kinds) == {"pair", "ring"}, kinds
assert kinds["ring"]["nodes"] == 4, kinds["ring"]
w = [x for x in writes(ok=True) if x[0] in ("POST", "PUT") and "/configmaps" in x[1]]
assert len(w) == nwrites, w
print("ok   %s: ConfigMap keys %s, runs %d, %d write(s) in all" %
      (tag, sorted(cm[0]["data"]), runs, len(w)))
' || kube_die "$1: the baseline ConfigMap is not what the leader folded"
}

run_all first
check_cm first 1 1
grep -q "baseline: folded 2 value(s) into ConfigMap efa-preflight/efa-preflight-baseline" \
    "$T/out/first-0.stderr" || kube_die "the leader did not say it folded"
run_all second
check_cm second 2 2
grep -q '"source":.*"ConfigMap efa-preflight/efa-preflight-baseline"' "$T/out/second-0.json" ||
    kube_die "the second run's leader did not read the ConfigMap back"
echo "ok   the second run read it back and folded again"
kube_no_token_in "$T/out"
echo "PASS"
