#!/bin/bash
# k8s bootstrap with an identity the API server does not know: these are
# deployment errors (exit 2, nothing written on the Node), not a failed
# fabric (exit 1 would label the Node status=fail and taint it). An own
# pod or a token the API server does not know is found before the run
# marks the Node (nothing written); a selector it refuses is found after:
# the Node is put back as found.
#  1. --pod-name of a pod that does not exist (404 on the own pod);
#  2. a --token-file that does not exist;
#  3. a --peer-selector the API server refuses (400): not APIUnavailable.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
pfk8s_init
T=$PFK8S_TMP

pfk8s_jobset_up 2 lo
pfk8s_state "$T/before.json"

agent() {   # agent TAG POD TOKEN_FILE [extra args]
    local tag=$1 pod=$2 token=$3
    shift 3
    "$PF_BIN" run --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$token" --ca-file "$T/certs/ca.crt" \
        --pod-name "$pod" --namespace ml --node-name node-0 --taint-on-failure \
        --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        --timeout 10 --no-imds --report "$T/out/$tag.json" "$@" \
        > "$T/out/$tag.stdout" 2> "$T/out/$tag.stderr"
}

nothing_written() {   # nothing_written WHAT
    pfk8s_state "$T/after.json"
    pfk8s_check "$T/after.json" '
before = json.load(open("'"$T/before.json"'"))
assert [n for n in s["nodes"]] == [n for n in before["nodes"]], "a Node was changed"
assert s["events"] == [], s["events"]
assert all(r["method"] == "GET" for r in s["requests"]), [r for r in s["requests"] if r["method"] != "GET"]
' || pfk8s_die "$1: something was written"
}

# put_back WHAT: a usage error found after the run marked the Node
# (validating) puts back what it found: the same labels and conditions, no
# Event, no taint; the only writes are the mark and its undo.
put_back() {
    pfk8s_state "$T/after.json"
    pfk8s_check "$T/after.json" '
before = json.load(open("'"$T/before.json"'"))
def strip(n):
    n = json.loads(json.dumps(n))
    n["metadata"].pop("resourceVersion", None)
    return n
assert [strip(n) for n in s["nodes"]] == [strip(n) for n in before["nodes"]], "a Node was changed"
assert s["events"] == [], s["events"]
w = [(r["method"], r["path"]) for r in s["requests"] if r["method"] != "GET"]
assert w == [("PATCH", "/api/v1/nodes/node-0"), ("PATCH", "/api/v1/nodes/node-0/status"),
             ("PATCH", "/api/v1/nodes/node-0/status"), ("PATCH", "/api/v1/nodes/node-0")], w
' || pfk8s_die "$1: the Node was not put back"
}

agent nopod train-workers-0-0-nosuch "$T/token"
rc=$?
kube_exited 2 nopod "unknown own pod" \
    "reading own pod: GET /api/v1/namespaces/ml/pods/train-workers-0-0-nosuch: HTTP 404"
nothing_written "unknown own pod"
echo "unknown own pod: exit 2, 'reading own pod: GET ...: HTTP 404', Node untouched"

agent notoken train-workers-0-0-p0 "$T/no-such-token"
rc=$?
kube_exited 2 notoken "missing token file" "cannot read token file $T/no-such-token"
nothing_written "missing token file"
echo "missing token file: exit 2, 'cannot read token file ...', Node untouched"
agent badsel train-workers-0-0-p0 "$T/token" --peer-selector 'Bad/app=x'
rc=$?
kube_exited 2 badsel "refused selector" \
    "the API server refused the pod list (check --peer-selector): GET /api/v1/namespaces/ml/pods?labelSelector=Bad%2Fapp%3Dx: HTTP 400"
put_back "refused selector"
echo "refused peer selector: exit 2, 'the API server refused the pod list (check --peer-selector) ... HTTP 400', Node put back as found (mark, then undo)"
echo "PASS"
