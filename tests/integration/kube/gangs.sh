#!/bin/bash
# The gangs of today's training controllers, as their pods really look
# (labels, annotations, owner references; docs/install/gangs.md has each
# as an example): a Kubeflow PyTorchJob (master + worker), a Kubeflow
# Trainer TrainJob (its JobSet: one replicated job "node", an Indexed Job
# of 2), a LeaderWorkerSet group (leader and worker of different
# StatefulSets, the group size annotated) and a Volcano Job (its PodGroup
# annotation). For each, 2 agents in their own network namespaces
# find each other through the API server: the selector
# the agent derives, the world size (the TrainJob's Job, the LWS
# annotation, the efa-preflight.io/world-size annotation of the
# PyTorchJob's template, --world-size for the Volcano Job), the group
# owner keying the rendezvous (both pods must agree), and every agent
# exits 0 with 2 ranks. Real side: the chart's RBAC (initcontainer, the
# four namespaces), tokens bound to the pods.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
KUBE_NAMESPACES="pt tj lws vc" kube_init 2 --set mode=initcontainer --set 'jobNamespaces={pt,tj,lws,vc}'
for i in 0 1; do
    kube_node "node-$i" '{"kubernetes.io/hostname":"node-'$i'","node.kubernetes.io/instance-type":"test.fake","topology.kubernetes.io/zone":"us-east-1a"}'
done
# The TrainJob's Indexed Job of 2; its pods' owner reference and
# controller-uid label carry the uid the server gave it.
job='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"qwen-node-0","namespace":"tj"},"spec":{"parallelism":2,"completions":2,"completionMode":"Indexed","template":{"spec":{"restartPolicy":"Never","containers":[{"name":"train","image":"registry.invalid/train"}]}}}}'
if kube_fake; then
    kube_post_objects "${job/\"metadata\":\{/\"metadata\":{\"uid\":\"9a8b7c6d-1111-2222-3333-444455556666\",}"
else
    kr_ok POST /apis/batch/v1/namespaces/tj/jobs --data "$job"
fi
job_uid=$(kube_call GET /apis/batch/v1/namespaces/tj/jobs/qwen-node-0 |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["uid"])') ||
    kube_die "no Job qwen-node-0"

python3 - "$T/pods.json" "$job_uid" <<'EOF'
import json, sys
objs = []
def pod(ns, name, i, labels, owner, annotations=None):
    md = {"name": name, "namespace": ns, "labels": labels, "ownerReferences": [owner]}
    if annotations:
        md["annotations"] = annotations
    objs.append([i, {"kind": "Pod", "apiVersion": "v1", "metadata": md,
                     "spec": {"nodeName": "node-%d" % i, "restartPolicy": "Never",
                              "serviceAccountName": "efa-preflight-job",
                              "automountServiceAccountToken": False,
                              "containers": [{"name": "train", "image": "registry.invalid/train"}]}}])
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
for i in range(2):
    pod("tj", "qwen-node-0-%d-x7k2p" % i, i, {
        "jobset.sigs.k8s.io/jobset-name": "qwen", "jobset.sigs.k8s.io/jobset-uid": "3c4d5e6f-0a1b-4c2d-9e8f-7a6b5c4d3e2f",
        "jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
        "jobset.sigs.k8s.io/job-index": "0", "jobset.sigs.k8s.io/job-key": "5d0c7d9e",
        "batch.kubernetes.io/job-completion-index": str(i), "batch.kubernetes.io/job-name": "qwen-node-0",
        "batch.kubernetes.io/controller-uid": sys.argv[2],
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "qwen-node-0",
         "uid": sys.argv[2], "controller": True},
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
# Each pod, then its podIP; a token bound to each (pod i of a gang runs in
# pod namespace i + 1).
n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$T/pods.json")
for k in $(seq 0 $((n - 1))); do
    read -r i ns name < <(python3 -c 'import json, sys; i, p = json.load(open(sys.argv[1]))[int(sys.argv[2])]; print(i, p["metadata"]["namespace"], p["metadata"]["name"])' "$T/pods.json" "$k")
    kube_pod "$(python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[int(sys.argv[2])][1]))' "$T/pods.json" "$k")" "$(kube_pod_ip $((i + 1)))"
    kube_token "$ns" efa-preflight-job "$name" > "$T/token-$ns-$name"
done

# gang NS WANT_SELECTOR OWNER_KIND POD0 POD1 [agent args]
gang() {
    local ns=$1 sel=$2 owner=$3 p0=$4 p1=$5 i p rc pids="" pod
    shift 5
    for i in 0 1; do
        pod=$p0; [ $i = 1 ] && pod=$p1
        ip netns exec "$(kube_netns $((i + 1)))" env POD_NAME="$pod" POD_NAMESPACE="$ns" \
            POD_IP="$(kube_pod_ip $((i + 1)))" \
            "$PF_BIN" run --api-server "$KUBE_API" \
            --token-file "$T/token-$ns-$pod" --ca-file "$KUBE_CA" --no-imds \
            --port "$KUBE_RDV_PORT" --fabric-provider tcp --engine host \
            -b 64K -e 256K -n 2 -w 1 --timeout 40 "$@" \
            --report "$T/out/$ns-$i.json" -vv > "$T/out/$ns-$i.stdout" 2> "$T/out/$ns-$i.stderr" &
        pids="$pids $!"
    done
    i=0
    for p in $pids; do
        wait "$p"; rc=$?
        [ $rc -eq 0 ] || { tail -20 "$T/out/$ns-$i.stderr"; kube_die "$ns: agent $i exited $rc, want 0"; }
        grep -qF "selector '$sel', world 2" "$T/out/$ns-$i.stderr" \
            || kube_die "$ns: agent $i did not use selector '$sel' and world 2: $(grep -m1 'k8s: pod' "$T/out/$ns-$i.stderr")"
        python3 - "$T/out/$ns-$i.json" <<'PY' || kube_die "$ns: agent $i's report"
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
            || kube_die "$ns: agent $i did not key the rendezvous with the $owner: $(grep -m1 'HELLOs' "$T/out/$ns-$i.stderr")"
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
kube_no_token_in "$T/out"
echo "PASS"
