#!/bin/bash
# Crash-consistent publishing. A Node carries yesterday's pass (status=pass,
# valid-until, busbw, both conditions True); today's run fails
# (--expect-gpus 2: GPUCountMismatch). The agent gets SIGTERM at each step,
# the fake API server holding the write of that step in flight (latency):
#   mark      the validating labels write, before the run
#   conds     the verdict's conditions write
#   event     the Event
#   taint     the taint write
#   labels    the verdict's labels write
#   stuck     a labels write that takes longer than the grace
# After each: no label says pass, valid-until (and valid-until-epoch) is
# gone, no condition says
# True from yesterday next to a failing one; a SIGTERM before the verdict
# leaves status=error and both conditions Unknown/Interrupted (exit 3); one
# during the verdict lets it finish (status=fail, exit 1); every exit comes
# within the grace (8 s) of the signal. Without a signal, the run marks the
# Node validating before anything else and then writes the verdict. (A
# SIGTERM while discovery waits for a peer, on both API servers:
# kube/sigterm.sh.)
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
pfk8s_init
T=$PFK8S_TMP
GRACE=8

python3 - "$T/objects.json" "$T/node.json" <<'EOF'
import json, sys
node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "node-0", "labels": {
    "kubernetes.io/hostname": "node-0",
    "efa-preflight.io/status": "pass", "efa-preflight.io/efa-count": "32",
    "efa-preflight.io/busbw-gbps": "335.24", "efa-preflight.io/fabric": "tested",
    "efa-preflight.io/validated-at": "20260101T000000Z",
    "efa-preflight.io/valid-until": "20260102T000000Z",
    "efa-preflight.io/valid-until-epoch": "4102444800"}},
    "spec": {},
    "status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "lastTransitionTime": "2025-12-01T00:00:00Z"},
        {"type": "EFADevicesReady", "status": "True", "reason": "PreflightPassed",
         "message": "yesterday", "lastTransitionTime": "2026-01-01T00:00:00Z",
         "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
        {"type": "EFAFabricReady", "status": "True", "reason": "PreflightPassed",
         "message": "yesterday", "lastTransitionTime": "2026-01-01T00:00:00Z",
         "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]}}
job = {"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "train-workers-0",
       "namespace": "ml"}, "spec": {"parallelism": 1, "completions": 1}}
pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {
    "name": "train-workers-0-0-p0", "namespace": "ml",
    "labels": {"batch.kubernetes.io/job-name": "train-workers-0"},
    "ownerReferences": [{"kind": "Job", "name": "train-workers-0", "controller": True}]},
    "spec": {"nodeName": "node-0"}, "status": {"phase": "Pending", "podIP": "127.0.0.1"}}
json.dump([node, job, pod], open(sys.argv[1], "w"), indent=1)
json.dump(node, open(sys.argv[2], "w"))
EOF
pfk8s_server 127.0.0.1 "$T/objects.json"
API="https://127.0.0.1:$PFK8S_API_PORT"

# agent TAG [extra args]: in the background, pid in $apid
agent() {
    local tag=$1
    shift
    since=$(date +%s.%N)
    "$PF_BIN" run --api-server "$API" --token-file "$T/token" \
        --ca-file "$T/certs/ca.crt" --no-imds --pod-name train-workers-0-0-p0 \
        --namespace ml --peer-selector batch.kubernetes.io/job-name=train-workers-0 \
        --world-size 1 --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 64K -n 1 -w 0 --timeout 30 --expect-gpus 2 --taint-on-failure --max-tainted 1 -vv "$@" \
        > "$T/out/$tag.stdout" 2> "$T/out/$tag.stderr" &
    apid=$!
}

# reset: yesterday's pass back on the Node, no faults, logs cleared.
reset() {
    pfk8s_admin POST /faults '[]'
    pfk8s_admin POST /objects "$(cat "$T/node.json")"
    pfk8s_admin POST /objects '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"train-workers-0-0-p0","namespace":"ml","labels":{"batch.kubernetes.io/job-name":"train-workers-0"},"ownerReferences":[{"kind":"Job","name":"train-workers-0","controller":true}]},"spec":{"nodeName":"node-0"},"status":{"phase":"Pending","podIP":"127.0.0.1"}}'
}

# arrived METHOD PATH_REGEX N: wait (10 s) until the N-th such request of
# this agent (since it started) came in.
arrived() {
    local i
    for i in $(seq 1 100); do
        pfk8s_state "$T/now.json"
        python3 - "$T/now.json" "$1" "$2" "$3" "$since" <<'EOF' && return 0
import json, re, sys
s = json.load(open(sys.argv[1]))
n = sum(1 for a in s["arrivals"] if a["method"] == sys.argv[2] and
        a["t"] >= float(sys.argv[5]) - 0.01 and
        re.search(sys.argv[3], a["path"].split("?")[0]))
sys.exit(0 if n >= int(sys.argv[4]) else 1)
EOF
        sleep 0.1
    done
    cat "$T/out/$tag.stderr"
    pfk8s_die "$tag: request $1 $2 #$3 never came"
}

# term_and_wait TAG: SIGTERM, wait for the exit; sets rc and secs.
term_and_wait() { kube_term "$apid" "$1" "$GRACE"; }

# settle: the writes held in flight land (their latency passes) before the
# state is read.
settle() { sleep "${1:-0}"; pfk8s_state "$T/state.json"; }

no_stale_pass='
l = labels("node-0")
st = l.get("efa-preflight.io/status")
assert st != "pass", ("stale pass", l)
assert l.get("efa-preflight.io/valid-until") != "20260102T000000Z", ("stale valid-until", l)
assert "efa-preflight.io/busbw-gbps" not in l, ("stale busbw", l)
# valid-until-epoch too: a "valid-until-epoch > now" selector must not
# admit a node that is being validated, was interrupted or is in error.
assert l.get("efa-preflight.io/valid-until-epoch") != "4102444800", ("stale valid-until-epoch", l)
assert st not in ("error", "validating") or "efa-preflight.io/valid-until-epoch" not in l, ("epoch on a node without a verdict", l)
for t in ("EFADevicesReady", "EFAFabricReady"):
    c = cond("node-0", t)
    assert c["message"] != "yesterday" or st not in ("pass", "fail"), ("yesterday next to a verdict", c, l)
'

# 1. No signal: validating first, then the verdict.
reset
agent plain
wait "$apid"; rc=$?
[ $rc -eq 1 ] || { cat "$T/out/plain.stderr"; pfk8s_die "plain run: exit $rc, want 1"; }
settle
pfk8s_check "$T/state.json" "$no_stale_pass"'
assert labels("node-0")["efa-preflight.io/status"] == "fail", labels("node-0")
assert cond("node-0", "EFADevicesReady")["status"] == "False"
w = [r for r in s["arrivals"] if r["method"] in ("PATCH", "POST") and r["t"] >= '"$since"' - 0.01]
assert w[0]["path"] == "/api/v1/nodes/node-0" and w[1]["path"] == "/api/v1/nodes/node-0/status", w
'
grep -q "marked validating until the verdict" "$T/out/plain.stderr" || pfk8s_die "plain run: no mark logged"
echo "no signal: labels validating, conditions Unknown/Validating, then the verdict (status=fail, exit 1)"

# 2. SIGTERM while the mark's labels write is in flight (3 s).
reset
pfk8s_admin POST /faults '[{"method": "PATCH", "path": "/api/v1/nodes/node-0$", "latency_ms": 3000, "count": 1}]'
agent mark --world-size 2
arrived PATCH '/api/v1/nodes/node-0$' 1
term_and_wait mark
[ $rc -eq 3 ] || { cat "$T/out/mark.stderr"; pfk8s_die "mark: exit $rc, want 3"; }
settle 3.5
pfk8s_check "$T/state.json" "$no_stale_pass"'
assert labels("node-0")["efa-preflight.io/status"] in ("error", "validating"), labels("node-0")
'
echo "SIGTERM during the mark: exit 3 in ${secs}s, status=$(python3 -c "import json; print(json.load(open('$T/state.json'))['nodes'][0]['metadata']['labels']['efa-preflight.io/status'])")"

# 3-6. SIGTERM while a verdict write is in flight (3 s): it finishes.
#      skip: the mark's own PATCHes come first.
for step in 'conds PATCH /api/v1/nodes/node-0/status$ 1' \
            'event POST /events$ 0' \
            'taint PATCH /api/v1/nodes/node-0$ 1' \
            'labels PATCH /api/v1/nodes/node-0$ 2'; do
    set -- $step
    tag=$1 method=$2 path=$3 skip=$4
    reset
    pfk8s_admin POST /faults "[{\"method\": \"$method\", \"path\": \"$path\", \"latency_ms\": 3000, \"skip\": $skip, \"count\": 1}]"
    agent "$tag"
    arrived "$method" "$path" $((skip + 1))
    term_and_wait "$tag"
    [ $rc -eq 1 ] || { cat "$T/out/$tag.stderr"; pfk8s_die "$tag: exit $rc, want 1 (the verdict, finished)"; }
    settle
    pfk8s_check "$T/state.json" "$no_stale_pass"'
assert labels("node-0")["efa-preflight.io/status"] == "fail", labels("node-0")
assert cond("node-0", "EFADevicesReady")["status"] == "False"
assert any(t["key"] == "efa-preflight.io/unhealthy" for t in node("node-0")["spec"].get("taints", [])), ("no taint", node("node-0")["spec"])
'
    grep -q "finishing the verdict being written" "$T/out/$tag.stderr" ||
        { cat "$T/out/$tag.stderr"; pfk8s_die "$tag: the signal was not taken while publishing"; }
    echo "SIGTERM during the verdict's $tag write: finished, status=fail, exit 1 in ${secs}s"
done

# 7. A verdict write stuck longer than the grace: exit at the grace, the
#    Node never says pass meanwhile.
reset
pfk8s_admin POST /faults '[{"method": "PATCH", "path": "/api/v1/nodes/node-0$", "latency_ms": 12000, "skip": 2, "count": 1}]'
agent stuck
arrived PATCH '/api/v1/nodes/node-0$' 3
term_and_wait stuck
[ $rc -eq 3 ] || { cat "$T/out/stuck.stderr"; pfk8s_die "stuck: exit $rc, want 3"; }
settle
pfk8s_check "$T/state.json" "$no_stale_pass"'
assert labels("node-0")["efa-preflight.io/status"] == "validating", labels("node-0")
assert cond("node-0", "EFADevicesReady")["status"] == "False"
'
grep -q "was not written within $GRACE s" "$T/out/stuck.stderr" || pfk8s_die "stuck: no grace message"
echo "verdict write stuck past the grace: exit 3 in ${secs}s, status=validating next to the new conditions"
echo "PASS"
