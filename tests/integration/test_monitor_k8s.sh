#!/bin/bash
# `efa-preflight monitor` against the fake API server, on a private copy of
# the p5 fixture whose counters a loop moves while it runs:
#  1. an idle node whose valid-until passed is marked pending (a finished
#     EFA pod and the monitor's own pod do not count, an EFA pod on another
#     node neither); EFANICHealthy is True with EFANICsHealthy;
#  2. one NIC's retransmit timeouts rising every interval: EFANICHealthy
#     False (EFANICErrorRate) and a Warning Event naming the device, the
#     counter and its rate; once they stop, EFANICRecovered clears it;
#  3. SIGTERM ends the monitor with exit 0, promptly;
#  4. the same expired node with a running pod that requests EFA devices:
#     the monitor lists the node's pods and leaves the status label alone;
#  5. --monitor-taint: a NIC fault taints the node only under the
#     cluster-wide budget (full while node-1 carries the mark: no taint,
#     TaintCapReached), and the taint comes off with the recovery. Without
#     the flag (1-4) no taint is ever written.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP

"$PF_ROOT/tests/fakes/make_sysfs.sh" "$T/fixtures" || pfk8s_die "fixtures"
cp -a "$T/fixtures/p5.48xlarge" "$T/fx"
FX=$T/fx
MON_PID=
BUMP=
# The counter loop and the monitor end with the test, whatever ends it.
stop_ours() {
    [ -n "$BUMP" ] && kill "$BUMP" 2>/dev/null
    [ -n "$MON_PID" ] && kill -9 "$MON_PID" 2>/dev/null
    pfk8s_cleanup
}
trap stop_ours EXIT
CTR="$FX/sys/class/infiniband/rdmap20s27/ports/1/hw_counters/retrans_timeout_events"

# objects.json: EXPIRED_STATUS, and whether node-0 has a running EFA pod.
objects() {   # objects FILE BUSY(0|1) [TAINT_NODE1(0|1)]
    python3 - "$1" "$2" "${3:-0}" <<'EOF'
import json, sys, time
out, busy, taint1 = sys.argv[1], sys.argv[2] == '1', sys.argv[3] == '1'
past = int(time.time()) - 3600
labels = {"kubernetes.io/hostname": "node-0",
          "node.kubernetes.io/instance-type": "p5.48xlarge",
          "efa-preflight.io/status": "pass",
          "efa-preflight.io/validated-at": time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(past - 86400)),
          "efa-preflight.io/valid-until": time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(past)),
          "efa-preflight.io/valid-until-epoch": str(past)}
kubelet = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2025-12-01T00:00:00Z"}]
def pod(name, ns, node, efa, phase):
    res = {"limits": {"vpc.amazonaws.com/efa": efa}} if efa else {}
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": res}]},
            "status": {"phase": phase}}
objs = [{"kind": "Node", "apiVersion": "v1",
         "metadata": {"name": n, "labels": dict(labels, **{"kubernetes.io/hostname": n})},
         "status": {"conditions": kubelet}} for n in ("node-0", "node-1")]
objs += [pod("efa-preflight-monitor-abcde", "efa-preflight", "node-0", "", "Running"),
         pod("old-train-0", "ml", "node-0", "32", "Succeeded"),
         pod("train-on-1", "ml", "node-1", "32", "Running")]
if busy:
    objs.append(pod("train-0", "ml", "node-0", "32", "Running"))
if taint1:
    objs[1]["spec"] = {"taints": [{"key": "efa-preflight.io/unhealthy",
                                   "value": "EFANICErrorRate", "effect": "NoSchedule"}]}
json.dump(objs, open(out, "w"))
EOF
}

monitor() {   # monitor TAG [args...]: in the background, pid in MON_PID
    local tag=$1
    shift
    "$PF_BIN" monitor --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "$T/token" --ca-file "$T/certs/ca.crt" \
        --pod-name efa-preflight-monitor-abcde --namespace efa-preflight \
        --node-name node-0 --sysfs-root "$FX" --dev-root "$FX" --no-imds \
        --interval 0.2 -vv "$@" >"$T/out/$tag.stdout" 2>"$T/out/$tag.stderr" &
    MON_PID=$!
}

untainted='assert not any(t["key"] == "efa-preflight.io/unhealthy" for t in node("node-0").get("spec", {}).get("taints", [])), node("node-0").get("spec")'
tainted='assert any(t["key"] == "efa-preflight.io/unhealthy" for t in node("node-0").get("spec", {}).get("taints", [])), node("node-0").get("spec")'
bump_start() {
    ( while :; do
          v=$(cat "$CTR"); echo $((v + 3)) >"$CTR.tmp" && mv "$CTR.tmp" "$CTR"
          sleep 0.1
      done ) &
    BUMP=$!
}
bump_stop() { kill "$BUMP"; wait "$BUMP" 2>/dev/null; BUMP=; }
restart_server() {   # restart_server BUSY TAINT_NODE1
    kill "$PFK8S_SERVER_PID"
    wait "$PFK8S_SERVER_PID" 2>/dev/null
    objects "$T/objects.json" "$1" "$2"
    pfk8s_server 127.0.0.1 "$T/objects.json"
}

# wait_for SECONDS 'python check' WHAT: poll the server's state.
wait_for() {
    local deadline=$(( $(date +%s) + $1 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        pfk8s_state "$T/state.json"
        ( pfk8s_check "$T/state.json" "$2" ) >/dev/null 2>&1 && return 0
        kill -0 "$MON_PID" 2>/dev/null || { tail -n 20 "$T/out/"*.stderr; pfk8s_die "the monitor died waiting for: $3"; }
        sleep 0.2
    done
    tail -n 30 "$T/out/"*.stderr
    pfk8s_check "$T/state.json" "$2"
    pfk8s_die "not within $1 s: $3"
}

objects "$T/objects.json" 0
pfk8s_server 127.0.0.1 "$T/objects.json"

# 1. Idle, expired: pending.
monitor idle
wait_for 15 'assert labels("node-0")["efa-preflight.io/status"] == "pending"' \
    "node-0 marked pending"
wait_for 10 '
c = cond("node-0", "EFANICHealthy")
assert c and c["status"] == "True" and c["reason"] == "EFANICsHealthy", c
assert any(e["reason"] == "RevalidationRequested" and "valid-until passed" in e["message"]
           for e in events("node-0")), events("node-0")
assert labels("node-1")["efa-preflight.io/status"] == "pass", "node-1 touched"
k = cond("node-0", "Ready")
assert k and k["reason"] == "KubeletReady", "the kubelet condition was lost"' \
    "EFANICHealthy True and a RevalidationRequested Event"
echo "ok   idle node past valid-until: status=pending, EFANICHealthy True, Event RevalidationRequested"

# 2. One NIC degrading, then recovering. node-0 is first validated again
#    (pass, valid for years), so the recovery itself is what sends it back
#    to pending.
python3 - "$T/objects.json" "$T/node0.json" <<'EOF2'
import json, sys
n = [o for o in json.load(open(sys.argv[1])) if o["kind"] == "Node" and o["metadata"]["name"] == "node-0"][0]
n["metadata"]["labels"]["efa-preflight.io/valid-until-epoch"] = "4102444800"
n["metadata"]["labels"]["efa-preflight.io/valid-until"] = "21000101T000000Z"
json.dump(n, open(sys.argv[2], "w"))
EOF2
pfk8s_admin POST /objects "$(cat "$T/node0.json")"
bump_start
wait_for 15 '
c = cond("node-0", "EFANICHealthy")
assert c and c["status"] == "False" and c["reason"] == "EFANICErrorRate", c
assert "rdmap20s27" in c["message"], c
ev = [e for e in events("node-0") if e["reason"] == "EFANICErrorRate"]
assert len(ev) == 1 and ev[0]["type"] == "Warning", ev
assert re.search(r"rdmap20s27: retrans_timeout_events rising at [0-9.]+/s for 3 intervals", ev[0]["message"]), ev' \
    "EFANICHealthy False naming rdmap20s27"
echo "ok   rdmap20s27's retrans_timeout_events rising: EFANICHealthy False (EFANICErrorRate), one Warning Event naming it"
pfk8s_check "$T/state.json" "$untainted"
bump_stop
wait_for 15 '
c = cond("node-0", "EFANICHealthy")
assert c and c["status"] == "True", c
ev = [e for e in events("node-0") if e["reason"] == "EFANICRecovered"]
assert len(ev) == 1 and "rdmap20s27" in ev[0]["message"] and ev[0]["type"] == "Normal", ev
assert labels("node-0")["efa-preflight.io/status"] == "pending", labels("node-0")
assert any(e["reason"] == "RevalidationRequested" and "a NIC fault cleared" in e["message"]
           for e in events("node-0")), events("node-0")' \
    "the fault cleared and node-0 pending again"
echo "ok   counters quiet again: EFANICRecovered after --monitor-clear intervals, and the idle node marked pending to be proven again"

# 3. SIGTERM: a clean, prompt exit.
t0=$(date +%s.%N)
kill -TERM "$MON_PID"
for _ in $(seq 50); do kill -0 "$MON_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$MON_PID" 2>/dev/null && pfk8s_die "the monitor still runs 5 s after SIGTERM"
wait "$MON_PID"
rc=$?
MON_PID=
[ $rc -eq 0 ] || { tail "$T/out/idle.stderr"; pfk8s_die "SIGTERM: exit $rc, want 0"; }
echo "ok   SIGTERM: exit 0 after $(pfk8s_elapsed "$t0") s"

# 4. A job holds the devices: untouched.
restart_server 1 0
monitor busy --monitor-intervals 5
wait "$MON_PID"
rc=$?
MON_PID=
[ $rc -eq 0 ] || { tail "$T/out/busy.stderr"; pfk8s_die "busy run: exit $rc"; }
pfk8s_state "$T/state.json"
pfk8s_check "$T/state.json" '
assert labels("node-0")["efa-preflight.io/status"] == "pass", labels("node-0")
pods = [r for r in s["requests"] if r["path"].startswith("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-0")]
assert pods, "the monitor never listed the node'"'"'s pods"
assert not any(e["reason"] == "RevalidationRequested" for e in events("node-0"))'
grep -q "pod ml/train-0 holds EFA devices" "$T/out/busy.stderr" ||
    pfk8s_die "the log does not say which pod held the devices"
echo "ok   the same node with a running EFA pod: pods listed, status label left as it was"

# 5. --monitor-taint, under the budget.
stop_monitor() {
    kill -TERM "$MON_PID"
    wait "$MON_PID"
    local rc=$?
    MON_PID=
    [ $rc -eq 0 ] || pfk8s_die "SIGTERM: exit $rc"
}
restart_server 0 1
monitor taintfull --monitor-taint --no-revalidate
bump_start
wait_for 15 'c = cond("node-0", "EFANICHealthy"); assert c and c["status"] == "False", c' \
    "the fault with the budget full"
bump_stop
# The budget is asked right after the condition is written: wait for it.
deadline=$(( $(date +%s) + 15 ))
until grep -q "not tainted (TaintCapReached)" "$T/out/taintfull.stderr"; do
    [ "$(date +%s)" -lt "$deadline" ] ||
        pfk8s_die "the log does not say the budget was full: $(grep -i taint "$T/out/taintfull.stderr")"
    sleep 0.2
done
pfk8s_state "$T/state.json"
pfk8s_check "$T/state.json" "$untainted"
stop_monitor
echo "ok   --monitor-taint with the budget full (node-1 marked, max 1 of 2): node-0 not tainted, TaintCapReached logged"

restart_server 0 0
monitor taint --monitor-taint --no-revalidate
bump_start
wait_for 15 "$tainted"'
cm = [c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-taint-budget"]
assert cm and "node-0" in cm[0].get("data", {}), cm' "node-0 tainted under the budget"
bump_stop
wait_for 15 "$untainted"'
c = cond("node-0", "EFANICHealthy"); assert c["status"] == "True", c
cm = [c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-taint-budget"]
assert not cm or "node-0" not in cm[0].get("data", {}), cm' "the taint off after the recovery"
stop_monitor
echo "ok   --monitor-taint with room in the budget: tainted with its slot taken, untainted and released after the recovery"
