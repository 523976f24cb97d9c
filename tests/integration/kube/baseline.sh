#!/bin/bash
# The fleet baseline's ConfigMap under concurrent writers (fake API server,
# tests/fakes/apiserver: GET/POST/PUT/DELETE of ConfigMaps with
# resourceVersion preconditions: 409 Conflict on a stale one, 409
# AlreadyExists on a create race). WRITERS (default 12) leaders fold a
# passed run's report at once (`efa-preflight baseline --fold`), each GET
# answered 150 ms late so they read the same versions: every value lands
# exactly once (runs = WRITERS, the values those of the reports), at least
# one write lost a race and was folded again, and the object stays small.
# Then `baseline` prints it, `baseline --json` is a --baseline file, a
# read-only token names the RBAC it lacks, and `baseline --reset` empties it.
set -u
. "$PF_ROOT/tests/fakes/apiserver/lib.sh"
pfk8s_init
T=$PFK8S_TMP
WRITERS=${PF_BASELINE_WRITERS:-12}
CM=efa-preflight/efa-preflight-baseline

echo '[]' > "$T/objects.json"
cat > "$T/faults.json" <<'JSON'
[{"method": "GET", "path": "^/api/v1/namespaces/efa-preflight/configmaps/race$",
  "reply_latency_ms": 2000, "count": 2},
 {"method": "GET", "path": "^/api/v1/namespaces/efa-preflight/configmaps/efa-preflight-baseline$",
  "reply_latency_ms": 150, "count": 1000000}]
JSON
pfk8s_server 127.0.0.1 "$T/objects.json" --faults "$T/faults.json" --dump ""

base() {
    "$PF_BIN" baseline --api-server "https://127.0.0.1:$PFK8S_API_PORT" \
        --token-file "${TOKEN_FILE:-$T/token}" --ca-file "$T/certs/ca.crt" \
        --baseline-configmap "$CM" "$@"
}

# One passed report per writer: pair link 400 + i GB/s, ring 200 + i.
python3 - "$T" "$WRITERS" <<'PY'
import json, sys
t, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    obs = [{"type": "p5.48xlarge", "engine": "nccl", "kind": "pair", "nodes": 2,
            "bytes": 1 << 30, "gbps": 400 + i},
           {"type": "p5.48xlarge", "engine": "nccl", "kind": "ring", "nodes": 8,
            "bytes": 8 << 30, "gbps": 200 + i}]
    json.dump({"verdict": {"exit_code": 0}, "baseline": {"observed": obs}},
              open("%s/rep%d.json" % (t, i), "w"))
json.dump({"verdict": {"exit_code": 1}, "baseline": {"observed": obs}},
          open("%s/failed.json" % t, "w"))
PY

# A create race: two writers both find no ConfigMap (the answers to their
# GETs held back 2 s), both POST; one gets 409 AlreadyExists and folds
# again.
CM=efa-preflight/race base --fold "$T/rep0.json" > "$T/out/race0.out" 2>&1 &
p0=$!
CM=efa-preflight/race base --fold "$T/rep1.json" > "$T/out/race1.out" 2>&1 ||
    pfk8s_die "race writer 1: $(cat "$T/out/race1.out")"
wait $p0 || pfk8s_die "race writer 0: $(cat "$T/out/race0.out")"
pfk8s_state "$T/race.json"
python3 - "$T/race.json" <<'PY' || pfk8s_die "the create race is not what the two writers folded"
import json, sys
s = json.load(open(sys.argv[1]))
cm = [c for c in s["configmaps"] if c["metadata"]["name"] == "race"][0]
pair = json.loads(cm["data"]["p5.48xlarge.nccl.pair.n2.1073741824"])
assert pair["runs"] == 2 and sorted(pair["values"]) == [400, 401], pair
posts = [r["status"] for r in s["requests"] if r["method"] == "POST"
         and r["path"].endswith("/configmaps")]
assert sorted(posts) == [201, 409], posts
print("ok   create race: POSTs answered %s, both values kept" % posts)
PY

pids=()
for i in $(seq 0 $((WRITERS - 1))); do
    base --fold "$T/rep$i.json" > "$T/out/fold$i.out" 2> "$T/out/fold$i.err" &
    pids+=($!)
done
for i in $(seq 0 $((WRITERS - 1))); do
    wait "${pids[$i]}" || pfk8s_die "writer $i exited $?: $(cat "$T/out/fold$i.err")"
done
pfk8s_state "$T/state.json"
python3 - "$T/state.json" "$WRITERS" <<'PY' || exit 1
import json, sys
s, n = json.load(open(sys.argv[1])), int(sys.argv[2])
cms = [c for c in s["configmaps"] if c["metadata"]["name"] == "efa-preflight-baseline"]
assert len(cms) == 1, "ConfigMaps: %r" % cms
data = cms[0]["data"]
pair = json.loads(data["p5.48xlarge.nccl.pair.n2.1073741824"])
ring = json.loads(data["p5.48xlarge.nccl.ring.n8.8589934592"])
assert pair["runs"] == n and ring["runs"] == n, (pair, ring)
want = sorted(400.0 + i for i in range(n))[-16:]
assert sorted(pair["values"]) == want, (pair["values"], want)
size = sum(len(k) + len(v) for k, v in data.items())
assert size < 2 * 4096, size
reqs = [r for r in s["requests"] if "/configmaps" in r["path"]]
c409 = [r for r in reqs if r["status"] == 409]
assert c409, "no writer lost a race: the test proves nothing"
kinds = sorted(set(r["method"] for r in c409))
print("ok   %d writers: runs %d, every value once; %d requests, %d conflicts "
      "(409 on %s) retried; %d bytes of data" % (n, pair["runs"], len(reqs),
      len(c409), "+".join(kinds), size))
PY
[ $? -eq 0 ] || pfk8s_die "the ConfigMap is not what the writers folded"

# A failed run folds nothing.
base --fold "$T/failed.json" > "$T/out/failed.out" 2>&1 || pfk8s_die "fold of a failed report: $(cat "$T/out/failed.out")"
grep -q "nothing folded" "$T/out/failed.out" || pfk8s_die "$(cat "$T/out/failed.out")"

# The table, and --json as a --baseline file.
base > "$T/out/table.out" 2>&1 || pfk8s_die "baseline: $(cat "$T/out/table.out")"
grep -qE "^p5.48xlarge +nccl +pair +2 +1 GiB +$WRITERS " "$T/out/table.out" ||
    pfk8s_die "table: $(cat "$T/out/table.out")"
base --json > "$T/base.json" 2> "$T/out/json.err" || pfk8s_die "baseline --json"
"$PF_BIN" baseline --baseline "$T/base.json" > "$T/out/file.out" 2>&1 ||
    pfk8s_die "baseline --json is not a --baseline file: $(cat "$T/out/file.out")"
grep -qE "^p5.48xlarge +nccl +pair .* $WRITERS " "$T/out/file.out" || pfk8s_die "$(cat "$T/out/file.out")"
echo "ok   baseline prints it; baseline --json reads back as --baseline"

# No update right: the error names what RBAC must grant.
printf '%s' "$PFK8S_TOKEN_RO" > "$T/token-ro"
TOKEN_FILE=$T/token-ro base --fold "$T/rep0.json" > "$T/out/ro.out" 2>&1
rc=$?
[ "$rc" -ne 0 ] || pfk8s_die "a read-only token folded"
grep -q "needs update on configmaps in namespace efa-preflight" "$T/out/ro.out" ||
    pfk8s_die "read-only: $(cat "$T/out/ro.out")"
echo "ok   read-only token: exit $rc, $(head -1 "$T/out/ro.out")"

# Reset.
base --reset > "$T/out/reset.out" 2>&1 || pfk8s_die "reset: $(cat "$T/out/reset.out")"
grep -q "deleted ConfigMap" "$T/out/reset.out" || pfk8s_die "$(cat "$T/out/reset.out")"
base > "$T/out/after.out" 2>&1
grep -q "no ConfigMap $CM yet" "$T/out/after.out" || pfk8s_die "after reset: $(cat "$T/out/after.out")"
echo "ok   baseline --reset deletes it; the next runs start again"
