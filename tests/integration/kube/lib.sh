# One Kubernetes scenario, two API servers (sourced, bash). PF_KUBE_SIDE
# (set by tests/integration/run.sh from kube/scenarios) picks the side:
#   fake  tests/fakes/apiserver (server.py, pfk8s_* helpers)
#   real  etcd + kube-apiserver v1.20.2 (tests/kube_real, kr_* helpers)
# A scenario written against the kube_* functions below runs on either;
# what one side alone can do (inject a fault, read the audit log) sits
# behind kube_fake / kube_real.
#
#   kube_init N [helm args]  N "pod" network namespaces; the API server
#                         started (on the bridge when N > 0, else 127.0.0.1)
#                         with the namespaces efa-preflight, ml and
#                         KUBE_NAMESPACES; real: the chart's RBAC rendered
#                         with the helm args
#   kube_node NAME LABELS [TAINTS] [CONDITIONS]   a Node as its kubelet
#                         leaves it (Ready), CONDITIONS (JSON list) besides
#   kube_daemonset NS NAME / kube_job NS NAME   the owner; prints its uid
#   kube_pod JSON IP      a Pod, then its podIP as the kubelet reports it
#   kube_token NS SA POD  a token for the pod's service account (stdout)
#   kube_wait_watch NS    until the agent holds a pod watch in NS
#   kube_state FILE / kube_check FILE 'python'   the cluster's objects and
#                         assertions on them (kube/check.py: node, labels,
#                         cond, events, taints, refused)
#   kube_netns I / kube_pod_ip I   the namespace and address of pod I (1..N)
#   kube_die, kube_skip, kube_elapsed, kube_no_token_in
# Set by kube_init: T (a temp dir, out/ for logs), KUBE_API, KUBE_CA,
# KUBE_RDV_PORT.

KUBE_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Run by hand without PF_KUBE_SIDE: the first side the table names.
KUBE_SIDE=${PF_KUBE_SIDE:-$(awk -v n="$(basename "$0" .sh)" \
    '$1 == n { split($2, s, ","); print s[1] }' "$KUBE_LIB/scenarios")}
case $KUBE_SIDE in
    fake) . "$PF_ROOT/tests/fakes/apiserver/lib.sh" ;;
    real) . "$PF_ROOT/tests/kube_real/lib.sh"
          . "$PF_ROOT/tests/integration/lib_port.sh" ;;
    *) echo "FAIL: PF_KUBE_SIDE=$KUBE_SIDE (fake or real)"; exit 2 ;;
esac

kube_fake() { [ "$KUBE_SIDE" = fake ]; }
kube_real() { [ "$KUBE_SIDE" = real ]; }
kube_die() { echo "FAIL: $*"; exit 1; }
kube_skip() { echo "$1"; exit 77; }
kube_elapsed() {
    awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

kube_init() {
    local n=$1 bind=127.0.0.1
    shift
    if kube_fake; then
        pfk8s_init
        T=$PFK8S_TMP
        if [ "$n" -gt 0 ]; then
            pfk8s_netns_up "$n"
            bind=$PFK8S_HOST_IP
        fi
        echo '[]' > "$T/none.json"
        pfk8s_server "$bind" "$T/none.json"
        [ "$n" -gt 0 ] && pfk8s_netns_check
        KUBE_API=https://$bind:$PFK8S_API_PORT
        KUBE_CA=$T/certs/ca.crt
        KUBE_RDV_PORT=$PFK8S_RDV_PORT
    else
        kr_init "$n"
        T=$KR_TMP
        kr_start ${KR_START_FLAGS:-}
        kr_namespace efa-preflight ml ${KUBE_NAMESPACES:-}
        kr_rbac_from_chart "$@"
        KUBE_API=$KR_API
        KUBE_CA=$KR_CA
        KUBE_RDV_PORT=$KR_RDV_PORT
        # Without pod namespaces the agents share the host's loopback.
        [ "$n" -gt 0 ] || KUBE_RDV_PORT=$(pf_free_port)
    fi
}

kube_netns() { if kube_fake; then echo "pfk8s-$1"; else echo "pfkr-$1"; fi; }
kube_pod_ip() { if kube_fake; then echo "10.254.40.$((10 + $1))"; else echo "10.254.42.$((10 + $1))"; fi; }

# kube_post_objects JSON: the fake's store takes objects as they are.
kube_post_objects() { pfk8s_admin POST /objects "$1"; }

kube_node() {
    local name=$1 labels=$2 taints=${3:-[]} conds=${4:-[]}
    local ready='{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2025-12-01T00:00:00Z"}'
    if kube_fake; then
        kube_post_objects "$(python3 -c '
import json, sys
name, (labels, taints, conds, ready) = sys.argv[1], map(json.loads, sys.argv[2:])
print(json.dumps({"kind": "Node", "apiVersion": "v1",
                  "metadata": {"name": name, "labels": labels},
                  "spec": {"taints": taints}, "status": {"conditions": [ready] + conds}}))
' "$name" "$labels" "$taints" "$conds" "$ready")"
    else
        kr_node "$name" "$labels" "$taints"
        [ "$conds" = "[]" ] || kr_ok PATCH "/api/v1/nodes/$name/status" \
            --ctype application/strategic-merge-patch+json \
            --data "{\"status\":{\"conditions\":$conds}}"
    fi
}

kube_daemonset() {
    if kube_fake; then
        echo 0c9d8e7f-1a2b-4c3d-8e9f-a0b1c2d3e4f5
        return
    fi
    kr_ok POST "/apis/apps/v1/namespaces/$1/daemonsets" --data '{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"'"$2"'","namespace":"'"$1"'"},"spec":{"selector":{"matchLabels":{"app.kubernetes.io/name":"'"$2"'"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"'"$2"'"}},"spec":{"containers":[{"name":"agent","image":"registry.invalid/efa-preflight"}]}}}}'
    kr_call GET "/apis/apps/v1/namespaces/$1/daemonsets/$2" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["uid"])'
}

kube_job() {
    local job='{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"'"$2"'","namespace":"'"$1"'"},"spec":{"parallelism":1,"completions":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"train","image":"registry.invalid/train"}]}}}}'
    if kube_fake; then
        kube_post_objects "${job/\"metadata\":\{/\"metadata\":{\"uid\":\"job-uid-$2\",}"
        echo "job-uid-$2"
        return
    fi
    kr_ok POST "/apis/batch/v1/namespaces/$1/jobs" --data "$job"
    kr_call GET "/apis/batch/v1/namespaces/$1/jobs/$2" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["uid"])'
}

# kube_pod JSON IP: the fake stores it Pending with the IP (as before a
# container runs); the real one gets it from a status patch, Running.
kube_pod() {
    if kube_fake; then
        kube_post_objects "$(python3 -c '
import json, sys
p = json.loads(sys.argv[1]); p["status"] = {"phase": "Pending", "podIP": sys.argv[2]}
print(json.dumps(p))' "$1" "$2")"
        return
    fi
    local ns name
    read -r ns name < <(python3 -c 'import json, sys; m = json.loads(sys.argv[1])["metadata"]; print(m["namespace"], m["name"])' "$1")
    kr_ok POST "/api/v1/namespaces/$ns/pods" --data "$1"
    kr_pod_ip "$ns" "$name" "$2"
}

kube_token() {
    if kube_fake; then cat "$T/token"; else kr_token "$@"; fi
}

# kube_wait_watch NS: the agent's pod watch in NS is open (30 s).
kube_wait_watch() {
    if kube_real; then
        kr_wait_watchers pods 1
        return
    fi
    local i
    for i in $(seq 1 300); do
        pfk8s_http GET /state 2>/dev/null | python3 -c '
import json, re, sys
s = json.load(sys.stdin)
sys.exit(0 if any(a["method"] == "GET" and re.search(r"/namespaces/%s/pods\?.*watch=(1|true)" % sys.argv[1], a["path"])
                  for a in s["arrivals"]) else 1)' "$1" && return 0
        sleep 0.1
    done
    kube_die "no pod watch in $1 after 30 s"
}

kube_state() {
    if kube_fake; then pfk8s_state "$1"; else kr_state "$1"; fi
}

kube_check() {
    if kube_fake; then pfk8s_check "$@"; else kr_check "$@"; fi
}

kube_no_token_in() {
    if kube_fake; then pfk8s_no_token_in "$@"; else kr_no_token_in "$@"; fi
}

# kube_wait_verdicts STATUSES TRIES LOG...: until no Node's status label is
# one of STATUSES ("pending validating"), TRIES half-seconds; the state is
# then in $T/state.json. On time-out the LOGs' tails, and FAIL.
kube_wait_verdicts() {
    local statuses=$1 tries=$2 t left
    shift 2
    for t in $(seq 1 "$tries"); do
        kube_state "$T/state.json"
        left=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(sum(1 for n in s["nodes"] if n["metadata"]["labels"].get("efa-preflight.io/status") in sys.argv[2].split()))' \
            "$T/state.json" "$statuses")
        [ "$left" = 0 ] && return 0
        sleep 0.5
    done
    tail -n 20 "$@"
    kube_die "$left node(s) still $statuses after $((tries / 2)) s"
}

# kube_term PID WHAT GRACE: SIGTERM to the agent PID (a child of this
# shell), then its exit, 20 s at most; sets rc and secs (since the signal).
# FAIL when it exits later than GRACE + 1.5 s.
kube_term() {
    local t0 i
    t0=$(date +%s.%N)
    kill -TERM "$1"
    for i in $(seq 1 200); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$1" 2>/dev/null && { kill -KILL "$1"; kube_die "$2: still running 20 s after SIGTERM"; }
    wait "$1"
    rc=$?
    secs=$(kube_elapsed "$t0")
    awk -v s="$secs" -v g="$3" 'BEGIN { exit !(s <= g + 1.5) }' ||
        kube_die "$2: exit $secs s after SIGTERM, grace is $3 s"
}

# kube_job_pod POD_IP: Job train-workers-0 in ml and its one pod
# train-workers-0-0-p0 on node-0 (labelled with the Job's name, the job
# account's), at POD_IP; the pod's token in $T/token-pod.
kube_job_pod() {
    local uid
    uid=$(kube_job ml train-workers-0)
    kube_pod '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-workers-0-0-p0","namespace":"ml","labels":{"batch.kubernetes.io/job-name":"train-workers-0"},"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train-workers-0","uid":"'"$uid"'","controller":true}]},"spec":{"nodeName":"node-0","restartPolicy":"Never","serviceAccountName":"efa-preflight-job","automountServiceAccountToken":false,"containers":[{"name":"train","image":"registry.invalid/train"}]}}' "$1"
    kube_token ml efa-preflight-job train-workers-0-0-p0 > "$T/token-pod"
}

# kube_wait_pids WANT LOGS WHAT PID...: agent i (PIDs in order) exits WANT;
# else the tail of LOGS-i.stderr and LOGS-i.stdout, and FAIL naming WHAT i.
kube_wait_pids() {
    local want=$1 logs=$2 what=$3 i=0 p rc
    shift 3
    for p in "$@"; do
        wait "$p"
        rc=$?
        [ $rc -eq "$want" ] || { tail -n 30 "$logs-$i.stderr"; cat "$logs-$i.stdout" 2>/dev/null;
                                 kube_die "$what $i exited $rc, want $want"; }
        i=$((i + 1))
    done
}

# kube_call METHOD PATH [--data JSON] [--ctype TYPE] [--status]: the API as
# the cluster's admin (fake: the admin token; real: kr_call's client
# certificate in system:masters); the body, or with --status the code.
kube_call() {
    if kube_real; then
        kr_call "$@"
        return
    fi
    local method=$1 path=$2
    shift 2
    python3 "$PFK8S_LIB/admin_call.py" "$method" "$KUBE_API$path" \
        --cacert "$KUBE_CA" --token-file "$T/token" "$@"
}

# kube_exited WANT TAG WHAT [PATTERN]: the agent run just before (its exit
# code in $rc, its logs $T/out/TAG.*) exited WANT and its stderr holds
# PATTERN (grep); else its stderr, and FAIL naming WHAT.
kube_exited() {
    [ "$rc" -eq "$1" ] || { cat "$T/out/$2.stderr"; kube_die "$3: exit $rc, want $1"; }
    [ -z "${4:-}" ] || grep -q -- "$4" "$T/out/$2.stderr" ||
        { cat "$T/out/$2.stderr"; kube_die "$3: no '$4' in its stderr"; }
}

# kube_ds_agent I POD OUT [args]: the DaemonSet agent of node-I in pod
# namespace I+1 (--mode daemonset --group-size 2, identity from the
# downward-API env), started as kube_pod_agent starts it. (The fake's
# address is read at the call: a scenario may restart the server.)
kube_ds_agent() {
    local i=$1 pod=$2 out=$3
    shift 3
    kube_pod_agent "$i" "$out" env POD_NAME="$pod" POD_NAMESPACE=efa-preflight NODE_NAME="node-$i" \
        -- --mode daemonset --group-size 2 --expect-gpus 0 "$@"
}

# kube_jobset_agent I OUT [args]: the agent of JobSet pod I
# (train-workers-I-0-pI in ml, at 10.254.x.(11+I)) in its pod namespace,
# identity from the downward-API env, started as kube_pod_agent starts it.
kube_jobset_agent() {
    local i=$1 out=$2
    shift 2
    kube_pod_agent "$i" "$out" env POD_NAME="train-workers-$i-0-p$i" POD_NAMESPACE=ml \
        POD_IP="$(kube_pod_ip $((i + 1)))" -- "$@"
}

# kube_pod_agent I OUT env VAR=VALUE... -- [args]: `efa-preflight run` in pod
# namespace I+1 with that env, the side's API server, CA, rendezvous port
# and token ($T/token-I where there is one, else $T/token), tcp and the
# host engine, in the background: the agent's own pid (a signal reaches
# it) in KUBE_AGENT_PID; report and logs $T/out/OUT.*.
kube_pod_agent() {
    local i=$1 out=$2 tok=$T/token api ca port
    local -a envs=()
    shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    [ -f "$T/token-$i" ] && tok=$T/token-$i
    if kube_fake; then
        api=https://$PFK8S_HOST_IP:$PFK8S_API_PORT ca=$PFK8S_TMP/certs/ca.crt port=$PFK8S_RDV_PORT
    else
        api=$KR_API ca=$KR_CA port=$KR_RDV_PORT
    fi
    ip netns exec "$(kube_netns $((i + 1)))" "${envs[@]}" \
        "$PF_BIN" run --api-server "$api" --token-file "$tok" --ca-file "$ca" --no-imds \
        --port "$port" --fabric-provider tcp --engine host \
        --report "$T/out/$out.json" "$@" > "$T/out/$out.stdout" 2> "$T/out/$out.stderr" &
    KUBE_AGENT_PID=$!
}

# kube_jobset SPEC...: a JobSet "train" of one pod per Job, as
# pfk8s_jobset_objects writes it: for each "I:IP" spec (I = 0, 1, ... in
# order) Node node-I (type test.fake, zone us-east-1a, the GPU taint), Job
# train-workers-I and its pod train-workers-I-0-pI on node-I at IP ("-":
# Pending without a podIP; "x": no pod); the pods' tokens in $T/token-I.
kube_jobset() {
    local spec i ip
    if kube_fake; then
        pfk8s_jobset_objects "$T/jobset.json" "$@"
        kube_post_objects "$(cat "$T/jobset.json")"
        for spec; do cp "$T/token" "$T/token-${spec%%:*}"; done
        return
    fi
    for spec; do
        i=${spec%%:*}
        kr_node "node-$i" '{"kubernetes.io/hostname":"node-'"$i"'","node.kubernetes.io/instance-type":"test.fake","topology.kubernetes.io/zone":"us-east-1a"}' \
            '[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]'
    done
    kr_jobset_pods ml $#
    for spec; do
        i=${spec%%:*} ip=${spec#*:}
        if [ "$ip" = x ]; then
            kr_ok DELETE "/api/v1/namespaces/ml/pods/train-workers-$i-0-p$i?gracePeriodSeconds=0"
            continue
        fi
        [ "$ip" = - ] || kr_pod_ip ml "train-workers-$i-0-p$i" "$ip"
        kr_token ml efa-preflight-job "train-workers-$i-0-p$i" > "$T/token-$i"
    done
}

# kube_pending_pod I N: JobSet pod I of N (after kube_jobset) created now,
# Pending without a podIP, as one the scheduler cannot place.
kube_pending_pod() {
    local pod
    pod=$(PYTHONPATH=$KUBE_LIB python3 -c '
import json, sys
from kube_objects import jobset_labels
i, n = int(sys.argv[1]), int(sys.argv[2])
print(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "train-workers-%d-0-p%d" % (i, i), "namespace": "ml",
    "labels": jobset_labels(i, n)},
    "spec": {"restartPolicy": "Never",
             "serviceAccountName": "efa-preflight-job",
             "automountServiceAccountToken": False,
             "containers": [{"name": "train", "image": "registry.invalid/train"}]},
    "status": {"phase": "Pending"}}))' "$1" "$2")
    if kube_fake; then kube_post_objects "$pod"; else kr_ok POST /api/v1/namespaces/ml/pods --data "$pod"; fi
}

# kube_reports_valid REPORT...: the reports against
# docs/reference/report.schema.json (a note where no python3 has jsonschema).
kube_reports_valid() {
    local py out rc
    for py in python3 /usr/bin/python3; do
        out=$("$py" "$PF_ROOT/tests/integration/check_report_schema.py" "$@" 2>&1); rc=$?
        [ $rc -eq 77 ] && continue
        [ $rc -eq 0 ] || { echo "$out"; kube_die "reports the schema refuses"; }
        echo "ok   $# reports valid against docs/reference/report.schema.json"
        return 0
    done
    echo "note: reports not checked against the schema: $out"
}

# kube_delete_pod NS NAME: the pod gone at once (grace 0), as the cluster's
# admin (the fake's store: its admin port).
kube_delete_pod() {
    if kube_fake; then
        pfk8s_admin DELETE "/objects/Pod/$1/$2"
    else
        kr_ok DELETE "/api/v1/namespaces/$1/pods/$2?gracePeriodSeconds=0"
    fi
}
