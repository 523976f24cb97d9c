#!/bin/bash
# One deadline bounds everything, publishing included. The API server
# answers every /nodes request with 429 and Retry-After: 30; the agent runs
# with --timeout 15. Marking the Node gives up at once (30 s is more than
# the run has left), the run itself goes on, and publishing waits out one
# Retry-After within its grace (docs/internals/reliability.md, Deadlines: 20 s) and then stops:
# the process exits 3 by deadline + grace (35 s), the summary and the
# report carry a PublishFailed check, and nothing was written to the Node.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
TIMEOUT=15
GRACE=20

pfk8s_jobset_objects "$T/objects.json" 0:127.0.0.1
cat > "$T/faults.json" <<'EOF'
[{"path": "^/api/v1/nodes", "status": 429, "retry_after": 30, "count": 1000}]
EOF
pfk8s_server 127.0.0.1 "$T/objects.json" --faults "$T/faults.json"

start=$(date +%s.%N)
"$PF_BIN" run --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
    --token-file "$T/token" --ca-file "$T/certs/ca.crt" --no-imds \
    --pod-name train-workers-0-0-p0 --namespace ml \
    --peer-selector batch.kubernetes.io/job-name=train-workers-0 --world-size 1 \
    --port "$PFK8S_RDV_PORT" --fabric-provider tcp --engine host \
    -b 64K -e 64K -n 1 -w 0 --timeout "$TIMEOUT" --report "$T/out/r.json" -vv \
    > "$T/out/run.stdout" 2> "$T/out/run.stderr" &
pid=$!
for i in $(seq 1 $(( (TIMEOUT + GRACE + 10) * 10 ))); do
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
kill -0 $pid 2>/dev/null && { kill -KILL $pid; tail -n 20 "$T/out/run.stderr";
    pfk8s_die "still running $((TIMEOUT + GRACE + 10)) s after the start (deadline $TIMEOUT s + grace $GRACE s)"; }
wait $pid
rc=$?
wall=$(pfk8s_elapsed "$start")
echo "429 + Retry-After: 30 on /nodes, --timeout $TIMEOUT: exit $rc after ${wall}s"
[ $rc -eq 3 ] || { tail -n 30 "$T/out/run.stderr"; pfk8s_die "exit $rc, want 3 (PublishFailed)"; }
awk -v w="$wall" -v b="$((TIMEOUT + GRACE))" 'BEGIN { exit !(w <= b + 1.5) }' ||
    pfk8s_die "exit after ${wall}s: past deadline + grace ($((TIMEOUT + GRACE)) s)"
grep -q "summary: .*PublishFailed.*(exit 3)" "$T/out/run.stdout" ||
    { cat "$T/out/run.stdout"; pfk8s_die "the summary does not say PublishFailed, exit 3"; }
python3 - "$T/out/r.json" <<'EOF' || pfk8s_die "the report does not carry the failed publish"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"]["exit_code"] == 3 and r["verdict"]["reason"] == "PublishFailed", r["verdict"]
pub = [c for c in r["checks"] if c["name"] == "publish"]
assert pub and "429" in pub[0]["message"], pub
EOF
grep -q "could not mark the Node as being validated" "$T/out/run.stderr" ||
    pfk8s_die "the mark did not give up on Retry-After beyond the deadline"
pfk8s_state "$T/state.json"
pfk8s_check "$T/state.json" '
assert all(r["status"] == 429 for r in s["requests"] if r["path"].startswith("/api/v1/nodes")), "a /nodes request got through"
assert not any(r["method"] in ("PATCH", "POST") and r["status"] == 200 for r in s["requests"])
waits = [r["t"] for r in s["requests"] if r["path"].startswith("/api/v1/nodes")]
print("%d requests to /nodes, %.1f s apart at most" % (len(waits), max([b - a for a, b in zip(waits, waits[1:])] or [0])))
'
echo "PASS"
