#!/bin/bash
# k8s bootstrap, one peer never comes: a 4-pod JobSet whose 4th pod was never
# created. The three agents that exist must give up at their deadline
# (--timeout 6) within 2 s, exit 3 (infrastructure), report PeerTimeout and
# label their nodes status=error, fabric=untested (the fabric was never
# measured) with EFAFabricReady=Unknown/PeerTimeout (could not judge: never
# False); their reports say error / unknown. Rank 0, the only one that
# lists the group, names the missing pod; ranks 1 and 2 know only rank 0,
# which never opened its rendezvous, and name it. Then rank 0 again with the
# 4th pod present but Pending without a podIP: it is named by its pod name.
# Real side: the chart's RBAC (initcontainer), tokens bound to the pods.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
DEADLINE=6
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kube_jobset 0:127.0.0.1 1:127.0.0.1 2:127.0.0.1 3:x

agent() {   # agent INDEX OUTNAME
    "$PF_BIN" run --api-server "$KUBE_API" \
        --token-file "$T/token-$1" --ca-file "$KUBE_CA" \
        --pod-name "train-workers-$1-0-p$1" --namespace ml \
        --port "$KUBE_RDV_PORT" --fabric-provider tcp --engine host \
        --timeout "$DEADLINE" --no-imds --report "$T/out/$2.json" -vv \
        > "$T/out/$2.stdout" 2> "$T/out/$2.stderr"
    echo $? > "$T/out/$2.rc"
}

start=$(date +%s.%N)
pids=""
for i in 0 1 2; do agent $i a$i & pids="$pids $!"; done
wait $pids
elapsed=$(kube_elapsed "$start")
echo "three agents returned after ${elapsed}s (deadline ${DEADLINE}s)"
awk -v e="$elapsed" -v d="$DEADLINE" 'BEGIN { exit !(e <= d + 2) }' ||
    kube_die "agents took ${elapsed}s, more than deadline + 2 s"
awk -v e="$elapsed" -v d="$DEADLINE" 'BEGIN { exit !(e >= d - 0.5) }' ||
    kube_die "agents returned after ${elapsed}s, before the deadline"

for i in 0 1 2; do
    rc=$(cat "$T/out/a$i.rc")
    [ "$rc" = 3 ] || { cat "$T/out/a$i.stderr"; kube_die "agent $i exit $rc, want 3"; }
    grep -q "PeerTimeout" "$T/out/a$i.stdout" "$T/out/a$i.json" ||
        kube_die "agent $i: no PeerTimeout in its table or report"
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["verdict"]; assert (v["status"], v["conditions"]["EFAFabricReady"]) == ("error", "unknown"), v' \
        "$T/out/a$i.json" || kube_die "agent $i: report verdict is not error / unknown"
done
grep -q "train-workers-3-0-\* (rank 3, not created)" "$T/out/a0.json" ||
    { cat "$T/out/a0.json"; kube_die "rank 0: report does not name the missing pod"; }
grep -q "3 of 4 peer pods" "$T/out/a0.json" ||
    kube_die "rank 0: report does not count 3 of 4"
for i in 1 2; do
    grep -q "rank 0 at 127.0.0.1:$KUBE_RDV_PORT never answered" "$T/out/a$i.json" ||
        { cat "$T/out/a$i.json"; kube_die "agent $i: report does not name rank 0"; }
done
echo "all three: exit 3, PeerTimeout; rank 0 names train-workers-3-0-* (never created), ranks 1-2 name rank 0"

kube_state "$T/state.json"
kube_check "$T/state.json" '
for i, n, l in node_rows(3):
    assert l["efa-preflight.io/status"] == "error", (n, l)
    assert "efa-preflight.io/busbw-gbps" not in l, l
    assert l["efa-preflight.io/fabric"] == "untested", l
    c = cond(n, "EFAFabricReady")
    assert c and c["status"] == "Unknown" and c["reason"] == "PeerTimeout", c
    assert ("train-workers-3-0-*" if i == 0 else "rank 0 at") in c["message"], c["message"]
    ev = events(n)
    assert len(ev) == 1 and ev[0]["type"] == "Warning" and ev[0]["reason"] == "PeerTimeout", ev
    assert [t["key"] for t in node(n)["spec"]["taints"]] == ["nvidia.com/gpu"], node(n)["spec"]
assert "efa-preflight.io/status" not in labels("node-3")
'
echo "nodes 0-2: status=error, fabric=untested, EFAFabricReady Unknown/PeerTimeout, one Warning event; node-3 untouched"

# The 4th pod now exists but never gets an IP (unschedulable): named.
kube_pending_pod 3 4
agent 0 b0
rc=$(cat "$T/out/b0.rc")
[ "$rc" = 3 ] || kube_die "pending-pod case: exit $rc, want 3"
grep -q "train-workers-3-0-p3 (Pending, no podIP)" "$T/out/b0.json" ||
    { cat "$T/out/b0.json"; kube_die "pending pod not named"; }
echo "a Pending pod without podIP is named: train-workers-3-0-p3 (Pending, no podIP)"
kube_no_token_in "$T/out"
echo "PASS"
