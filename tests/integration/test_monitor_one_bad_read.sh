#!/bin/bash
# `efa-preflight monitor --monitor-taint` against the fake API server: one
# bad read is noted, nothing more; the same fault on --monitor-raise (3)
# reads in a row is a fault.
#  1. a port DOWN for exactly one read, then a NIC missing from sysfs for
#     exactly one read (each put back as soon as the monitor logged it,
#     long before its next read): EFANICHealthy stays True with its
#     lastTransitionTime, no Warning Event, no taint, no budget slot, no
#     re-validation; the textfile showed efa_preflight_nic_bad_reads 1;
#  2. the port DOWN and left so: logged on 1 and 2 of 3 reads, then
#     EFANICHealthy False (EFANICLinkDown), a Warning Event and the taint
#     under the budget; back ACTIVE, the taint comes off.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP

"$PF_ROOT/tests/fakes/make_sysfs.sh" "$T/fixtures" || pfk8s_die "fixtures"
cp -a "$T/fixtures/p5.48xlarge" "$T/fx"
FX=$T/fx
MON_PID=
stop_ours() {
    [ -n "$MON_PID" ] && kill -9 "$MON_PID" 2>/dev/null
    pfk8s_cleanup
}
trap stop_ours EXIT
STATE=$FX/sys/class/infiniband/rdmap16s27/ports/1/state
DEV=$FX/sys/class/infiniband/rdmap40s27
PROM=$T/monitor.prom

# node-0 validated and valid for years: only a cleared fault would mark it
# pending again.
python3 - "$T/objects.json" <<'EOF'
import json, sys
labels = {"kubernetes.io/hostname": "node-0", "node.kubernetes.io/instance-type": "p5.48xlarge",
          "efa-preflight.io/status": "pass", "efa-preflight.io/valid-until": "21000101T000000Z",
          "efa-preflight.io/valid-until-epoch": "4102444800"}
json.dump([{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "node-0", "labels": labels},
            "status": {"conditions": []}},
           {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "efa-preflight-monitor-abcde", "namespace": "efa-preflight"},
            "spec": {"nodeName": "node-0", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"}}], open(sys.argv[1], "w"))
EOF
pfk8s_server 127.0.0.1 "$T/objects.json"

# One read a second: a sysfs change undone within a few ms of the monitor's
# log line is seen by that read alone.
"$PF_BIN" monitor --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
    --token-file "$T/token" --ca-file "$T/certs/ca.crt" \
    --pod-name efa-preflight-monitor-abcde --namespace efa-preflight \
    --node-name node-0 --sysfs-root "$FX" --dev-root "$FX" --no-imds \
    --interval 1 --monitor-raise 3 --monitor-clear 2 --monitor-taint \
    --metrics-textfile "$PROM" -v >"$T/out.log" 2>"$T/err.log" &
MON_PID=$!

wait_log() {   # wait_log SECONDS PATTERN WHAT
    local deadline=$(( $(date +%s) + $1 ))
    until grep -q -- "$2" "$T/err.log"; do
        kill -0 "$MON_PID" 2>/dev/null || { tail -n 20 "$T/err.log"; pfk8s_die "the monitor died waiting for: $3"; }
        [ "$(date +%s)" -lt "$deadline" ] || { tail -n 20 "$T/err.log"; pfk8s_die "not within $1 s: $3"; }
        sleep 0.01
    done
}
wait_for() {   # wait_for SECONDS 'python check' WHAT
    local deadline=$(( $(date +%s) + $1 ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        pfk8s_state "$T/state.json"
        ( pfk8s_check "$T/state.json" "$2" ) >/dev/null 2>&1 && return 0
        kill -0 "$MON_PID" 2>/dev/null || { tail -n 20 "$T/err.log"; pfk8s_die "the monitor died waiting for: $3"; }
        sleep 0.2
    done
    tail -n 30 "$T/err.log"
    pfk8s_check "$T/state.json" "$2"
    pfk8s_die "not within $1 s: $3"
}
intervals() { sed -n 's/^efa_preflight_monitor_intervals_total{[^}]*} \([0-9]*\)$/\1/p' "$PROM" 2>/dev/null; }
wait_reads() {   # wait_reads N: N more reads judged (the textfile's count)
    local want=$(( $(intervals || echo 0) + $1 )) deadline=$(( $(date +%s) + 10 * $1 ))
    until [ "$(intervals || echo 0)" -ge "$want" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || pfk8s_die "the monitor did not read $1 more times"
        sleep 0.05
    done
}

wait_for 15 'c = cond("node-0", "EFANICHealthy"); assert c and c["status"] == "True", c' \
    "EFANICHealthy True at start"
pfk8s_check "$T/state.json" 'open(sys.argv[1] + ".t0", "w").write(cond("node-0", "EFANICHealthy")["lastTransitionTime"])'
t0=$(cat "$T/state.json.t0")

# 1a. A port DOWN for one read.
echo "1: DOWN" >"$STATE.tmp" && mv "$STATE.tmp" "$STATE"
wait_log 10 "rdmap16s27: port 1: DOWN on 1 of 3 reads" "the port-down read logged"
echo "4: ACTIVE" >"$STATE.tmp" && mv "$STATE.tmp" "$STATE"
# the textfile is written just after the log line, in the same read
for _ in $(seq 80); do
    grep -q 'efa_preflight_nic_bad_reads{node="node-0",device="rdmap16s27"} 1$' "$PROM" && break
    sleep 0.01
done
grep -q 'efa_preflight_nic_bad_reads{node="node-0",device="rdmap16s27"} 1$' "$PROM" ||
    { grep bad_reads "$PROM" | head -3; pfk8s_die "the bad read is not on the textfile"; }
echo "ok   port DOWN on one read: logged as 1 of 3, efa_preflight_nic_bad_reads 1"

# 1b. A NIC missing from sysfs for one read.
wait_reads 1
mv "$DEV" "$FX/.rdmap40s27"
wait_log 10 "rdmap40s27: not in /sys/class/infiniband on 1 of 3 reads" "the missing-device read logged"
mv "$FX/.rdmap40s27" "$DEV"
wait_reads 3
grep -q "DOWN on 2 of 3\|infiniband on 2 of 3" "$T/err.log" &&
    pfk8s_die "a fault was put back too late: a second read saw it (machine too slow?)"
pfk8s_state "$T/state.json"
pfk8s_check "$T/state.json" '
c = cond("node-0", "EFANICHealthy")
assert c and c["status"] == "True" and c["reason"] == "EFANICsHealthy", c
assert c["lastTransitionTime"] == open(sys.argv[1] + ".t0").read(), ("condition flipped", c)
bad = [e for e in events("node-0") if e["type"] == "Warning" or e["reason"] == "RevalidationRequested"]
assert not bad, bad
assert not node("node-0").get("spec", {}).get("taints"), node("node-0").get("spec")
assert not [c for c in s["configmaps"] if "node-0" in c.get("data", {})], s["configmaps"]
assert labels("node-0")["efa-preflight.io/status"] == "pass", labels("node-0")'
echo "ok   one bad read each: EFANICHealthy still True since $t0, no Warning Event, no taint, no budget slot, no re-validation"

# 2. The port DOWN and left so: a fault on the third read.
echo "1: DOWN" >"$STATE.tmp" && mv "$STATE.tmp" "$STATE"
wait_log 10 "rdmap16s27: port 1: DOWN on 2 of 3 reads" "the second read logged"
wait_for 15 '
c = cond("node-0", "EFANICHealthy")
assert c and c["status"] == "False" and c["reason"] == "EFANICLinkDown" and "rdmap16s27" in c["message"], c
ev = [e for e in events("node-0") if e["reason"] == "EFANICLinkDown"]
assert len(ev) == 1 and ev[0]["type"] == "Warning", ev
assert any(t["key"] == "efa-preflight.io/unhealthy" for t in node("node-0").get("spec", {}).get("taints", []))' \
    "EFANICLinkDown and the taint after 3 reads"
echo "ok   port DOWN on 3 reads in a row: EFANICHealthy False (EFANICLinkDown), one Warning Event, tainted"
echo "4: ACTIVE" >"$STATE.tmp" && mv "$STATE.tmp" "$STATE"
wait_for 15 '
c = cond("node-0", "EFANICHealthy"); assert c["status"] == "True", c
assert not any(t["key"] == "efa-preflight.io/unhealthy" for t in node("node-0").get("spec", {}).get("taints", []))' \
    "untainted after the recovery"
echo "ok   port ACTIVE again: EFANICRecovered after 2 reads, taint off"

kill -TERM "$MON_PID"
wait "$MON_PID"
rc=$?
MON_PID=
[ $rc -eq 0 ] || pfk8s_die "SIGTERM: exit $rc"
