#!/bin/bash
# Kubernetes discovery at scale: API requests and bytes per agent for an
# Indexed Job of N pods (N = 64, 256, 1024 by default), against the fake
# API server (tests/fakes/apiserver), which logs every request with the
# response bytes it sent and a hash of the caller's token.
#
# Per N: the Job and N pods, all Pending without a podIP (an initContainer
# gate as the pods start); two agents start, rank 0 (the leader) and rank
# N/2 (a non-leader), each with its own token; then the pods get their IPs
# in batches of 64 every 50 ms, rank 0's last (the worst case for the
# non-leader, which waits for exactly that). An agent's discovery ends with
# its log line "discover: k8s bootstrap, rank R of N" (its time is given
# from the moment rank 0's podIP was written); the agents are then stopped
# (the other ranks never run, so the rendezvous is not measured).
# Pods are shaped like real ones (~3.5 KB of JSON: containers, env, volumes,
# conditions, container statuses; no managedFields).
#
# usage: bench/scale_k8s.sh [N...]     prints a Markdown table
# env:   PF_BIN (build/efa-preflight), KEEP=1 keeps the temp dir
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
export PF_ROOT=$root
export PF_BIN=${PF_BIN:-$root/build/efa-preflight}
sizes=${*:-64 256 1024}
. "$root/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
[ -n "${KEEP:-}" ] && PFK8S_KEEP=1 && echo "keeping $T" >&2

objects() {   # objects N FILE: the Job and N Pending pods without IPs
    python3 - "$1" "$2" <<'EOF'
import json, sys
n, out = int(sys.argv[1]), sys.argv[2]
objs = [{"kind": "Job", "apiVersion": "batch/v1",
         "metadata": {"name": "bench", "namespace": "ml",
                      "labels": {"app": "bench"}},
         "spec": {"completions": n, "parallelism": n,
                  "completionMode": "Indexed"}}]
for i in range(n):
    objs.append({"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": "bench-%d-x7k2p" % i, "namespace": "ml",
        "generateName": "bench-%d-" % i,
        "labels": {"batch.kubernetes.io/job-name": "bench",
                   "batch.kubernetes.io/job-completion-index": str(i),
                   "batch.kubernetes.io/controller-uid": "7f0c3e6a-1b2d-4c5e-8f90-0a1b2c3d4e5f",
                   "controller-uid": "7f0c3e6a-1b2d-4c5e-8f90-0a1b2c3d4e5f",
                   "job-name": "bench"},
        "annotations": {"batch.kubernetes.io/job-completion-index": str(i)},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                             "name": "bench", "uid": "7f0c3e6a-1b2d-4c5e-8f90-0a1b2c3d4e5f",
                             "controller": True, "blockOwnerDeletion": True}]},
        "spec": {
            "nodeName": "node-%d" % i, "hostname": "bench-%d" % i,
            "subdomain": "bench", "restartPolicy": "Never",
            "serviceAccountName": "efa-preflight-job",
            "initContainers": [{
                "name": "efa-preflight", "image": "public.ecr.aws/example/efa-preflight:0.1.0-full",
                "command": ["efa-preflight", "run"],
                "env": [{"name": k, "valueFrom": {"fieldRef": {"fieldPath": f}}}
                        for k, f in (("POD_NAME", "metadata.name"),
                                     ("POD_NAMESPACE", "metadata.namespace"),
                                     ("NODE_NAME", "spec.nodeName"),
                                     ("POD_IP", "status.podIP"))],
                "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
                              "requests": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}},
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}],
            "containers": [{
                "name": "train", "image": "public.ecr.aws/example/train:2026.11",
                "command": ["torchrun", "--nproc-per-node=8", "train.py"],
                "env": [{"name": "NCCL_DEBUG", "value": "WARN"},
                        {"name": "FI_PROVIDER", "value": "efa"},
                        {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"}],
                "resources": {"limits": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"},
                              "requests": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}},
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "vpc.amazonaws.com/efa", "operator": "Exists", "effect": "NoSchedule"}]},
        "status": {"phase": "Pending", "qosClass": "Guaranteed",
                   "conditions": [{"type": "PodScheduled", "status": "True",
                                   "lastTransitionTime": "2026-11-24T00:00:00Z"}],
                   "initContainerStatuses": [{"name": "efa-preflight", "ready": False,
                                              "restartCount": 0, "image": "public.ecr.aws/example/efa-preflight:0.1.0-full",
                                              "imageID": "", "state": {"waiting": {"reason": "PodInitializing"}}}]}})
json.dump(objs, open(out, "w"))
EOF
}

rollout() {   # rollout N: give every pod an IP, 64 at a time, rank 0 last
    python3 - "$1" "$PFK8S_ADMIN_PORT" <<'EOF'
import json, sys, time, urllib.request
n, port = int(sys.argv[1]), int(sys.argv[2])
state = json.load(urllib.request.urlopen("http://127.0.0.1:%d/state" % port))
pods = {p["metadata"]["name"]: p for p in state["pods"]}
order = ["bench-%d-x7k2p" % i for i in list(range(1, n)) + [0]]
for s in range(0, n, 64):
    batch = []
    for name in order[s:s + 64]:
        p = pods[name]
        p["status"]["podIP"] = "127.0.0.1"
        p["status"]["podIPs"] = [{"ip": "127.0.0.1"}]
        p["status"]["hostIP"] = "10.254.%d.%d" % (int(name.split("-")[1]) // 250, int(name.split("-")[1]) % 250 + 1)
        batch.append(p)
    req = urllib.request.Request("http://127.0.0.1:%d/objects" % port,
                                 data=json.dumps(batch).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
    t = time.time() % 86400       # just after a batch was stored
    time.sleep(0.05)
print("%.3f" % t)
EOF
}

token_for() {   # token_for NAME: a fresh admin token in $T/NAME.token
    printf 'eyJhbGciOiJSUzI1NiJ9.%s' "$(openssl rand -hex 24)" > "$T/$1.token"
}

agent() {   # agent NAME INDEX
    "$PF_BIN" run --bootstrap k8s --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$T/$1.token" --ca-file "$T/certs/ca.crt" \
        --pod-name "bench-$2-x7k2p" --namespace ml --pod-ip 127.0.0.1 \
        --port "$PFK8S_RDV_PORT" --engine host --fabric-provider tcp \
        --no-imds --no-publish --timeout 120 -v \
        > "$T/out/$1.stdout" 2> "$T/out/$1.stderr"
}

rows=""
for n in $sizes; do
    objects "$n" "$T/objects-$n.json"
    token_for leader
    token_for follower
    [ -n "$PFK8S_SERVER_PID" ] && kill "$PFK8S_SERVER_PID" 2>/dev/null && wait "$PFK8S_SERVER_PID" 2>/dev/null
    pfk8s_server 127.0.0.1 "$T/objects-$n.json"
    pfk8s_admin POST /tokens "{\"$(cat "$T/leader.token")\":\"admin\",\"$(cat "$T/follower.token")\":\"admin\"}"
    agent leader 0 & pl=$!
    agent follower $((n / 2)) & pf=$!
    sleep 1
    t0=$(date +%s.%N)
    last_ip=$(rollout "$n")
    for i in $(seq 1 600); do
        grep -q "discover: k8s bootstrap" "$T/out/leader.stderr" &&
            grep -q "discover: k8s bootstrap" "$T/out/follower.stderr" && break
        sleep 0.1
    done
    rolled=$(pfk8s_elapsed "$t0")
    # Stopped, not left to wait in a rendezvous the other ranks never join.
    kill -KILL "$pl" "$pf" 2>/dev/null
    wait "$pl" "$pf" 2>/dev/null
    for a in leader follower; do
        grep -q "discover: k8s bootstrap" "$T/out/$a.stderr" ||
            { tail -n 20 "$T/out/$a.stderr"; pfk8s_die "N=$n: the $a did not finish discovery"; }
    done
    pfk8s_state "$T/state-$n.json"
    row=$(python3 - "$T/state-$n.json" "$T/leader.token" "$T/follower.token" \
          "$T/out/leader.stderr" "$T/out/follower.stderr" "$n" "$last_ip" <<'EOF'
import hashlib, json, re, sys
s = json.load(open(sys.argv[1]))
n, last_ip = int(sys.argv[6]), float(sys.argv[7])
def who(path):
    return hashlib.sha256(open(path).read().encode()).hexdigest()[:12]
def secs(line):
    h, m, rest = line.split()[0].split(":")
    return int(h) * 3600 + int(m) * 60 + float(rest)
def disc(path):
    # seconds from the last podIP written (rank 0's) to the peer table
    done = next(l for l in open(path) if "discover: k8s bootstrap" in l)
    return secs(done) - last_ip
def kind(r):
    p = r["path"]
    return ("watch" if "watch=1" in p else "list" if "/pods?" in p else
            "job" if "/jobs/" in p else "pod" if "/pods/" in p else p)
out = [str(n)]
for tok, log in ((sys.argv[2], sys.argv[4]), (sys.argv[3], sys.argv[5])):
    reqs = [r for r in s["requests"] if r["who"] == who(tok)]
    kinds = {}
    for r in reqs:
        kinds[kind(r)] = kinds.get(kind(r), 0) + 1
    out += [str(len(reqs)), "%.1f" % (sum(r["bytes"] for r in reqs) / 1024.0),
            " ".join("%s %d" % kv for kv in sorted(kinds.items())),
            "%.2f" % disc(log)]
print("| " + " | ".join(out) + " |")
EOF
) || pfk8s_die "N=$n: cannot read the request log"
    rows="$rows$row"$'\n'
    echo "N=$n done (rollout + discovery ${rolled}s)" >&2
done

echo "| pods | leader requests | leader KiB | leader by kind | leader s after last IP | non-leader requests | non-leader KiB | non-leader by kind | non-leader s after last IP |"
echo "|---:|---:|---:|---|---:|---:|---:|---|---:|"
printf '%s' "$rows"
