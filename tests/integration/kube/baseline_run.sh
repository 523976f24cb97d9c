#!/bin/bash
# A k8s gang run feeds the fleet baseline: 3 agents in network-namespace
# "pods" (fake API server, JobSet pods, as test_k8s_jobset.sh) pass; the
# leader alone (rank 0, the one that read the baseline before the
# collective) folds the run's median pair link and ring busbw into the
# baseline ConfigMap: one write, pair and ring keys with runs 1. A second
# run reads it back (its report names the ConfigMap) and folds again.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
pfk8s_init
T=$PFK8S_TMP
N=3

pfk8s_jobset_up $N

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
    pfk8s_state "$T/$1.json"
    python3 - "$T/$1.json" "$2" "$3" <<'PY' || pfk8s_die "$1: the baseline ConfigMap is not what the leader folded"
import json, sys
s, runs, writes = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
cm = [c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-baseline"]
assert len(cm) == 1, "no baseline ConfigMap"
kinds = {}
for k, v in cm[0]["data"].items():
    e = json.loads(v)
    kinds[e["kind"]] = e
    assert e["type"] == "test.fake" and e["runs"] == runs, (k, e)
assert set(kinds) == {"pair", "ring"}, kinds
assert kinds["ring"]["nodes"] == 4, kinds["ring"]
w = [r for r in s["requests"] if r["method"] in ("POST", "PUT")
     and "/configmaps" in r["path"] and r["status"] < 300]
assert len(w) == writes, w
print("ok   %s: ConfigMap keys %s, runs %d, %d write(s) in all" %
      (sys.argv[1].split("/")[-1], sorted(cm[0]["data"]), runs, len(w)))
PY
}

run_all first
check_cm first 1 1
grep -q "baseline: folded 2 value(s) into ConfigMap efa-preflight/efa-preflight-baseline" \
    "$T/out/first-0.stderr" || pfk8s_die "the leader did not say it folded"
run_all second
check_cm second 2 2
grep -q '"source":.*"ConfigMap efa-preflight/efa-preflight-baseline"' "$T/out/second-0.json" ||
    pfk8s_die "the second run's leader did not read the ConfigMap back"
echo "ok   the second run read it back and folded again"
