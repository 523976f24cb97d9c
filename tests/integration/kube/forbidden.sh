#!/bin/bash
# RBAC refusals from a real kube-apiserver (tests/kube_real): the chart's
# RBAC applied, then taken apart one binding at a time, the agent's token a
# real TokenRequest one. Each run is a one-pod group on node-0.
#   1. The chart's RBAC whole: the run passes (exit 0), verdict written.
#   2. The ClusterRole without events (as an admin might trim it): the Event
#      is refused with a warning naming the verb, the verdict is still
#      written, exit 0.
#   3. The ClusterRoleBinding removed (no node rights): 403, exit 3, the
#      summary and the report say Forbidden, nothing written to node-0.
#   4. The RoleBinding removed too (no pod rights): 403 on the own pod, exit
#      3, only reads tried.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kr_node node-0 '{"kubernetes.io/hostname":"node-0"}'
kr_jobset_pods ml 1
kr_pod_ip ml train-workers-0-0-p0 127.0.0.1
kr_token ml efa-preflight-job train-workers-0-0-p0 > "$T/token"
port=$(kr_free_port 127.0.0.1)

agent() {   # agent TAG [extra args]
    local tag=$1
    shift
    "$PF_BIN" run --api-server "$KR_API" --token-file "$T/token" --ca-file "$KR_CA" --no-imds \
        --pod-name train-workers-0-0-p0 --namespace ml \
        --peer-selector batch.kubernetes.io/job-name=train-workers-0 --world-size 1 \
        --port "$port" --fabric-provider tcp --engine host \
        -b 64K -e 64K -n 1 -w 0 --timeout 30 --taint-on-failure \
        --report "$T/out/$tag.json" -vv "$@" > "$T/out/$tag.stdout" 2> "$T/out/$tag.stderr"
}
# requests of the agent (audit, completed) since line N of the audit log
since() { tail -n +"$(( $1 + 1 ))" "$T/out/audit.log" | grep '"stage":"ResponseComplete"' | grep 'system:serviceaccount:ml:efa-preflight-job'; }
mark() { wc -l < "$T/out/audit.log"; }

# 1.
agent whole
rc=$?
kube_exited 0 whole "chart RBAC"
kr_state "$T/s1.json"
kr_check "$T/s1.json" '
assert labels("node-0")["efa-preflight.io/status"] == "warn", labels("node-0")
assert len(events("node-0")) == 1
'
echo "chart RBAC: exit 0, verdict and Event written"

# 2.
kr_ok PATCH /apis/rbac.authorization.k8s.io/v1/clusterroles/efa-preflight --ctype application/json-patch+json \
    --data "$(kr_call GET /apis/rbac.authorization.k8s.io/v1/clusterroles/efa-preflight | python3 -c '
import json, sys
r = json.load(sys.stdin)["rules"]
keep = [x for x in r if "events" not in x.get("resources", [])]
assert len(keep) < len(r)
print(json.dumps([{"op": "replace", "path": "/rules", "value": keep}]))')"
kr_wait_can false create events default
kr_wait_can true patch nodes -
m=$(mark)
agent noevents
rc=$?
kube_exited 0 noevents "events forbidden" \
    "event not written: needs create on events: POST /api/v1/namespaces/default/events: HTTP 403"
kr_state "$T/s2.json"
kr_check "$T/s2.json" '
assert len(events("node-0")) == 1, "an Event was written"
assert labels("node-0")["efa-preflight.io/status"] == "warn", labels("node-0")
'
[ "$(since "$m" | grep -c '"code":403')" = 1 ] || { since "$m"; kr_die "events forbidden: want exactly one 403"; }
echo "ClusterRole without events: 'event not written: needs create on events ... HTTP 403', verdict still written, exit 0"

# 3.
kr_ok DELETE /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/efa-preflight-job-ml
kr_wait_can false patch nodes -
kr_state "$T/s3.json"
m=$(mark)
agent nonode
rc=$?
kube_exited 3 nonode "no node rights" "HTTP 403"
grep -q "summary: ERROR Forbidden .*(exit 3)" "$T/out/nonode.stdout" ||
    { cat "$T/out/nonode.stdout"; kr_die "no node rights: the summary does not say Forbidden, exit 3"; }
python3 - "$T/out/nonode.json" <<'PY' || kr_die "no node rights: the report does not say Forbidden"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["exit_code"] == 3 and v["reason"] == "Forbidden" and v["class"] == "infrastructure", v
PY
kr_state "$T/s3b.json"
kr_check "$T/s3b.json" '
before = json.load(open("'"$T/s3.json"'"))
assert node("node-0")["metadata"]["resourceVersion"] == \
    next(n for n in before["nodes"] if n["metadata"]["name"] == "node-0")["metadata"]["resourceVersion"], "node-0 changed"
assert len(s["events"]) == len(before["events"])
'
echo "ClusterRoleBinding removed: $(grep -o 'error: .*HTTP 403' "$T/out/nonode.stderr" | head -1 | cut -c1-140); exit 3, Forbidden in the summary and report, node-0 untouched"
since "$m" | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
print("  requests: " + ", ".join("%s %s %d" % (x["verb"], x["objectRef"].get("resource", "") +
      ("/" + x["objectRef"]["subresource"] if x["objectRef"].get("subresource") else ""),
      x["responseStatus"]["code"]) for x in r))'

# 4.
kr_ok DELETE /apis/rbac.authorization.k8s.io/v1/namespaces/ml/rolebindings/efa-preflight-job
kr_wait_can false get pods ml
m=$(mark)
agent nopods
rc=$?
kube_exited 3 nopods "no pod rights" "HTTP 403"
since "$m" | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
assert r and all(x["responseStatus"]["code"] == 403 for x in r), [(x["verb"], x["requestURI"], x["responseStatus"]["code"]) for x in r]
assert all(x["verb"] in ("get", "list", "watch") for x in r), r
' || kr_die "no pod rights: a request other than a refused read"
echo "RoleBinding removed too: $(grep -o 'error: .*HTTP 403' "$T/out/nopods.stderr" | head -1 | cut -c1-140); exit 3, only refused reads"
kr_no_token_in "$T/out"
echo "PASS"
