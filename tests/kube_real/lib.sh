# Helpers for tests/integration/test_kreal_*.sh (sourced, bash): the agent
# against a real kube-apiserver (v1.20.2, built by `make kube-real`) and
# etcd, both started per test.
#
#   kr_init [NETNS]       skip (77) without the binaries; temp dir, certs,
#                         the bridge pfkr-br 10.254.42.1/24 and NETNS "pod"
#                         namespaces pfkr-1..N at 10.254.42.(10+i)
#   kr_start [FLAGS...]   etcd (127.0.0.1) and kube-apiserver (HTTPS on
#                         10.254.42.1) on ports picked here, waited for;
#                         extra kube-apiserver flags appended
#   kr_call ARGS...       tests/kube_real/kr.py call as the admin
#   kr_render_chart FILE [--set K=V...]   the chart, rendered by helm template
#   kr_token NS SA [POD]  a TokenRequest token (bound to POD when given)
#   kr_state FILE / kr_check FILE 'python'   as pfk8s_state / pfk8s_check
#   kr_audit              the audit log's events, one JSON per line
#
# The API server listens on the bridge address, not 127.0.0.1: the agents
# run in network-namespace "pods" with pod IPs of their own (the rendezvous
# port is the same in every pod) and must reach it from there. Everything
# stays on this host (the bridge and 127.0.0.1).

export KR_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$KR_LIB/../integration/kube/podnet.sh"
KR_HOST_IP=10.254.42.1
KR_RDV_PORT=33600
KR_NS_MAX=0
KR_ETCD_PID=
KR_API_PID=

kr_skip() { echo "$1"; exit 77; }
kr_die() { echo "FAIL: $*"; exit 1; }

kr_cleanup() {
    [ -n "$KR_API_PID" ] && kill "$KR_API_PID" 2>/dev/null && wait "$KR_API_PID" 2>/dev/null
    [ -n "$KR_ETCD_PID" ] && kill "$KR_ETCD_PID" 2>/dev/null && wait "$KR_ETCD_PID" 2>/dev/null
    podnet_down pfkr "$KR_NS_MAX"
    [ -n "${KR_TMP:-}" ] && [ -z "${KR_KEEP:-}" ] && rm -rf "$KR_TMP"
    return 0
}

# The kube-apiserver binary: $PF_KUBE_APISERVER, else build/kube/ of this
# tree (make kube-real puts it there).
kr_find_binaries() {
    KR_APISERVER=${PF_KUBE_APISERVER:-$PF_ROOT/build/kube/kube-apiserver}
    [ -x "$KR_APISERVER" ] ||
        kr_skip "no kube-apiserver at $KR_APISERVER: 'make kube-real' builds it (about 17 min) or set PF_KUBE_APISERVER"
    KR_ETCD=${PF_ETCD:-$(command -v etcd)}
    [ -n "$KR_ETCD" ] && [ -x "$KR_ETCD" ] || kr_skip "no etcd (apt-get install etcd-server)"
    command -v python3 >/dev/null || kr_skip "python3 is not installed"
    python3 -c 'import yaml' 2>/dev/null || kr_skip "python3-yaml is not installed"
    command -v openssl >/dev/null || kr_skip "openssl is not installed"
}

kr_init() {
    local n=${1:-0} i
    kr_find_binaries
    [ -x "$PF_BIN" ] || kr_die "no agent binary at $PF_BIN"
    podnet_can pfkr || kr_skip "cannot create network namespaces here (root needed)"
    # One real-API-server test at a time (the bridge and namespace names).
    exec 8>/tmp/pfkr.lock
    flock -w 240 8 || kr_skip "another kube_real test held /tmp/pfkr.lock for 240 s"
    KR_TMP=$(mktemp -d /tmp/pfkr.XXXXXX)
    trap kr_cleanup EXIT
    mkdir -p "$KR_TMP/out"
    KR_NS_MAX=$n
    podnet_up pfkr "$KR_HOST_IP" "$n" || kr_die "bridge pfkr-br"
    kr_certs
}

kr_certs() {
    local d=$KR_TMP/pki
    mkdir -p "$d"
    (
        cd "$d" || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kr-ca \
            -keyout ca.key -out ca.crt 2>/dev/null || exit 1
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=unrelated-ca \
            -keyout wrong-ca.key -out wrong-ca.crt 2>/dev/null || exit 1
        sign() {   # sign NAME SUBJECT EXTENSIONS
            openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" \
                -out "$1.csr" 2>/dev/null || return 1
            printf '%s\n' "$3" > "$1.ext"
            openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 2 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
        }
        sign apiserver /CN=kube-apiserver "subjectAltName=IP:$KR_HOST_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default.svc
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth" || exit 1
        # The setup's identity: a client certificate in system:masters.
        sign admin "/O=system:masters/CN=kr-admin" "keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth" || exit 1
        # Service-account token signing key (TokenRequest) and its public half.
        openssl genrsa -out sa.key 2048 2>/dev/null &&
            openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    ) || kr_die "certificate generation"
    export KR_CA=$KR_TMP/pki/ca.crt KR_CERT=$KR_TMP/pki/admin.crt KR_KEY=$KR_TMP/pki/admin.key
}

# A port free on ADDR now (the kernel's choice); the caller binds it next
# and starts over when someone else took it meanwhile.
kr_free_port() {
    python3 -c 'import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1]); s.close()' "$1"
}

kr_start_etcd() {
    local try cport pport i
    for try in 1 2 3; do
        cport=$(kr_free_port 127.0.0.1)
        pport=$(kr_free_port 127.0.0.1)
        rm -rf "$KR_TMP/etcd"
        "$KR_ETCD" --name kr --data-dir "$KR_TMP/etcd" \
            --listen-client-urls "http://127.0.0.1:$cport" \
            --advertise-client-urls "http://127.0.0.1:$cport" \
            --listen-peer-urls "http://127.0.0.1:$pport" \
            --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
            --initial-cluster "kr=http://127.0.0.1:$pport" \
            --log-level warn > "$KR_TMP/out/etcd.log" 2>&1 &
        KR_ETCD_PID=$!
        for i in $(seq 1 200); do
            kill -0 "$KR_ETCD_PID" 2>/dev/null || break
            if curl -sf --max-time 2 "http://127.0.0.1:$cport/health" 2>/dev/null | grep -q '"health":"true"'; then
                KR_ETCD_URL=http://127.0.0.1:$cport
                return 0
            fi
            sleep 0.1
        done
        kill "$KR_ETCD_PID" 2>/dev/null; wait "$KR_ETCD_PID" 2>/dev/null
        KR_ETCD_PID=
    done
    tail -n 20 "$KR_TMP/out/etcd.log"
    kr_die "etcd did not become healthy (3 tries)"
}

# The current etcd revision, and a compaction at it (for the 410 test).
kr_etcd_revision() {
    curl -sf --max-time 5 -X POST -d '{"key":"AA=="}' "$KR_ETCD_URL/v3/kv/range" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])'
}
kr_etcd_compact() {
    curl -sf --max-time 10 -X POST -d "{\"revision\":\"$1\",\"physical\":true}" \
        "$KR_ETCD_URL/v3/kv/compaction" >/dev/null
}

kr_start_apiserver() {
    local try port i
    cat > "$KR_TMP/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    userGroups: ["system:masters"]
  - level: Metadata
EOF
    for try in 1 2 3; do
        port=$(kr_free_port "$KR_HOST_IP")
        # --insecure-port=0: 1.20 would also serve plain HTTP on
        # 127.0.0.1:8080. There is no controller manager: ServiceAccount
        # admission would want the namespaces' default accounts it creates,
        # and TaintNodesByCondition taints every new Node not-ready until
        # the node lifecycle controller sees the kubelet's Ready.
        "$KR_APISERVER" --etcd-servers "$KR_ETCD_URL" \
            --bind-address "$KR_HOST_IP" --advertise-address "$KR_HOST_IP" \
            --secure-port "$port" --insecure-port 0 \
            --tls-cert-file "$KR_TMP/pki/apiserver.crt" \
            --tls-private-key-file "$KR_TMP/pki/apiserver.key" \
            --client-ca-file "$KR_TMP/pki/ca.crt" \
            --authorization-mode Node,RBAC \
            --service-account-issuer https://kubernetes.default.svc.cluster.local \
            --service-account-key-file "$KR_TMP/pki/sa.pub" \
            --service-account-signing-key-file "$KR_TMP/pki/sa.key" \
            --service-cluster-ip-range 10.0.0.0/24 \
            --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
            --audit-policy-file "$KR_TMP/audit-policy.yaml" \
            --audit-log-path "$KR_TMP/out/audit.log" \
            --profiling=false "$@" > "$KR_TMP/out/apiserver.log" 2>&1 &
        KR_API_PID=$!
        export KR_API=https://$KR_HOST_IP:$port
        for i in $(seq 1 600); do
            kill -0 "$KR_API_PID" 2>/dev/null || break
            if [ "$(python3 "$KR_LIB/kr.py" call GET /readyz --status 2>/dev/null)" = 200 ]; then
                KR_API_PORT=$port
                return 0
            fi
            sleep 0.2
        done
        kill "$KR_API_PID" 2>/dev/null; wait "$KR_API_PID" 2>/dev/null
        KR_API_PID=
        grep -q "address already in use" "$KR_TMP/out/apiserver.log" || break
    done
    tail -n 30 "$KR_TMP/out/apiserver.log"
    kr_die "kube-apiserver did not become ready"
}

kr_start() {
    local t0
    t0=$(date +%s.%N)
    kr_start_etcd
    kr_start_apiserver "$@"
    echo "etcd $KR_ETCD_URL and kube-apiserver $KR_API ready in $(kr_elapsed "$t0")s ($("$KR_APISERVER" --version 2>/dev/null))"
}

kr_elapsed() {
    awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

kr_call() { python3 "$KR_LIB/kr.py" call "$@"; }
kr_ok() { python3 "$KR_LIB/kr.py" call "$@" >/dev/null || kr_die "API call failed: $*"; }
kr_apply() { python3 "$KR_LIB/kr.py" apply "$@" || kr_die "apply $*"; }

# kr_token NS SA [POD]: a bound service-account token, as the kubelet
# projects one into the pod.
kr_token() {
    python3 "$KR_LIB/kr.py" token "$1" "$2" ${3:+--pod "$3"} || kr_die "TokenRequest for $1/$2"
}

# kr_render_chart OUT [helm template args]: the chart as `helm template`
# renders it (release efa-preflight in namespace efa-preflight); PF_KR_CHART
# names another chart directory.
kr_render_chart() {
    local out=$1
    shift
    if [ -z "${HELM:-}" ]; then
        . "$PF_ROOT/tests/integration/lib_helm.sh"
        helm_find >"$KR_TMP/out/helm-find.log" || kr_skip "$(cat "$KR_TMP/out/helm-find.log")"
    fi
    "$HELM" template efa-preflight "${PF_KR_CHART:-$PF_ROOT/charts/efa-preflight}" --namespace efa-preflight \
        --set image.repository=registry.invalid/efa-preflight "$@" > "$out" ||
        kr_die "chart render $*"
}

# kr_rbac_from_chart [helm template args]: the chart's service accounts and
# RBAC objects (the DaemonSet and the rest need a kubelet), applied.
kr_rbac_from_chart() {
    kr_render_chart "$KR_TMP/chart.yaml" "$@"
    python3 - "$KR_TMP/chart.yaml" "$KR_TMP/rbac.json" <<'EOF' || kr_die "chart: no RBAC objects"
import json, sys, yaml
keep = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
objs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] in keep]
assert objs
json.dump(objs, open(sys.argv[2], "w"), indent=1)
print("chart RBAC: " + ", ".join("%s %s" % (o["kind"], o["metadata"]["name"]) for o in objs))
EOF
    kr_apply "$KR_TMP/rbac.json"
}

kr_namespace() {
    local ns
    for ns in "$@"; do
        kr_ok POST /api/v1/namespaces --data "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}"
    done
}

# kr_node NAME LABELS_JSON [TAINTS_JSON]: a Node as a kubelet would leave it
# (Ready condition in its status).
kr_node() {
    kr_ok POST /api/v1/nodes --data "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\",\"labels\":$2},\"spec\":{\"taints\":${3:-[]}}}"
    kr_ok PATCH "/api/v1/nodes/$1/status" --ctype application/merge-patch+json \
        --data '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2025-12-01T00:00:00Z"}]}}'
}

# kr_pod_ip NS POD IP: what the kubelet would report once the sandbox runs.
kr_pod_ip() {
    kr_ok PATCH "/api/v1/namespaces/$1/pods/$2/status" --ctype application/merge-patch+json \
        --data "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$3\",\"podIPs\":[{\"ip\":\"$3\"}]}}"
}

# kr_jobset_pods NS N: Job train-workers-i and its JobSet-labelled pod
# train-workers-i-0-pi on node-i, for i < N (no podIP yet), running as the
# chart's job account (a TokenRequest bound to the pod must name the pod's
# own account). KR_PODS=jobs: N unrelated one-pod Jobs instead, each pod
# labelled as its Job's only (no JobSet labels, so each is a gang of one).
kr_jobset_pods() {
    python3 - "$1" "$2" "$KR_TMP/jobset.json" <<'EOF'
import json, sys
ns, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
objs = []
tmpl = {"spec": {"restartPolicy": "Never",
                 "containers": [{"name": "train", "image": "registry.invalid/train"}]}}
for i in range(n):
    objs.append({"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": "train-workers-%d" % i, "namespace": ns},
                 "spec": {"parallelism": 1, "completions": 1, "template": tmpl}})
json.dump(objs, open(out, "w"))
EOF
    kr_apply "$KR_TMP/jobset.json" >/dev/null
    PYTHONPATH="$KR_LIB/../integration/kube" python3 - "$1" "$2" "$KR_TMP/pods.json" <<'EOF'
import json, os, subprocess, sys
from kube_objects import jobset_labels
ns, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lib = os.environ["KR_LIB"]
objs = []
for i in range(n):
    job = json.loads(subprocess.check_output(
        ["python3", lib + "/kr.py", "call", "GET",
         "/apis/batch/v1/namespaces/%s/jobs/train-workers-%d" % (ns, i)]))
    objs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "train-workers-%d-0-p%d" % (i, i), "namespace": ns,
        "labels": {"batch.kubernetes.io/job-completion-index": "0",
                   "batch.kubernetes.io/job-name": "train-workers-%d" % i}
        if os.environ.get("KR_PODS") == "jobs" else jobset_labels(i, n),
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                             "name": job["metadata"]["name"],
                             "uid": job["metadata"]["uid"], "controller": True}]},
        "spec": {"nodeName": "node-%d" % i, "restartPolicy": "Never",
                 "serviceAccountName": "efa-preflight-job",
                 "automountServiceAccountToken": False,
                 "containers": [{"name": "train", "image": "registry.invalid/train"}]}})
json.dump(objs, open(out, "w"))
EOF
    kr_apply "$KR_TMP/pods.json" >/dev/null
}

kr_state() { python3 "$KR_LIB/kr.py" state "$1" || kr_die "cannot read the cluster state"; }

# kr_check STATE_FILE 'python'; helpers node(name), labels(name), cond(name,
# type), events(name), taints(name), refused(), audit() (the agent's
# requests: audit events of service accounts; tests/integration/kube/check.py).
kr_check() {
    python3 "$KR_LIB/../integration/kube/check.py" "$1" "$2" "$KR_TMP/out/audit.log" || exit 1
}

# Fail if a token, or its signature, appears in any file under the paths.
kr_no_token_in() {
    local f t
    for f in "$KR_TMP"/token*; do
        [ -f "$f" ] || continue
        t=$(cat "$f")
        [ -n "$t" ] || continue
        if grep -rqF -- "${t##*.}" "$@" 2>/dev/null; then
            grep -rlF -- "${t##*.}" "$@"
            kr_die "a bearer token ($f) appears in the files above"
        fi
    done
}

# kr_can VERB RESOURCE[/SUBRESOURCE] NAMESPACE|- [GROUP]: "true" or "false",
# the API server's own answer (SubjectAccessReview) for the job's account.
kr_can() {
    local res=${2%%/*} sub= ns=$3
    [[ "$2" == */* ]] && sub=${2#*/}
    [ "$ns" = - ] && ns=
    kr_call POST /apis/authorization.k8s.io/v1/subjectaccessreviews --data "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SubjectAccessReview\",\"spec\":{\"user\":\"system:serviceaccount:${KR_SA_NS:-ml}:${KR_SA:-efa-preflight-job}\",\"groups\":[\"system:serviceaccounts\",\"system:serviceaccounts:${KR_SA_NS:-ml}\",\"system:authenticated\"],\"resourceAttributes\":{\"verb\":\"$1\",\"resource\":\"$res\",\"subresource\":\"$sub\",\"namespace\":\"$ns\",\"group\":\"${4:-}\"}}}" |
        python3 -c 'import json, sys; print(str(json.load(sys.stdin)["status"].get("allowed", False)).lower())'
}

# kr_wait_can WANT VERB RESOURCE NS [GROUP]: until the authorizer's caches
# caught up with an RBAC change (10 s).
kr_wait_can() {
    local want=$1 t
    shift
    for t in $(seq 1 100); do
        [ "$(kr_can "$@")" = "$want" ] && return 0
        sleep 0.1
    done
    kr_die "can $* never became $want"
}

# kr_wait_watchers RESOURCE N: until the server holds at least N open
# namespaced watches on RESOURCE (its apiserver_longrunning_gauge; the
# server's own informers watch cluster-wide), 30 s. The audit log is no such
# signal: it logs a quiet watch's ResponseStarted only when the watch ends.
kr_wait_watchers() {
    local t n
    for t in $(seq 1 150); do
        n=$(kr_call GET /metrics 2>/dev/null | awk -v r="$1" '
            /^apiserver_longrunning_gauge\{/ && index($0, "resource=\"" r "\"") && index($0, "verb=\"WATCH\"") && index($0, "scope=\"namespace\"") { s += $NF }
            END { print s + 0 }')
        [ "${n:-0}" -ge "$2" ] && return 0
        sleep 0.2
    done
    kr_die "only ${n:-0} watches on $1 open after 30 s, want $2"
}
