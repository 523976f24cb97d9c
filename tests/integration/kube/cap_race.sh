#!/bin/bash
# The blast-radius cap when nodes fail together, against a real
# kube-apiserver (tests/kube_real): the chart's RBAC (the taint budget's
# ConfigMap Role included), ten Nodes, eight unrelated one-pod Jobs (no
# JobSet labels: each its own gang of one) on node-0..7 whose
# agents all fail their node checks at the same instant (--expect-gpus 8 on
# a host without GPUs) with --taint-on-failure --max-tainted 2. Each
# agent has its own TokenRequest token bound to its pod. Three rounds: never
# more than 2 nodes carry the taint, at least one does, and every failing
# node is labelled status=fail. Between rounds the taints and the budget
# ConfigMap are removed by the admin.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
"$PF_BIN" run --help 2>&1 | grep -q -- --taint-budget ||
    kr_skip "this agent has no --taint-budget: its cap is counted, not taken atomically, and is known to be exceeded when nodes fail together"
N=8 CAP=2 ROUNDS=${PF_KR_ROUNDS:-3}
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
for i in $(seq 0 9); do
    kr_node "node-$i" '{"kubernetes.io/hostname":"node-'$i'"}' '[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]'
done
KR_PODS=jobs kr_jobset_pods ml $N
for i in $(seq 0 $((N - 1))); do
    kr_pod_ip ml "train-workers-$i-0-p$i" 127.0.0.1
    kr_token ml efa-preflight-job "train-workers-$i-0-p$i" > "$T/token-$i"
done

for round in $(seq 1 "$ROUNDS"); do
    pids=""
    for i in $(seq 0 $((N - 1))); do
        "$PF_BIN" run --api-server "$KR_API" --token-file "$T/token-$i" --ca-file "$KR_CA" --no-imds \
            --pod-name "train-workers-$i-0-p$i" --namespace ml \
            --peer-selector "batch.kubernetes.io/job-name=train-workers-$i" --world-size 1 \
            --port "$(kr_free_port 127.0.0.1)" --fabric-provider tcp --engine host \
            -b 64K -e 64K -n 1 -w 0 --timeout 60 --expect-gpus 8 \
            --taint-on-failure --max-tainted $CAP --report "$T/out/r$round-$i.json" \
            > "$T/out/r$round-$i.stdout" 2> "$T/out/r$round-$i.stderr" &
        pids="$pids $!"
    done
    kube_wait_pids 1 "$T/out/r$round" "round $round: agent" $pids
    kr_state "$T/s$round.json"
    kr_check "$T/s$round.json" '
tainted = [n["metadata"]["name"] for n in s["nodes"]
           if any(t["key"] == "efa-preflight.io/unhealthy" for t in n.get("spec", {}).get("taints", []))]
assert 1 <= len(tainted) <= '$CAP', ("round '$round': tainted", tainted)
for i in range('$N'):
    assert labels("node-%d" % i)["efa-preflight.io/status"] == "fail", labels("node-%d" % i)
print("round '$round': %d failing at once, tainted: %s" % ('$N', " ".join(sorted(tainted))))
'
    # Reset: no taint of ours, no budget.
    for i in $(seq 0 9); do
        kr_ok PATCH "/api/v1/nodes/node-$i" --ctype application/merge-patch+json \
            --data '{"spec":{"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]}}'
    done
    kr_call DELETE /api/v1/namespaces/efa-preflight/configmaps/efa-preflight-taint-budget --ok 200,404 >/dev/null ||
        kr_die "deleting the budget"
done
kr_no_token_in "$T/out"
echo "PASS"
