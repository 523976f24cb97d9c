#!/bin/bash
# 410 Gone on a pod watch from a real kube-apiserver (tests/kube_real).
# A live server hides an expired resourceVersion well: its watch cache sends
# a BOOKMARK just before a watch times out, so the agent's next watch starts
# from a fresh version. This server runs with --watch-cache=false, watches go
# to etcd, and etcd is compacted while the agent (rank 0 of 2, pod 1 without
# an IP) holds its 30 s watch: its next watch, from the list's version, is
# answered with an ERROR event, code 410 (Expired), and the agent must list
# again and carry on. The test checks the server's own 410 first (a watch
# from the compacted version), then that the agent re-listed right after its
# second watch, then gives pod 1 its IP and starts rank 1: both exit 0.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
KR_START_FLAGS="--watch-cache=false" kube_init 2 --set mode=initcontainer --set 'jobNamespaces={ml}'
for i in 0 1; do kr_node "node-$i" '{"node.kubernetes.io/instance-type":"p5.48xlarge"}'; done
kr_jobset_pods ml 2
kr_pod_ip ml train-workers-0-0-p0 10.254.42.11
for i in 0 1; do kr_token ml efa-preflight-job "train-workers-$i-0-p$i" > "$T/token-$i"; done

agent() {   # agent INDEX
    local i=$1
    ip netns exec "pfkr-$((i + 1))" env POD_NAME="train-workers-$i-0-p$i" POD_NAMESPACE=ml \
        "$PF_BIN" run --api-server "$KR_API" --expect-gpus 0 --token-file "$T/token-$i" --ca-file "$KR_CA" \
        --no-imds --port "$KR_RDV_PORT" --fabric-provider tcp --engine host \
        -b 64K -e 256K -n 2 -w 1 --timeout 120 --report "$T/out/a$i.json" -vv \
        > "$T/out/a$i.stdout" 2> "$T/out/a$i.stderr"
}
# agent_reqs: the agent's pod list/watch requests, in order, one per line
agent_reqs() {
    grep '"stage":"ResponseComplete"' "$T/out/audit.log" | grep 'train-workers-0-0-p0\|efa-preflight-job' |
        python3 -c '
import json, sys
for l in sys.stdin:
    x = json.loads(l)
    if x["objectRef"].get("resource") == "pods" and x["verb"] in ("list", "watch"):
        print(x["verb"])'
}
show() {   # the agent's pod requests with times, and its log
    grep 'efa-preflight-job' "$T/out/audit.log" | python3 -c '
import json, sys
for l in sys.stdin:
    x = json.loads(l)
    print("  %s %s %s %s %s" % (x["stageTimestamp"][11:23], x["stage"], x["verb"], x["requestURI"][:150], x.get("responseStatus", {}).get("code")))'
    grep -i "watch\|list" "$T/out/a0.stderr" | tail -n 20
}

agent 0 & p0=$!
kr_wait_watchers pods 1
watch_at=$(date +%s)
rv=$(kr_call GET '/api/v1/namespaces/ml/pods?labelSelector=jobset.sigs.k8s.io%2Fjobset-name%3Dtrain' |
     python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
# Two writes past that version, then everything before now is compacted.
for i in 1 2; do
    kr_ok POST /api/v1/namespaces/ml/configmaps --data "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bump-$i\"}}"
done
rev=$(kr_etcd_revision)
kr_etcd_compact "$rev" || kr_die "etcd compaction at $rev"
echo "etcd compacted at revision $rev (a list said $rv just before)"

# The server's own answer to a watch from the compacted version.
python3 - "$rv" > "$T/own-watch.json" <<'EOF' || kr_die "a watch from a compacted version did not end with a 410 ERROR event"
import http.client, json, os, ssl, sys, urllib.parse
u = urllib.parse.urlsplit(os.environ["KR_API"])
ctx = ssl.create_default_context(cafile=os.environ["KR_CA"])
ctx.load_cert_chain(os.environ["KR_CERT"], os.environ["KR_KEY"])
c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=20)
c.request("GET", "/api/v1/namespaces/ml/pods?watch=1&resourceVersion=%s&timeoutSeconds=5" % sys.argv[1])
r = c.getresponse()
line = r.readline()
ev = json.loads(line)
print(json.dumps({"http": r.status, "event": ev}))
assert r.status == 200 and ev["type"] == "ERROR" and ev["object"]["code"] == 410, ev
EOF
python3 -c '
import json; x = json.load(open("'"$T/own-watch.json"'"))
print("the server: HTTP %d, then {type: %s, code %d, reason %s, message %r}" % (x["http"], x["event"]["type"],
      x["event"]["object"]["code"], x["event"]["object"]["reason"], x["event"]["object"]["message"]))'

# The agent's 30 s watch ends; its next one, from the old version, gets the
# 410 and the agent lists again.
for t in $(seq 1 300); do
    grep -q "listing again" "$T/out/a0.stderr" && break
    kill -0 "$p0" 2>/dev/null || break
    sleep 0.2
done
grep -q "expired (410), listing again" "$T/out/a0.stderr" ||
    { tail -n 30 "$T/out/a0.stderr"; kr_die "rank 0 did not take the 410 ($(( $(date +%s) - watch_at ))s after its first watch)"; }
for t in $(seq 1 50); do
    [ "$(agent_reqs | paste -sd' ')" != "list watch watch" ] && break
    sleep 0.2
done
reqs=$(agent_reqs | paste -sd' ')
case "$reqs" in
    "list watch watch list"*) ;;
    *) show; kr_die "rank 0's pod requests: '$reqs', want list watch watch list ..." ;;
esac
echo "rank 0: $(grep -o 'pod watch: resourceVersion [0-9]* expired (410), listing again' "$T/out/a0.stderr" | head -1); requests: $reqs"

kr_pod_ip ml train-workers-1-0-p1 10.254.42.12
agent 1 & p1=$!
for p in $p0 $p1; do
    wait "$p"
    rc=$?
    [ $rc -eq 0 ] || { tail -n 30 "$T"/out/a*.stderr; kr_die "an agent exited $rc after the 410, want 0"; }
done
kr_state "$T/state.json"
kr_check "$T/state.json" '
for n in ("node-0", "node-1"):
    assert labels(n)["efa-preflight.io/fabric"] == "tested", labels(n)
'
echo "pod 1 got its IP after the relist: both ranks exit 0, both Nodes fabric=tested"
kr_no_token_in "$T/out"
echo "PASS"
