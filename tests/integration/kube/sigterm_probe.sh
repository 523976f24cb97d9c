#!/bin/bash
# SIGTERM during the node probe of a 2-pod gang (k8s bootstrap; real side:
# the chart's RBAC (initcontainer), tokens bound to the pods). The victim's probe is widened to about 3 s: its fixture is
# a p5en.48xlarge with 15 of 16 EFA devices, which the probe re-counts 6
# times over --efa-recount-ms 3000. Each try starts both agents (--timeout
# 60), waits for the victim's "marked validating" line (the probe starts
# next) or its k-th re-count line, and sends SIGTERM; tries alternate the
# victim between rank 1 and rank 0 and spread the moment over the probe.
# Each try checks:
#   - the victim was inside its probe when the signal came (no "probe:"
#     line before its Interrupted line);
#   - the victim exits 3 within the signal grace (8 s), its Node says
#     status=error with both conditions Unknown/Interrupted naming its pod;
#   - its peer stops within 8 s of the signal, not at its 60 s deadline:
#     exit 3, PeerLost naming the victim's rank and what its Node says
#     (rank 0 reads the Node of the rank it waits for; rank 1 that of rank
#     0, which never listened).
# Then the negative case: a stale Interrupted mark of the missing pod (an
# hour old) and a fresh one naming another pod do not stop rank 0, which
# reads them every 2 s and waits for its peer until its deadline
# (PeerTimeout, not PeerLost).
# PF_SIGPROBE_TRIES sets the number of tries (default 20).
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
GRACE=8
PEER_MAX=8
TRIES=${PF_SIGPROBE_TRIES:-20}

kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
"$PF_ROOT/tests/fakes/make_sysfs.sh" "$T/fx" || kube_die "fixtures"
kube_jobset 0:127.0.0.1 1:127.0.0.1
NODE_LABELS='{"kubernetes.io/hostname":"node-%d","node.kubernetes.io/instance-type":"test.fake","topology.kubernetes.io/zone":"us-east-1a"}'
NODE_TAINTS='[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]'

# reset_node I [EXTRA_LABELS CONDITIONS]: node-I as kube_jobset left it
# (the last try's labels and conditions gone), with EXTRA_LABELS (JSON
# members) and CONDITIONS besides.
reset_node() {
    local labels
    labels=$(printf "$NODE_LABELS" "$1")
    [ -z "${2:-}" ] || labels="${labels%\}},$2}"
    if kube_real; then kr_ok DELETE "/api/v1/nodes/node-$1"; fi
    kube_node "node-$1" "$labels" "$NODE_TAINTS" "${3:-[]}"
}

# agent INDEX TAG [extra args]: in the background (the agent itself, so a
# signal reaches it); its pid in $apid.
agent() {
    local i=$1 tag=$2
    shift 2
    exec "$PF_BIN" run --api-server "$KUBE_API" --token-file "$T/token-$i" \
        --ca-file "$KUBE_CA" --no-imds \
        --pod-name "train-workers-$i-0-p$i" --namespace ml \
        --port "$KUBE_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 64K -n 1 -w 0 --timeout 60 --report "$T/out/$tag.json" \
        -vv "$@" > "$T/out/$tag.stdout" 2> "$T/out/$tag.stderr"
}

# wait_line FILE REGEX: until FILE has a line matching REGEX (15 s).
wait_line() {
    local i
    for i in $(seq 1 300); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# wait_exit PID LIMIT_S: until PID exits (polled every 50 ms, at most
# LIMIT_S); sets rc and secs (since $t0). A process still running at the
# limit is killed and the test fails.
wait_exit() {
    local pid=$1 limit=$2 i
    for i in $(seq 1 $((limit * 20))); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    secs=$(kube_elapsed "$t0")
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 1
    fi
    wait "$pid"
    rc=$?
    return 0
}

show() {   # the logs of try $try
    local f
    for f in "$T/out/victim.stderr" "$T/out/peer.stderr"; do
        echo "--- $f"; cut -c1-300 "$f" | tail -n 25
    done
}

vmax=0 pmax=0 vall="" pall=""
for try in $(seq 1 "$TRIES"); do
    victim=$(( try % 2 )); peer=$(( 1 - victim ))
    recount=$(( (try / 2) % 6 ))    # 0: right after the mark, k: after re-count k
    reset_node 0; reset_node 1
    fx="$T/fx/p5en-15"
    ( agent "$victim" victim --sysfs-root "$fx" --dev-root "$fx" --efa-recount-ms 3000 ) & vpid=$!
    ( agent "$peer" peer ) & ppid=$!
    if [ "$recount" -eq 0 ]; then
        wait_line "$T/out/victim.stderr" "marked validating until the verdict"
    else
        wait_line "$T/out/victim.stderr" "EFA re-count $recount: "
    fi || { show; kill -KILL $vpid $ppid 2>/dev/null; kube_die "try $try: the victim's probe never got there"; }
    t0=$(date +%s.%N)
    kill -TERM "$vpid"
    wait_exit "$vpid" 20 || { show; kill -KILL $ppid 2>/dev/null; kube_die "try $try: rank $victim still running 20 s after SIGTERM"; }
    vsecs=$secs vrc=$rc
    wait_exit "$ppid" 25 || { show; kube_die "try $try: rank $peer (peer of the interrupted rank $victim) still running 25 s after the SIGTERM: it waits for its deadline"; }
    psecs=$secs prc=$rc

    # In the probe: the signal line comes before any line of the probe's end.
    first=$(grep -nE "probe: type|Terminated: the run stopped before its verdict" "$T/out/victim.stderr" | head -1)
    [[ "$first" == *"Terminated: the run stopped before its verdict (Interrupted)"* ]] ||
        { show; kube_die "try $try: the signal did not land in the probe: $first"; }
    [ "$vrc" -eq 3 ] || { show; kube_die "try $try: victim rank $victim exit $vrc, want 3 (Interrupted)"; }
    awk -v s="$vsecs" -v g="$GRACE" 'BEGIN { exit !(s <= g) }' ||
        { show; kube_die "try $try: victim rank $victim exited $vsecs s after SIGTERM, grace is $GRACE s"; }
    [ "$prc" -eq 3 ] || { show; kube_die "try $try: peer rank $peer exit $prc, want 3 (PeerLost: not judged)"; }
    awk -v s="$psecs" -v m="$PEER_MAX" 'BEGIN { exit !(s <= m) }' ||
        { show; kube_die "try $try: peer rank $peer stopped $psecs s after the SIGTERM, want <= $PEER_MAX s"; }
    python3 - "$T/out/peer.json" "$victim" <<'EOF' || { show; kube_die "try $try: the peer's report does not say PeerLost for the interrupted rank"; }
import json, sys
r, v = json.load(open(sys.argv[1])), int(sys.argv[2])
e = r["collective"]["error"]
assert e["reason"] == "PeerLost", e
assert r["verdict"]["reason"] == "PeerLost", r["verdict"]
assert "stopped before" in e["message"], e
assert "rank %d" % v in e["message"], e
assert "(pod train-workers-%d-0-p%d)" % (v, v) in e["message"], e
EOF
    kube_state "$T/state.json"
    kube_check "$T/state.json" '
v = '"$victim"'
l = labels("node-%d" % v)
assert l["efa-preflight.io/status"] == "error", l
for t in ("EFADevicesReady", "EFAFabricReady"):
    c = cond("node-%d" % v, t)
    assert c["status"] == "Unknown" and c["reason"] == "Interrupted", c
    assert "signal 15" in c["message"] and c["message"].endswith("(pod train-workers-%d-0-p%d)" % (v, v)), c
'
    echo "try $try: SIGTERM to rank $victim $( [ $recount -eq 0 ] && echo "as its probe began" || echo "after re-count $recount"): it exited 3 in ${vsecs}s (Interrupted); rank $peer stopped in ${psecs}s (PeerLost)"
    vall="$vall $vsecs" pall="$pall $psecs"
    vmax=$(awk -v a="$vmax" -v b="$vsecs" 'BEGIN { print (b > a ? b : a) }')
    pmax=$(awk -v a="$pmax" -v b="$psecs" 'BEGIN { print (b > a ? b : a) }')
done
echo "$TRIES tries: interrupted rank exits at most ${vmax}s after SIGTERM (grace $GRACE s); its peer stops at most ${pmax}s after it (timeout 60 s)"
echo "victim exit times:$vall"
echo "peer stop times:$pall"

# A stale mark (an hour old) of the awaited pod and a fresh one naming
# another pod: neither says that this peer stopped; rank 0 waits for it
# until its deadline.
reset_node 0
reset_node 1 '"efa-preflight.io/status":"error"' "$(python3 - <<'EOF'
import json, time
ts = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
now = time.time()
print(json.dumps([
    {"type": "EFADevicesReady", "status": "Unknown", "reason": "Interrupted",
     "message": "run stopped by signal 15 (Terminated) at %s before its verdict (pod train-workers-1-0-p1)" % ts(now - 3600),
     "lastHeartbeatTime": ts(now - 3600), "lastTransitionTime": ts(now - 3600)},
    {"type": "EFAFabricReady", "status": "Unknown", "reason": "Interrupted",
     "message": "run stopped by signal 15 (Terminated) at %s before its verdict (pod train-workers-1-0-other)" % ts(now),
     "lastHeartbeatTime": ts(now + 5), "lastTransitionTime": ts(now)}]))
EOF
)"
t0=$(date +%s.%N)
( agent 0 stale --timeout 10 ) & spid=$!
wait_exit "$spid" 20 || kube_die "stale: rank 0 still running 20 s after it started"
[ "$rc" -eq 3 ] || { cat "$T/out/stale.stderr"; kube_die "stale: rank 0 exit $rc, want 3"; }
python3 - "$T/out/stale.json" <<'EOF' || { cat "$T/out/stale.stderr"; kube_die "stale: a mark that is not this peer's stopped rank 0"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["collective"]["error"]["reason"] == "PeerTimeout", r["collective"]["error"]
EOF
# Rank 0 gives up a fifth of the timeout (2 s) early, so its ABORT
# reaches the others before their deadline.
awk -v s="$secs" 'BEGIN { exit !(s >= 7) }' || kube_die "stale: rank 0 stopped after ${secs}s, before its deadline"
# It did ask, more than once (else this proves nothing): node-1 read
# every 2 s while rank 0 waited.
kube_state "$T/state.json"
kube_check "$T/state.json" '
n = sum(1 for t in gets("/api/v1/nodes/node-1") if t >= '"$t0"' - 0.01)
assert n >= 2, ("rank 0 never read the Node of the rank it waited for", n)
'
echo "stale mark of the awaited pod, fresh mark of another pod: rank 0 waited until its deadline (${secs}s, PeerTimeout)"
kube_no_token_in "$T/out"
echo "PASS"
