# Helpers for tests/integration/test_k8s_*.sh (sourced, bash).
#   pfk8s_init            temp dir, certs, tokens; installs the cleanup trap
#   pfk8s_server BIND OBJECTS_JSON [extra server args...]
#   pfk8s_admin METHOD PATH [JSON]   (pfk8s_http prints the reply)
#   pfk8s_state FILE      copy the server's stored objects + request log
#   pfk8s_check STATE 'python statements using s (the state dict)'
#   pfk8s_netns_up N      bridge pfk8s-br 10.254.40.1/24 + N "pod" namespaces
#                         pfk8s-1..N at 10.254.40.(10+i)
# Ports come from the kernel: the server binds port 0 and says which it got
# (PFK8S_API_PORT, PFK8S_ADMIN_PORT, set by pfk8s_server), and the
# rendezvous port is one it just handed out (PFK8S_RDV_PORT, lib_port.sh).

PFK8S_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$PFK8S_LIB/../../integration/lib_port.sh"
. "$PFK8S_LIB/../../integration/kube/podnet.sh"
PFK8S_API_PORT=
PFK8S_ADMIN_PORT=
PFK8S_RDV_PORT=$(pf_free_port)
PFK8S_HOST_IP=10.254.40.1
PFK8S_NS_MAX=0
PFK8S_SERVER_PID=

pfk8s_skip() { echo "$1"; exit 77; }
pfk8s_die() { echo "FAIL: $*"; exit 1; }

pfk8s_cleanup() {
    [ -n "$PFK8S_SERVER_PID" ] && kill "$PFK8S_SERVER_PID" 2>/dev/null
    [ "$PFK8S_NS_MAX" -gt 0 ] && podnet_down pfk8s "$PFK8S_NS_MAX"
    [ -n "${PFK8S_TMP:-}" ] && [ -z "${PFK8S_KEEP:-}" ] && rm -rf "$PFK8S_TMP"
    return 0
}

pfk8s_init() {
    command -v python3 >/dev/null || pfk8s_skip "python3 is not installed"
    command -v openssl >/dev/null || pfk8s_skip "openssl is not installed"
    [ -x "$PF_BIN" ] || pfk8s_die "no agent binary at $PF_BIN"
    # One k8s test at a time on this machine (fixed namespace names and
    # subnet), even when two test runs overlap. tests/integration/run.sh
    # takes the lock before the test's deadline starts (PFK8S_LOCK_HELD).
    if [ -z "${PFK8S_LOCK_HELD:-}" ]; then
        exec 9>/tmp/pfk8s.lock
        flock -w 240 9 || pfk8s_skip "another k8s test held /tmp/pfk8s.lock for 240 s"
    fi
    PFK8S_TMP=$(mktemp -d /tmp/pfk8s.XXXXXX)
    trap pfk8s_cleanup EXIT
    "$PFK8S_LIB/mkcerts.sh" "$PFK8S_TMP/certs" \
        "IP:127.0.0.1,IP:$PFK8S_HOST_IP" || pfk8s_die "certificate generation"
    # Tokens look like real bound tokens and are random per run, so a grep
    # for them in the logs means something.
    PFK8S_TOKEN="eyJhbGciOiJSUzI1NiJ9.$(openssl rand -hex 24)"
    PFK8S_TOKEN2="eyJhbGciOiJSUzI1NiJ9.$(openssl rand -hex 24)"
    PFK8S_TOKEN_RO="eyJhbGciOiJSUzI1NiJ9.$(openssl rand -hex 24)"
    PFK8S_TOKEN_NONE="eyJhbGciOiJSUzI1NiJ9.$(openssl rand -hex 24)"
    printf '%s' "$PFK8S_TOKEN" > "$PFK8S_TMP/token"
    printf '{"%s":"admin","%s":"read","%s":"none"}' "$PFK8S_TOKEN" \
        "$PFK8S_TOKEN_RO" "$PFK8S_TOKEN_NONE" > "$PFK8S_TMP/tokens.json"
    mkdir -p "$PFK8S_TMP/out"
}

# pfk8s_server BIND OBJECTS_JSON [extra args]: sets PFK8S_API_PORT and
# PFK8S_ADMIN_PORT to the ports it listens on.
pfk8s_server() {
    local bind=$1 objects=$2 i line
    shift 2
    : > "$PFK8S_TMP/out/server.log"   # a restarted server's old line must not count
    python3 "$PFK8S_LIB/server.py" --bind "$bind" --port 0 \
        --admin-port 0 --cert "$PFK8S_TMP/certs/server.crt" \
        --key "$PFK8S_TMP/certs/server.key" --tokens "$PFK8S_TMP/tokens.json" \
        --objects "$objects" --dump "$PFK8S_TMP/dump.json" "$@" \
        2> "$PFK8S_TMP/out/server.log" &
    PFK8S_SERVER_PID=$!
    for i in $(seq 1 50); do
        kill -0 "$PFK8S_SERVER_PID" 2>/dev/null || break
        line=$(grep -m1 "^fake-apiserver: https://" "$PFK8S_TMP/out/server.log")
        if [ -n "$line" ]; then
            PFK8S_API_PORT=$(sed -n 's|^fake-apiserver: https://.*:\([0-9]*\) (admin .*|\1|p' <<<"$line")
            PFK8S_ADMIN_PORT=$(sed -n 's|.*(admin 127\.0\.0\.1:\([0-9]*\))$|\1|p' <<<"$line")
            pfk8s_http GET /faults >/dev/null 2>&1 && return 0
        fi
        sleep 0.1
    done
    cat "$PFK8S_TMP/out/server.log"
    pfk8s_die "fake API server did not start"
}

# pfk8s_http METHOD ADMIN_PATH [JSON]: the admin port's reply on stdout.
pfk8s_http() {
    python3 "$PFK8S_LIB/admin_call.py" "$1" "http://127.0.0.1:$PFK8S_ADMIN_PORT$2" \
        ${3:+--data "$3"}
}

pfk8s_admin() {
    pfk8s_http "$@" >/dev/null || pfk8s_die "admin $1 $2 failed"
}

pfk8s_state() {
    pfk8s_http GET /state > "$1" || pfk8s_die "cannot read the server state"
}

# pfk8s_elapsed START: seconds since START (date +%s.%N), 2 decimals.
pfk8s_elapsed() {
    awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}

# pfk8s_check STATE_FILE 'python code'; helpers: node(name), labels(name),
# cond(name, type), events(name), taints(name), refused()
# (tests/integration/kube/check.py). Assertion failures exit 1 with the line.
pfk8s_check() {
    python3 "$PFK8S_LIB/../../integration/kube/check.py" "$1" "$2" || exit 1
}

pfk8s_netns_up() {
    podnet_can pfk8s || pfk8s_skip "cannot create network namespaces here"
    PFK8S_NS_MAX=$1
    podnet_up pfk8s "$PFK8S_HOST_IP" "$1" || pfk8s_die "bridge"
}

# After pfk8s_server on the bridge: every namespace reaches it over TLS.
pfk8s_netns_check() {
    local i code
    for i in $(seq 1 "$PFK8S_NS_MAX"); do
        code=$(ip netns exec "pfk8s-$i" python3 "$PFK8S_LIB/admin_call.py" --status \
            --cacert "$PFK8S_TMP/certs/ca.crt" --timeout 3 \
            GET "https://$PFK8S_HOST_IP:$PFK8S_API_PORT/api/v1/nodes")
        [ "$code" = 401 ] || pfk8s_die "namespace pfk8s-$i: API server answered '$code', want 401 without a token"
    done
}

# pfk8s_ds_objects FILE N STATUS PODS STARTED: N p5.48xlarge Nodes (their
# status label STATUS, "-" for none) and, PODS "running" or "waiting:K",
# their DaemonSet pods at 10.254.40.(11+i), Running since STARTED ("now" or
# an RFC 3339 time; pod K Pending, its container still being created), or
# none ("none"). FILE.nodes: the Nodes alone.
pfk8s_ds_objects() {
    python3 - "$@" <<'EOF'
import json, sys, time
out, n, status, pods, started = sys.argv[1:6]
if started == "now":
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
waiting = int(pods.split(":")[1]) if pods.startswith("waiting:") else -1
objs = []
for i in range(int(n)):
    labels = {"node.kubernetes.io/instance-type": "p5.48xlarge",
              "topology.kubernetes.io/zone": "us-east-1a"}
    if status != "-":
        labels["efa-preflight.io/status"] = status
    objs.append({"kind": "Node", "apiVersion": "v1", "metadata": {
        "name": "node-%d" % i, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastTransitionTime": "2025-12-01T00:00:00Z"}]}})
    if pods == "none":
        continue
    state = ({"waiting": {"reason": "ContainerCreating"}} if i == waiting
             else {"running": {"startedAt": started}})
    objs.append({"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": "efa-preflight-ds-%d" % i, "namespace": "efa-preflight",
        "labels": {"app.kubernetes.io/name": "efa-preflight",
                   "app.kubernetes.io/instance": "efa-preflight"},
        "ownerReferences": [{"kind": "DaemonSet", "name": "efa-preflight"}]},
        "spec": {"nodeName": "node-%d" % i},
        "status": {"phase": "Pending" if i == waiting else "Running",
                   "podIP": "10.254.40.%d" % (11 + i),
                   "containerStatuses": [{"name": "preflight", "restartCount": 0,
                                          "ready": i != waiting, "state": state}]}})
json.dump(objs, open(out, "w"), indent=1)
json.dump([o for o in objs if o["kind"] == "Node"], open(out + ".nodes", "w"))
EOF
}

# pfk8s_jobset_up N [lo]: N pod namespaces and a JobSet of N pods, pod i
# at 10.254.40.(11+i) in namespace pfk8s-(i+1) (pfk8s_jobset_objects), the
# server on the bridge, reached from every namespace; with "lo", every pod
# at 127.0.0.1 and the server there, no namespaces.
pfk8s_jobset_up() {
    local i specs=
    if [ "${2:-}" = lo ]; then
        for i in $(seq 0 $(($1 - 1))); do specs="$specs $i:127.0.0.1"; done
        pfk8s_jobset_objects "$PFK8S_TMP/objects.json" $specs
        pfk8s_server 127.0.0.1 "$PFK8S_TMP/objects.json"
        return
    fi
    pfk8s_netns_up "$1"
    for i in $(seq 0 $(($1 - 1))); do specs="$specs $i:10.254.40.$((11 + i))"; done
    pfk8s_jobset_objects "$PFK8S_TMP/objects.json" $specs
    pfk8s_server "$PFK8S_HOST_IP" "$PFK8S_TMP/objects.json"
    pfk8s_netns_check
}

# pfk8s_jobset_agent I TAG [args]: the agent of JobSet pod I (after
# pfk8s_jobset_up N) in its namespace, a one-shot run with the test's
# sizes and --taint-on-failure; its report and logs $PFK8S_TMP/out/TAG-I.*.
pfk8s_jobset_agent() {
    local i=$1 tag=$2
    shift 2
    ip netns exec "pfk8s-$((i + 1))" "$PF_BIN" run \
        --api-server "https://$PFK8S_HOST_IP:$PFK8S_API_PORT" \
        --token-file "$PFK8S_TMP/token" --ca-file "$PFK8S_TMP/certs/ca.crt" --no-imds \
        --pod-name "train-workers-$i-0-p$i" --namespace ml \
        --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 256K -n 2 -w 1 --taint-on-failure \
        --report "$PFK8S_TMP/out/$tag-$i.json" "$@" \
        > "$PFK8S_TMP/out/$tag-$i.stdout" 2> "$PFK8S_TMP/out/$tag-$i.stderr"
}

# pfk8s_objects FILE PODS_SPEC... writes nodes, Jobs and JobSet pods.
# Each spec is "index:ip" (ip "-" = Pending without an IP, "x" = no pod).
pfk8s_jobset_objects() {
    local file=$1
    shift
    PYTHONPATH="$PFK8S_LIB/../../integration/kube" python3 - "$file" "$@" <<'EOF'
import json, sys
from kube_objects import jobset_labels
out, specs = sys.argv[1], sys.argv[2:]
n = len(specs)
objs = []
kubelet = [
    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
     "message": "kubelet has sufficient memory available",
     "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2025-12-01T00:00:00Z"},
    {"type": "Ready", "status": "True", "reason": "KubeletReady",
     "message": "kubelet is posting ready status",
     "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2025-12-01T00:00:00Z"}]
for spec in specs:
    i, ip = spec.split(':')
    i = int(i)
    objs.append({"kind": "Node", "apiVersion": "v1", "metadata": {
        "name": "node-%d" % i, "labels": {
            "kubernetes.io/hostname": "node-%d" % i,
            # A type the catalog lacks: the agent takes the type from
            # this label where DMI names none, and these agents run
            # without EFA, which a catalog type's expectations would fail.
            "node.kubernetes.io/instance-type": "test.fake",
            "topology.kubernetes.io/zone": "us-east-1a"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"conditions": kubelet}})
    objs.append({"kind": "Job", "apiVersion": "batch/v1", "metadata": {
        "name": "train-workers-%d" % i, "namespace": "ml"},
        "spec": {"parallelism": 1, "completions": 1, "completionMode": "Indexed"}})
    if ip == 'x':
        continue
    pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {
        "name": "train-workers-%d-0-p%d" % (i, i), "namespace": "ml",
        "labels": jobset_labels(i, n),
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                             "name": "train-workers-%d" % i, "uid": "job-uid-%d" % i,
                             "controller": True}]},
        "spec": {"nodeName": "node-%d" % i},
        "status": {"phase": "Pending"}}
    if ip != '-':
        pod["status"]["podIP"] = ip
    objs.append(pod)
json.dump(objs, open(out, 'w'), indent=1)
EOF
}

# Fail if any token value appears in any file under the given paths.
# pfk8s_reports_valid FILE...: every report is valid against
# docs/reference/report.schema.json, strictly (check_report_schema.py);
# says so and goes on where python3-jsonschema is missing.
pfk8s_reports_valid() {
    local here py out rc
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../integration" && pwd)
    for py in python3 /usr/bin/python3; do
        out=$("$py" "$here/check_report_schema.py" "$@" 2>&1); rc=$?
        [ $rc -eq 77 ] && continue
        [ $rc -eq 0 ] || { echo "$out"; pfk8s_die "reports the schema refuses"; }
        echo "ok   $# reports valid against docs/reference/report.schema.json"
        return 0
    done
    echo "note: reports not checked against the schema: $out"
}

pfk8s_no_token_in() {
    local t
    for t in "$PFK8S_TOKEN" "$PFK8S_TOKEN2" "$PFK8S_TOKEN_RO" "$PFK8S_TOKEN_NONE"; do
        if grep -rqF -- "$t" "$@" 2>/dev/null; then
            grep -rlF -- "$t" "$@"
            pfk8s_die "a bearer token appears in the files above"
        fi
        # even a partial leak (the random part) counts
        if grep -rqF -- "${t#*.}" "$@" 2>/dev/null; then
            pfk8s_die "part of a bearer token appears in the logs"
        fi
    done
}
