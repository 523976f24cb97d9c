#!/bin/bash
# The gangs of today's training controllers, as their pods really look
# (labels, annotations, owner references; docs/install/gangs.md has each
# as an example): a Kubeflow PyTorchJob (master + worker), a Kubeflow
# Trainer TrainJob (its JobSet: one replicated job "node", an Indexed Job
# of 2), a LeaderWorkerSet group (leader and worker of different
# StatefulSets, the group size annotated) and a Volcano Job (its PodGroup
# annotation). For each, 2 agents in their own network namespaces
# (pfk8s-1..2) find each other through the fake API server: the selector
# the agent derives, the world size (the TrainJob's Job, the LWS
# annotation, the efa-preflight.io/world-size annotation of the
# PyTorchJob's template, --world-size for the Volcano Job), the group
# owner keying the rendezvous (both pods must agree), and every agent
# exits 0 with 2 ranks.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
pfk8s_netns_up 2

python3 - "$T/objects.json" <<'EOF'
import json, sys
objs = []
for i in range(2):
    objs.append({"kind": "Node", "apiVersion": "v1", "metadata": {
        "name": "node-%d" % i, "labels": {"kubernetes.io/hostname": "node-%d" % i,
            "node.kubernetes.io/instance-type": "test.fake", "topology.kubernetes.io/zone": "us-east-1a"}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2025-12-01T00:00:00Z"}]}})
def pod(ns, name, i, labels, owner, annotations=None):
    md = {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [owner]}
    if annotations:
        md["annotations"] = annotations
    objs.append({"kind": "Pod", "apiVersion": "v1", "metadata": md,
                 "spec": {"nodeName": "node-%d" % i},
                 "status": {"phase": "Pending", "podIP": "10.254.40.%d" % (11 + i)}})
# Kubeflow PyTorchJob (training-operator v1): llama-master-0, llama-worker-0.
ptj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llama",
       "uid": "0b9d6a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "controller": True, "blockOwnerDeletion": True}
for i, (rtype, idx) in enumerate((("master", 0), ("worker", 0))):
    # the job template's annotation (docs/install/gangs.md) gives the size
    pod("pt", "llama-%s-%d" % (rtype, idx), i, {
        "training.kubeflow.org/job-name": "llama", "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": str(idx),
        **({"training.kubeflow.org/job-role": "master"} if rtype == "master" else {})}, ptj,
        {"efa-preflight.io/world-size": "2"})
# Kubeflow Trainer v2 TrainJob "qwen": a JobSet of the same name, replicated
# job "node", one Indexed Job qwen-node-0 of 2 pods.
objs.append({"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "qwen-node-0", "namespace": "tj"},
             "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed"}})
for i in range(2):
    pod("tj", "qwen-node-0-%d-x7k2p" % i, i, {
        "jobset.sigs.k8s.io/jobset-name": "qwen", "jobset.sigs.k8s.io/jobset-uid": "3c4d5e6f-0a1b-4c2d-9e8f-7a6b5c4d3e2f",
        "jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/job-index": "0", "jobset.sigs.k8s.io/job-key": "5d0c7d9e",
        "batch.kubernetes.io/job-completion-index": str(i), "batch.kubernetes.io/job-name": "qwen-node-0",
        "batch.kubernetes.io/controller-uid": "9a8b7c6d-1111-2222-3333-444455556666",
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "qwen-node-0",
         "uid": "9a8b7c6d-1111-2222-3333-444455556666", "controller": True},
        {"batch.kubernetes.io/job-completion-index": str(i)})
# LeaderWorkerSet "vllm", group 1 of size 2: leader vllm-1 (the leader
# StatefulSet vllm), worker vllm-1-1 (the group's StatefulSet vllm-1).
for i, (name, sts, uid) in enumerate((("vllm-1", "vllm", "5a5a5a5a-0000-4000-8000-000000000001"),
                                      ("vllm-1-1", "vllm-1", "5a5a5a5a-0000-4000-8000-000000000002"))):
    pod("lws", name, i, {
        "leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "1",
        "leaderworkerset.sigs.k8s.io/worker-index": str(i),
        "leaderworkerset.sigs.k8s.io/group-key": "689ad1b7e4d7c2f0a1b2c3d4e5f60718293a4b5c",
        "apps.kubernetes.io/pod-index": str(i)},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": sts, "uid": uid, "controller": True},
        {"leaderworkerset.sigs.k8s.io/size": "2"})
# Another LWS group (group 0) that must not be taken for a peer.
pod("lws", "vllm-0", 0, {"leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index": "0",
    "leaderworkerset.sigs.k8s.io/worker-index": "0", "leaderworkerset.sigs.k8s.io/group-key": "0f0f"},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "vllm", "uid": "5a5a5a5a-0000-4000-8000-000000000001",
     "controller": True}, {"leaderworkerset.sigs.k8s.io/size": "2"})
# Volcano Job "nccl" (batch.volcano.sh/v1alpha1), task "worker", its PodGroup nccl.
for i in range(2):
    pod("vc", "nccl-worker-%d" % i, i, {
        "volcano.sh/job-name": "nccl", "volcano.sh/job-namespace": "vc", "volcano.sh/queue-name": "default",
        "volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(i)},
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "nccl",
         "uid": "7e8f9a0b-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "controller": True, "blockOwnerDeletion": True},
        {"scheduling.k8s.io/group-name": "nccl", "volcano.sh/job-name": "nccl", "volcano.sh/task-spec": "worker"})
json.dump(objs, open(sys.argv[1], "w"), indent=1)
EOF
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json"
pfk8s_netns_check

# gang NS WANT_SELECTOR OWNER_KIND POD0 POD1 [agent args]
gang() {
    local ns=$1 sel=$2 owner=$3 p0=$4 p1=$5 i p rc pids="" pod
    shift 5
    for i in 0 1; do
        pod=$p0; [ $i = 1 ] && pod=$p1
        ip netns exec "pfk8s-$((i + 1))" env POD_NAME="$pod" POD_NAMESPACE="$ns" \
            POD_IP="10.254.40.$((11 + i))" \
            "$PF_BIN" run --api-server "https://$PFK8S_HOST_IP:$PFK8S_API_PORT" \
            --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
            --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
            -b 64K -e 256K -n 2 -w 1 --timeout 40 "$@" \
            --report "$T/out/$ns-$i.json" -vv > "$T/out/$ns-$i.stdout" 2> "$T/out/$ns-$i.stderr" &
        pids="$pids $!"
    done
    i=0
    for p in $pids; do
        wait "$p"; rc=$?
        [ $rc -eq 0 ] || { tail -20 "$T/out/$ns-$i.stderr"; pfk8s_die "$ns: agent $i exited $rc, want 0"; }
        grep -qF "selector '$sel', world 2" "$T/out/$ns-$i.stderr" \
            || pfk8s_die "$ns: agent $i did not use selector '$sel' and world 2: $(grep -m1 'k8s: pod' "$T/out/$ns-$i.stderr")"
        python3 - "$T/out/$ns-$i.json" <<'PY' || pfk8s_die "$ns: agent $i's report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["collective"]["nranks"] == 2 and r["collective"]["nnodes"] == 2, r["collective"]
PY
        i=$((i + 1))
    done
    # The group owner keys the rendezvous (its uid is not logged, only its
    # kind): both signed with it and accepted each other's HELLO.
    for i in 0 1; do
        grep -qF "HELLOs signed with a key from the $owner's uid" "$T/out/$ns-$i.stderr" \
            || pfk8s_die "$ns: agent $i did not key the rendezvous with the $owner: $(grep -m1 'HELLOs' "$T/out/$ns-$i.stderr")"
    done
    echo "ok   $ns: 2 agents, selector $sel, rendezvous keyed by the $owner, exit 0"
}

gang pt "training.kubeflow.org/job-name=llama" PyTorchJob \
    llama-master-0 llama-worker-0
gang tj "jobset.sigs.k8s.io/jobset-name=qwen,jobset.sigs.k8s.io/replicatedjob-name=node" \
    JobSet qwen-node-0-0-x7k2p qwen-node-0-1-x7k2p
gang lws "leaderworkerset.sigs.k8s.io/name=vllm,leaderworkerset.sigs.k8s.io/group-index=1" \
    LeaderWorkerSet vllm-1 vllm-1-1
gang vc "volcano.sh/job-name=nccl" Job \
    nccl-worker-0 nccl-worker-1 --world-size 2
pfk8s_no_token_in "$T/out"
echo "PASS"
