#!/bin/bash
# The pod list + watch against a server that misbehaves without end. One
# agent of a 2-pod JobSet whose 2nd pod never comes (--timeout 5):
#  1. every watch ends with an ERROR event (code 500): the agent lists again
#     after a pause instead of re-watching at once, so it sends at most one
#     watch a second; it gives up at its deadline with PeerTimeout (exit 3).
#  2. every list page carries the same continue token: the agent stops at
#     the second page with a message that says so (exit 3, APIUnavailable)
#     instead of fetching that page until its deadline.
#  3. every watch stream ends at once, empty (a proxy that cannot stream):
#     as in 1, at most one watch a second, then PeerTimeout (exit 3).
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
DEADLINE=5

pfk8s_jobset_objects "$T/objects.json" 0:127.0.0.1 1:x
pfk8s_server 127.0.0.1 "$T/objects.json"

agent() {   # agent TAG
    "$PF_BIN" run --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" \
        --pod-name train-workers-0-0-p0 --namespace ml \
        --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        --timeout "$DEADLINE" --no-imds --no-publish --report "$T/out/$1.json" \
        > "$T/out/$1.stdout" 2> "$T/out/$1.stderr"
}

count() {   # count STATE 'python condition on r (one request)'
    python3 -c "import json; print(sum(1 for r in json.load(open('$1'))['requests'] if $2))"
}

# peer_timeout TAG WHAT: the agent runs into its deadline (exit 3,
# PeerTimeout in its report); sets elapsed.
peer_timeout() {
    local start rc
    start=$(date +%s.%N)
    agent "$1"
    rc=$?
    elapsed=$(pfk8s_elapsed "$start")
    [ $rc -eq 3 ] || { tail "$T/out/$1.stderr"; pfk8s_die "$2: exit $rc, want 3"; }
    grep -q "PeerTimeout: 1 of 2 peer pods" "$T/out/$1.json" ||
        { cat "$T/out/$1.json"; pfk8s_die "$2: no PeerTimeout in the report"; }
}

# 1. ERROR events on every watch.
pfk8s_admin POST /faults '[{"method": "GET", "path": "/namespaces/ml/pods$", "query": "watch=1", "watch_error": 500, "count": 100000}]'
peer_timeout errev "ERROR events"
pfk8s_state "$T/s1.json"
watches=$(count "$T/s1.json" "'watch=1' in r['path']")
lists=$(count "$T/s1.json" "'limit=500' in r['path'] and 'watch=1' not in r['path']")
echo "ERROR event on every watch: exit 3 after ${elapsed}s, $watches watches, $lists lists"
[ "$watches" -ge 2 ] || pfk8s_die "only $watches watch(es): the agent did not retry"
[ "$watches" -le $((DEADLINE + 2)) ] ||
    pfk8s_die "$watches watches in ${DEADLINE}s: re-watched without a pause"
[ "$lists" -eq "$watches" ] || [ "$lists" -eq $((watches + 1)) ] ||
    pfk8s_die "$lists lists for $watches watches: not listed again after each ERROR"

# 2. The same continue token on every page (a valid token of this server:
# it restarts the list from the first pod).
tok=$(python3 -c 'import base64, json; print(base64.b64encode(json.dumps({"start": "", "rv": "100"}).encode()).decode())')
pfk8s_admin POST /faults "[{\"method\": \"GET\", \"path\": \"/namespaces/ml/pods$\", \"query\": \"limit=\", \"continue_token\": \"$tok\", \"count\": 100000}]"
start=$(date +%s.%N)
agent samecont
rc=$?
elapsed=$(pfk8s_elapsed "$start")
[ $rc -eq 3 ] || { tail "$T/out/samecont.stderr"; pfk8s_die "same continue token: exit $rc, want 3"; }
grep -q "APIUnavailable" "$T/out/samecont.json" ||
    pfk8s_die "same continue token: reason is not APIUnavailable"
grep -q "pod list: the API server answered page 2 with the continue token it was sent" \
    "$T/out/samecont.json" ||
    { cat "$T/out/samecont.json"; pfk8s_die "same continue token: no message naming it"; }
pfk8s_state "$T/s2.json"
lists=$(( $(count "$T/s2.json" "'limit=500' in r['path']") - $(count "$T/s1.json" "'limit=500' in r['path']") ))
echo "same continue token on every page: exit 3 after ${elapsed}s, $lists list requests"
[ "$lists" -eq 2 ] || pfk8s_die "$lists list requests, want 2 (first page, then the repeated token)"
awk -v e="$elapsed" -v d="$DEADLINE" 'BEGIN { exit !(e < d - 1) }' ||
    pfk8s_die "took ${elapsed}s: ran into the deadline instead of stopping"

# 3. Every watch ends at once with nothing in it.
pfk8s_admin POST /faults '[{"method": "GET", "path": "/namespaces/ml/pods$", "query": "watch=1", "watch_close": true, "count": 100000}]'
pfk8s_state "$T/s3a.json"
peer_timeout closed "empty watches"
pfk8s_state "$T/s3.json"
watches=$(( $(count "$T/s3.json" "'watch=1' in r['path']") - $(count "$T/s3a.json" "'watch=1' in r['path']") ))
echo "every watch closed at once, empty: exit 3 after ${elapsed}s, $watches watches"
[ "$watches" -ge 2 ] || pfk8s_die "only $watches watch(es): the agent did not retry"
[ "$watches" -le $((DEADLINE + 2)) ] ||
    pfk8s_die "$watches watches in ${DEADLINE}s: re-watched without a pause"

pfk8s_no_token_in "$T/out"
echo "PASS"
