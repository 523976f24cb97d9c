#!/bin/bash
# SIGTERM against a real kube-apiserver (tests/kube_real), the chart's RBAC
# and a TokenRequest token. node-0 carries yesterday's pass (labels and both
# conditions True). A run of a 2-pod group whose peer never comes is
# signalled while it watches for that peer: it exits 3 within the grace
# (8 s), node-0 says status=error with both conditions Unknown/Interrupted
# ("signal 15"), no label or condition from yesterday's pass survives, and
# the writes were accepted by the real server (strategic/merge patches, the
# conditions by resourceVersion).
set -u
. "$PF_ROOT/tests/kube_real/lib.sh"
kr_init 0
T=$KR_TMP
GRACE=8
kr_start
kr_namespace efa-preflight ml
kr_rbac_from_chart --set mode=initcontainer --set 'jobNamespaces={ml}'
kr_node node-0 '{"kubernetes.io/hostname":"node-0","efa-preflight.io/status":"pass","efa-preflight.io/efa-count":"32","efa-preflight.io/busbw-gbps":"335.24","efa-preflight.io/fabric":"tested","efa-preflight.io/validated-at":"20260101T000000Z","efa-preflight.io/valid-until":"20260102T000000Z","efa-preflight.io/valid-until-epoch":"1767312000"}'
kr_ok PATCH /api/v1/nodes/node-0/status --ctype application/strategic-merge-patch+json --data '{"status":{"conditions":[
 {"type":"EFADevicesReady","status":"True","reason":"PreflightPassed","message":"yesterday","lastTransitionTime":"2026-01-01T00:00:00Z","lastHeartbeatTime":"2026-01-01T00:00:00Z"},
 {"type":"EFAFabricReady","status":"True","reason":"PreflightPassed","message":"yesterday","lastTransitionTime":"2026-01-01T00:00:00Z","lastHeartbeatTime":"2026-01-01T00:00:00Z"}]}}'
kr_jobset_pods ml 1
kr_pod_ip ml train-workers-0-0-p0 127.0.0.1
kr_token ml efa-preflight-job train-workers-0-0-p0 > "$T/token"
port=$(kr_free_port 127.0.0.1)

"$PF_BIN" run --api-server "$KR_API" --token-file "$T/token" --ca-file "$KR_CA" --no-imds \
    --pod-name train-workers-0-0-p0 --namespace ml \
    --peer-selector batch.kubernetes.io/job-name=train-workers-0 --world-size 2 \
    --port "$port" --fabric-provider tcp --engine host \
    -b 64K -e 64K -n 1 -w 0 --timeout 60 --expect-gpus 2 --taint-on-failure -vv \
    > "$T/out/run.stdout" 2> "$T/out/run.stderr" &
apid=$!
kr_wait_watchers pods 1
kill -0 "$apid" 2>/dev/null || { cat "$T/out/run.stderr"; kr_die "the agent exited while watching"; }
kr_state "$T/marked.json"
t0=$(date +%s.%N)
kill -TERM "$apid"
for t in $(seq 1 200); do
    kill -0 "$apid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$apid" 2>/dev/null && { kill -KILL "$apid"; kr_die "still running 20 s after SIGTERM"; }
wait "$apid"
rc=$?
secs=$(kr_elapsed "$t0")
[ $rc -eq 3 ] || { cat "$T/out/run.stderr"; kr_die "exit $rc after SIGTERM, want 3 (Interrupted)"; }
awk -v s="$secs" -v g="$GRACE" 'BEGIN { exit !(s <= g + 1.5) }' || kr_die "exit $secs s after SIGTERM, grace is $GRACE s"
grep -q "Terminated: the run stopped before its verdict (Interrupted)" "$T/out/run.stderr" ||
    { cat "$T/out/run.stderr"; kr_die "no Interrupted message"; }
kr_state "$T/state.json"
kr_check "$T/marked.json" '
l = labels("node-0")
assert l["efa-preflight.io/status"] == "validating", ("not marked validating while it ran", l)
for t in ("EFADevicesReady", "EFAFabricReady"):
    assert cond("node-0", t)["status"] == "Unknown", cond("node-0", t)
'
kr_check "$T/state.json" '
l = labels("node-0")
assert l["efa-preflight.io/status"] == "error", l
for k in ("valid-until", "validated-at", "busbw-gbps", "fabric"):
    assert "efa-preflight.io/" + k not in l, ("stale " + k, l)
for t in ("EFADevicesReady", "EFAFabricReady"):
    c = cond("node-0", t)
    assert c["status"] == "Unknown" and c["reason"] == "Interrupted", c
    assert "signal 15" in c["message"], c
    assert c["message"] != "yesterday"
assert cond("node-0", "Ready")["status"] == "True"
bad = [(x["verb"], x["requestURI"], x["responseStatus"]["code"]) for x in audit()
       if x["stage"] == "ResponseComplete" and x["responseStatus"]["code"] >= 400]
assert not bad, bad
# A `valid-until-epoch > now` selector must not admit the node.
import time
e = l.get("efa-preflight.io/valid-until-epoch")
assert e is None or int(e) <= time.time(), ("valid-until-epoch in the future on an error node", l)
print("valid-until-epoch: %s" % e)
'
echo "SIGTERM while watching for the peer: exit 3 in ${secs}s, validating while it ran, then status=error, both conditions Unknown/Interrupted, yesterday's pass gone"
kr_no_token_in "$T/out"
echo "PASS"
