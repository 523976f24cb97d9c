#!/bin/bash
# SIGTERM while discovery waits for a peer. node-0 carries yesterday's pass
# (status=pass, valid-until and a valid-until-epoch in the future, busbw,
# both conditions True). A run of a 2-pod group whose peer never comes
# (real side: the chart's RBAC, mode initcontainer, and a TokenRequest token
# bound to the pod) marks node-0 validating, both conditions Unknown, and is
# signalled while it watches for that peer: it exits 3 within the grace
# (8 s) saying Interrupted; node-0 says status=error with both conditions
# Unknown/Interrupted ("signal 15"), no label or condition from yesterday's
# pass survives (no valid-until-epoch that a `> now` selector would admit),
# the kubelet's Ready stays, and no request was refused. The SIGTERMs while
# a write is held in flight are kube/sigterm_writes.sh (fake side).
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
GRACE=8
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_node node-0 '{"kubernetes.io/hostname":"node-0","efa-preflight.io/status":"pass","efa-preflight.io/efa-count":"32","efa-preflight.io/busbw-gbps":"335.24","efa-preflight.io/fabric":"tested","efa-preflight.io/validated-at":"20260101T000000Z","efa-preflight.io/valid-until":"20260102T000000Z","efa-preflight.io/valid-until-epoch":"4102444800"}' '[]' '[
 {"type":"EFADevicesReady","status":"True","reason":"PreflightPassed","message":"yesterday","lastTransitionTime":"2026-01-01T00:00:00Z","lastHeartbeatTime":"2026-01-01T00:00:00Z"},
 {"type":"EFAFabricReady","status":"True","reason":"PreflightPassed","message":"yesterday","lastTransitionTime":"2026-01-01T00:00:00Z","lastHeartbeatTime":"2026-01-01T00:00:00Z"}]'
kube_job_pod 127.0.0.1

"$PF_BIN" run --api-server "$KUBE_API" --token-file "$T/token-pod" --ca-file "$KUBE_CA" --no-imds \
    --pod-name train-workers-0-0-p0 --namespace ml \
    --peer-selector batch.kubernetes.io/job-name=train-workers-0 --world-size 2 \
    --port "$KUBE_RDV_PORT" --fabric-provider tcp --engine host \
    -b 64K -e 64K -n 1 -w 0 --timeout 60 --expect-gpus 2 --taint-on-failure -vv \
    > "$T/out/run.stdout" 2> "$T/out/run.stderr" &
apid=$!
kube_wait_watch ml
kill -0 "$apid" 2>/dev/null || { cat "$T/out/run.stderr"; kube_die "the agent exited while watching"; }
kube_state "$T/marked.json"
kube_term "$apid" run "$GRACE"
[ $rc -eq 3 ] || { cat "$T/out/run.stderr"; kube_die "exit $rc after SIGTERM, want 3 (Interrupted)"; }
grep -q "Terminated: the run stopped before its verdict (Interrupted)" "$T/out/run.stderr" ||
    { cat "$T/out/run.stderr"; kube_die "no Interrupted message"; }
kube_state "$T/state.json"
kube_check "$T/marked.json" '
l = labels("node-0")
assert l["efa-preflight.io/status"] == "validating", ("not marked validating while it ran", l)
for t in ("EFADevicesReady", "EFAFabricReady"):
    assert cond("node-0", t)["status"] == "Unknown", cond("node-0", t)
'
kube_check "$T/state.json" '
l = labels("node-0")
assert l["efa-preflight.io/status"] == "error", l
# valid-until-epoch too: a `valid-until-epoch > now` selector must not
# admit a node in error.
for k in ("valid-until", "valid-until-epoch", "validated-at", "busbw-gbps", "fabric"):
    assert "efa-preflight.io/" + k not in l, ("stale " + k, l)
for t in ("EFADevicesReady", "EFAFabricReady"):
    c = cond("node-0", t)
    assert c["status"] == "Unknown" and c["reason"] == "Interrupted", c
    assert "signal 15" in c["message"], c
    assert c["message"] != "yesterday"
assert cond("node-0", "Ready")["status"] == "True"
assert not refused(), refused()
'
echo "SIGTERM while watching for the peer: exit 3 in ${secs}s, validating while it ran, then status=error, both conditions Unknown/Interrupted, yesterday's pass gone"
kube_no_token_in "$T/out"
echo "PASS"
