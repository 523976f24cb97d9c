#!/bin/bash
# The API client under faults. Two agents in network-namespace pods run a
# JobSet while the fake API server injects: latency, 429 + Retry-After: 1,
# an expired continue token (410) on a short-paged list, a watch ERROR 410,
# connection resets, 500s, 409 conflicts, a 503 on the Event, an Event POST
# that lands but whose answer is lost (still one Event per Node), and a token
# rotation mid-run (old token -> 401, the agent re-reads its token file).
# Both must finish with exit 0 and labels on both Nodes; every fault must
# have fired; the retry after the 429 waits >= 1 s. Then: a wrong CA fails
# closed (clear error, exit 3, nothing written); a token without rights gets
# 403 (exit 3, nothing written); a read-only token discovers but cannot
# write (exit 3, nothing written). No token appears in any log or report.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
pfk8s_init
T=$PFK8S_TMP

pfk8s_netns_up 2
pfk8s_jobset_objects "$T/objects.json" 0:10.254.40.11 1:-
cat > "$T/faults.json" <<'EOF'
[
 {"method": "GET", "path": "/namespaces/ml/pods/train-workers-0-0-p0$", "status": 429, "retry_after": 1, "count": 1},
 {"method": "GET", "path": "/namespaces/ml/pods$", "query": "continue=", "status": 410, "count": 1},
 {"method": "GET", "path": "/namespaces/ml/pods$", "query": "watch=1", "watch_error": 410, "count": 1},
 {"method": "GET", "path": "/namespaces/ml/pods$", "latency_ms": 300, "count": 3},
 {"method": "GET", "path": "/api/v1/nodes/node-\\d$", "reset": true, "count": 2},
 {"method": "PATCH", "path": "/api/v1/nodes/node-\\d/status$", "status": 500, "count": 2},
 {"method": "PATCH", "path": "/api/v1/nodes/node-\\d$", "status": 409, "count": 2},
 {"method": "POST", "path": "/events$", "status": 503, "retry_after": 0, "count": 1},
 {"method": "POST", "path": "/events$", "reply_lost": true, "count": 1}
]
EOF
# --page-size 1: every pod list is paged, so continue tokens are used.
pfk8s_server "$PFK8S_HOST_IP" "$T/objects.json" --faults "$T/faults.json" --page-size 1
pfk8s_netns_check

agent() {   # agent INDEX TAG [extra args]
    pfk8s_jobset_agent "$1" "$2" --timeout 40 -vv "${@:3}"
}

start=$(date +%s.%N)
agent 0 run & p0=$!
agent 1 run & p1=$!
# Token rotation while the agents wait for pod 1 (both watching): the file
# first, then the server, which forgets the old token and ends its watches;
# the agents' next requests get 401, re-read the file and carry on.
for t in $(seq 1 100); do
    pfk8s_state "$T/early.json"
    watching=$(python3 -c "
import json; r = json.load(open('$T/early.json'))['requests']
print(sum(1 for x in r if 'watch=1' in x['path'] and x['status'] == 200))")
    [ "$watching" -ge 3 ] && break   # one watch ends on the injected 410
    sleep 0.2
done
[ "$watching" -ge 3 ] || pfk8s_die "the agents never started watching pods"
printf '%s' "$PFK8S_TOKEN2" > "$T/token.new" && mv "$T/token.new" "$T/token"
pfk8s_admin POST /tokens "{\"$PFK8S_TOKEN2\":\"admin\",\"$PFK8S_TOKEN_RO\":\"read\",\"$PFK8S_TOKEN_NONE\":\"none\"}"
# The agents come back with the old token and are refused (within 10 s).
for t in $(seq 1 50); do
    pfk8s_state "$T/early.json"
    python3 -c "
import json, sys; r = json.load(open('$T/early.json'))['requests']
sys.exit(0 if any(x['status'] == 401 and x['auth'] == 'unknown' for x in r) else 1)" && break
    sleep 0.2
done
# Pod 1 gets its IP: the watch delivers it.
pfk8s_admin POST /objects '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"train-workers-1-0-p1","namespace":"ml","labels":{"jobset.sigs.k8s.io/jobset-name":"train","jobset.sigs.k8s.io/replicatedjob-name":"workers","jobset.sigs.k8s.io/replicatedjob-replicas":"2","jobset.sigs.k8s.io/job-index":"1","batch.kubernetes.io/job-completion-index":"0"},"ownerReferences":[{"kind":"Job","name":"train-workers-1"}]},"spec":{"nodeName":"node-1"},"status":{"phase":"Pending","podIP":"10.254.40.12"}}'
for p in $p0 $p1; do
    wait $p
    rc=$?
    [ $rc -eq 0 ] || { for f in "$T"/out/run-*.stderr; do tail -n 30 "$f"; done; pfk8s_die "agent exited $rc under faults, want 0"; }
done
echo "both agents exit 0 under faults in $(pfk8s_elapsed "$start")s"

pfk8s_http GET /faults > "$T/faults-after.json"
pfk8s_state "$T/state.json"
pfk8s_check "$T/state.json" '
faults = json.load(open("'"$T/faults-after.json"'"))
for f in faults:
    assert f.get("count", 1) == 0, ("fault did not fire", f)
req = s["requests"]
codes = [r["status"] for r in req]
for want in (429, 410, 500, 409, 503, 0):
    assert want in codes, ("no response with status %d in the log" % want)
rot = [r for r in req if r["status"] == 401 and r["auth"] == "unknown"]
assert rot, "the rotated token was never refused"
assert any(r["auth"] == "admin" and r["t"] > rot[0]["t"] for r in req), "no success after rotation"
own = [r for r in req if r["path"] == "/api/v1/namespaces/ml/pods/train-workers-0-0-p0"]
assert own[0]["status"] == 429 and own[1]["status"] == 200, own
gap = own[1]["t"] - own[0]["t"]
assert gap >= 0.95, ("Retry-After: 1 not honoured, retried after %.3f s" % gap)
assert any("continue=" in r["path"] and r["status"] == 200 for r in req), "no paged list"
for n in ("node-0", "node-1"):
    l = labels(n)
    assert l["efa-preflight.io/status"] == "warn", l
    assert cond(n, "EFAFabricReady")["status"] == "True"
    assert len(events(n)) == 1, events(n)
    assert len([c for c in node(n)["status"]["conditions"] if c["type"] == "Ready"]) == 1
print("faults fired: %d rules, %d requests; retry after 429 waited %.2f s; %d x 401 after rotation"
      % (len(faults), len(req), gap, len(rot)))
'

# A wrong CA: fail closed before any request, nothing written.
nreq=$(python3 -c "import json; print(len(json.load(open('$T/state.json'))['requests']))")
agent 0 wrongca --ca-file "$T/certs/wrong-ca.crt" --timeout 10
rc=$?
[ $rc -eq 3 ] || pfk8s_die "wrong CA: exit $rc, want 3"
grep -q "TLS verification of https://$PFK8S_HOST_IP:$PFK8S_API_PORT failed (CA file $T/certs/wrong-ca.crt)" \
    "$T/out/wrongca-0.stderr" "$T/out/wrongca-0.stdout" ||
    { cat "$T/out/wrongca-0.stderr"; pfk8s_die "wrong CA: no clear TLS error"; }
pfk8s_state "$T/state2.json"
pfk8s_check "$T/state2.json" '
assert len(s["requests"]) == '"$nreq"', ("requests reached the server", s["requests"]['"$nreq"':])
assert all(len(events(n)) == 1 for n in ("node-0", "node-1"))
'
echo "wrong CA: exit 3, 'TLS verification ... failed (CA file .../wrong-ca.crt)', no request served, nothing written"

# A token without rights: 403, nothing written.
printf '%s' "$PFK8S_TOKEN_NONE" > "$T/token"
agent 0 forbidden --timeout 10
rc=$?
[ $rc -eq 3 ] || pfk8s_die "forbidden: exit $rc, want 3"
grep -q "HTTP 403" "$T/out/forbidden-0.stderr" "$T/out/forbidden-0.stdout" ||
    { cat "$T/out/forbidden-0.stderr"; pfk8s_die "forbidden: no 403 in the error"; }
pfk8s_state "$T/state3.json"
pfk8s_check "$T/state3.json" '
new = s["requests"]['"$nreq"':]
assert new and all(r["status"] == 403 for r in new), new
assert all(r["method"] == "GET" for r in new), new
'
echo "token without rights: exit 3, HTTP 403 reported, only GETs tried"

# A read-only token: discovery works (one pod by --peer-selector and
# --world-size 1), the first write is refused: exit 3, nothing written.
printf '%s' "$PFK8S_TOKEN_RO" > "$T/token"
agent 0 readonly --timeout 20 --peer-selector batch.kubernetes.io/job-name=train-workers-0 \
    --world-size 1
rc=$?
kube_exited 3 readonly-0 "read-only token" \
    "writing conditions on Node node-0 needs patch on nodes/status: PATCH /api/v1/nodes/node-0/status: HTTP 403"
# The table and the report tell the process's exit code and why: the
# refused write is a check of its own (Forbidden, infrastructure).
grep -q "summary: ERROR Forbidden .*(exit 3)" "$T/out/readonly-0.stdout" ||
    { cat "$T/out/readonly-0.stdout"; pfk8s_die "read-only: the summary line does not say Forbidden, exit 3"; }
python3 - "$T/out/readonly-0.json" <<'PY' || pfk8s_die "read-only: the report does not carry the refused write"
import json, sys
r = json.load(open(sys.argv[1]))
v = r["verdict"]
assert v["exit_code"] == 3 and v["reason"] == "Forbidden" and v["class"] == "infrastructure", v
pub = [c for c in r["checks"] if c["name"] == "publish"]
assert pub and pub[0]["status"] == "fail" and "HTTP 403" in pub[0]["message"], pub
PY
pfk8s_state "$T/state4.json"
pfk8s_check "$T/state4.json" '
before = json.load(open("'"$T/state3.json"'"))
assert [n["metadata"] for n in s["nodes"]] == [n["metadata"] for n in before["nodes"]]
assert len(s["events"]) == len(before["events"])
assert any(r["method"] == "PATCH" and r["status"] == 403 for r in s["requests"])
'
echo "read-only token: discovery ok, 'writing conditions on Node node-0 needs patch on nodes/status: ... HTTP 403', exit 3 in the process, the summary and the report (Forbidden), nothing written"

# RBAC without events: the Event is refused (a warning naming the verb),
# the verdict is still written and the exit code is the verdict's.
printf '%s' "$PFK8S_TOKEN2" > "$T/token"
pfk8s_admin POST /faults '[{"method": "POST", "path": "/events$", "status": 403, "count": 1}]'
agent 0 noevents --timeout 20 --peer-selector batch.kubernetes.io/job-name=train-workers-0 \
    --world-size 1
rc=$?
kube_exited 0 noevents-0 "events forbidden" \
    "event not written: needs create on events: POST /api/v1/namespaces/default/events: HTTP 403"
pfk8s_state "$T/state5.json"
pfk8s_check "$T/state5.json" '
before = json.load(open("'"$T/state4.json"'"))
assert len(s["events"]) == len(before["events"]), "an Event was written"
assert labels("node-0")["efa-preflight.io/status"] == "warn", labels("node-0")
assert cond("node-0", "EFAFabricReady")["status"] == "True"
refused = [r for r in s["requests"] if r["method"] == "POST" and r["status"] == 403]
assert len(refused) == 1, refused
later = [r["path"] for r in s["requests"] if r["method"] == "PATCH" and
         r["status"] == 200 and r["t"] > refused[0]["t"]]
assert later == ["/api/v1/nodes/node-0"], ("labels not written after the refused Event", later)
'
echo "events forbidden: 'event not written: needs create on events ... HTTP 403', verdict still written, exit 0"

pfk8s_no_token_in "$T/out"
echo "no token in $(ls "$T/out" | wc -l) log/report files"
echo "PASS"
