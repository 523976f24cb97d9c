#!/bin/bash
# k8s discovery says who it waits for while the pod watch is quiet: a
# 2-pod JobSet whose 2nd pod was never created; the agent that exists, at
# the default log level with --progress-interval 2 and --timeout 9, prints
# progress lines naming the missing pod while no watch event arrives, then
# exits 3 (PeerTimeout) as before. Then rank 1 of a JobSet whose rank 0
# was never created (rank 0's pod deleted, rank 1's created): it watches
# rank 0's pod alone, and says so. Real side: the chart's RBAC
# (initcontainer), tokens bound to the pods.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_jobset 0:127.0.0.1 1:x

waiter() {   # waiter TAG I TIMEOUT: the agent of JobSet pod I waits in vain (exit 3)
    local rc
    "$PF_BIN" run --api-server "$KUBE_API" \
        --token-file "$T/token-$2" --ca-file "$KUBE_CA" \
        --pod-name "train-workers-$2-0-p$2" --namespace ml --port "$KUBE_RDV_PORT" \
        --fabric-provider tcp --engine host --timeout "$3" --no-imds \
        --progress-interval 2 --no-publish >"$T/out/$1.stdout" 2>"$T/out/$1.stderr"
    rc=$?
    [ $rc -eq 3 ] || { cat "$T/out/$1.stderr"; kube_die "$1: agent exit $rc, want 3"; }
}

waiter a 0 9
n=$(grep -c 'progress: waiting for pods: 1 of 2 peer pods have a podIP, missing train-workers-1-0-\* (rank 1, not created); [0-9]* s left' "$T/out/a.stderr")
[ "$n" -ge 3 ] || { cat "$T/out/a.stderr"; kube_die "$n progress lines naming the missing pod in 9 s, want >= 3"; }
grep -q $'\r' "$T/out/a.stderr" && kube_die "a carriage return on a stderr that is no terminal"
echo "ok   $n progress lines naming train-workers-1-0-* while the watch was quiet, e.g.:"
grep -m1 'progress:' "$T/out/a.stderr" | sed 's/^/     /'

# Rank 1 (a follower) while rank 0 was never created: rank 0's pod gone,
# rank 1's created at 127.0.0.1, owned by its Job.
kube_delete_pod ml train-workers-0-0-p0
job_uid=$(kube_call GET /apis/batch/v1/namespaces/ml/jobs/train-workers-1 |
          python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"].get("uid", "job-uid-1"))') ||
    kube_die "no Job train-workers-1"
kube_pod "$(PYTHONPATH=$KUBE_LIB python3 -c '
import json, sys
from kube_objects import jobset_labels
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "train-workers-1-0-p1", "namespace": "ml", "labels": jobset_labels(1, 2),
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train-workers-1",
                         "uid": sys.argv[1], "controller": True}]},
    "spec": {"nodeName": "node-1", "restartPolicy": "Never",
             "serviceAccountName": "efa-preflight-job",
             "automountServiceAccountToken": False,
             "containers": [{"name": "train", "image": "registry.invalid/train"}]}}))' "$job_uid")" 127.0.0.1
kube_token ml efa-preflight-job train-workers-1-0-p1 > "$T/token-1"
waiter b 1 7   # the follower
n=$(grep -c 'progress: waiting for rank 0: its pod has no podIP yet, missing train-workers-0-0-' "$T/out/b.stderr")
[ "$n" -ge 2 ] || { cat "$T/out/b.stderr"; kube_die "$n follower progress lines naming rank 0's pod, want >= 2"; }
grep -q 'peer pods have a podIP' "$T/out/b.stderr" && kube_die "a follower counted the group's pods"
echo "ok   rank 1 (follower): $n lines naming rank 0's missing pod, e.g.:"
grep -m1 'progress:' "$T/out/b.stderr" | sed 's/^/     /'
kube_no_token_in "$T/out"
echo "PASS"
