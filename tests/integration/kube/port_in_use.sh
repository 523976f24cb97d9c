#!/bin/bash
# A rendezvous port held by another process is a deployment error, never a
# verdict on the fabric. Two JobSet pods; in rank 0's network namespace a
# stranger already listens on the rendezvous port. Rank 0 must exit 2
# (usage: RendezvousPortInUse) and leave its Node as it found it (the
# mark written before the run is undone); rank 1 waits
# out its deadline and exits 3 (PeerTimeout: could not test), its Node gets
# status=error and EFAFabricReady=Unknown/PeerTimeout (nothing was proven
# on it), and no Node is labelled failed or tainted although
# --taint-on-failure is on. Rank 0's report says verdict.status "usage"
# and its EFAFabricReady "unknown"; rank 1's says "error", as its label.
# Real side: the chart's RBAC (initcontainer), tokens bound to the pods.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
kube_init 2 --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_jobset 0:"$(kube_pod_ip 1)" 1:"$(kube_pod_ip 2)"

# The stranger on rank 0's port (both stacks), alive longer than the run;
# the agents start only once it listens (under load a fixed sleep was not
# always enough).
ip netns exec "$(kube_netns 1)" python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", '"$KUBE_RDV_PORT"')); s.listen(1)
open(sys.argv[1], "w").close(); time.sleep(40)' "$T/holder.ready" &
holder=$!
for _ in $(seq 1 100); do
    [ -e "$T/holder.ready" ] && break
    kill -0 $holder 2>/dev/null || break
    sleep 0.1
done
[ -e "$T/holder.ready" ] || kube_die "the port holder did not start listening"

agent() {   # agent INDEX: in the background (KUBE_AGENT_PID); logs and report $T/out/r-INDEX.*
    kube_jobset_agent "$1" "r-$1" -b 64K -e 256K -n 2 -w 1 --taint-on-failure --timeout 12
}
start=$(date +%s.%N)
agent 0; a0=$KUBE_AGENT_PID
agent 1; a1=$KUBE_AGENT_PID
wait $a0; rc0=$?
t0=$(kube_elapsed "$start")
wait $a1; rc1=$?
kill $holder 2>/dev/null

[ $rc0 -eq 2 ] || { cat "$T/out/r-0.stderr" "$T/out/r-0.stdout"; kube_die "rank 0 exited $rc0, want 2 (usage)"; }
grep -q "cannot listen on .*:$KUBE_RDV_PORT: Address already in use" "$T/out/r-0.stdout" ||
    { cat "$T/out/r-0.stdout"; kube_die "rank 0: the table does not name the port in use"; }
grep -q "summary: USAGE RendezvousPortInUse .*(exit 2)" "$T/out/r-0.stdout" ||
    { cat "$T/out/r-0.stdout"; kube_die "rank 0: the summary does not say RendezvousPortInUse, exit 2"; }
python3 - "$T/out/r-0.json" <<'PY' || kube_die "rank 0: report"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["reason"] == "RendezvousPortInUse" and v["class"] == "usage" and v["exit_code"] == 2, v
assert v["status"] == "usage" and v["conditions"]["EFAFabricReady"] == "unknown", v
PY
[ $rc1 -eq 3 ] || { cat "$T/out/r-1.stderr"; kube_die "rank 1 exited $rc1, want 3 (could not test)"; }
python3 - "$T/out/r-1.json" <<'PY' || kube_die "rank 1: report"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["reason"] == "PeerTimeout" and v["status"] == "error", v
assert v["conditions"]["EFAFabricReady"] == "unknown", v
PY

kube_state "$T/state.json"
kube_check "$T/state.json" '
n0 = labels("node-0")
assert not any(k.startswith("efa-preflight.io/") for k in n0), ("rank 0 wrote labels", n0)
assert cond("node-0", "EFAFabricReady") is None, "rank 0 wrote a condition"
assert not events("node-0"), "rank 0 wrote an Event"
# Only the mark before the run and its undo: node-0 is as it was.
writes0 = [w for w in writes() if "node-0" in w[1]]
assert writes0 == [("PATCH", "/api/v1/nodes/node-0"), ("PATCH", "/api/v1/nodes/node-0/status"),
                   ("PATCH", "/api/v1/nodes/node-0/status"), ("PATCH", "/api/v1/nodes/node-0")], writes0
l1 = labels("node-1")
assert l1["efa-preflight.io/status"] == "error", l1
c1 = cond("node-1", "EFAFabricReady")
assert c1["status"] == "Unknown" and c1["reason"] == "PeerTimeout", c1
for n in ("node-0", "node-1"):
    assert not any(t["key"].startswith("efa-preflight.io/") for t in node(n).get("spec", {}).get("taints", [])), n
print("node-0 put back as found (mark, undo); node-1 status=error, EFAFabricReady=Unknown/PeerTimeout; no taint")
'
echo "PASS: port in use -> rank 0 exit 2 in ${t0}s, nothing written, report status usage; rank 1 exit 3 PeerTimeout, status=error, EFAFabricReady=Unknown, no taint"
