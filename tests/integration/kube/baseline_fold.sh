#!/bin/bash
# The fleet baseline's ConfigMap under concurrent writers, against a real
# kube-apiserver (tests/kube_real) with the chart's RBAC: eight leaders
# (the job account's tokens, initContainer mode) fold a passed run's report
# at once (`efa-preflight baseline --fold`): every value lands once (runs
# = 8), whatever 409s the real server gave (AlreadyExists on the create
# race, Conflict on a stale resourceVersion); then `baseline` reads it back
# with the same account.
set -u
. "$PF_ROOT/tests/integration/kube/lib.sh"
N=8
kube_init 0 --set mode=initcontainer --set 'jobNamespaces={ml}'
kr_token ml efa-preflight-job > "$T/token"
python3 - "$T" "$N" <<'PY'
import json, sys
t, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    obs = [{"type": "p5.48xlarge", "engine": "nccl", "kind": "pair", "nodes": 2,
            "bytes": 1 << 30, "gbps": 400 + i}]
    json.dump({"verdict": {"exit_code": 0}, "baseline": {"observed": obs}},
              open("%s/rep%d.json" % (t, i), "w"))
PY
pids=""
for i in $(seq 0 $((N - 1))); do
    "$PF_BIN" baseline --api-server "$KR_API" --token-file "$T/token" --ca-file "$KR_CA" \
        --fold "$T/rep$i.json" > "$T/out/fold$i.out" 2>&1 &
    pids="$pids $!"
done
i=0
for p in $pids; do
    wait "$p" || kr_die "writer $i: $(cat "$T/out/fold$i.out")"
    i=$((i + 1))
done
conflicts=$(cat "$T"/out/fold*.out | sed -n 's/.*(\([0-9]*\) conflict(s) retried).*/\1/p' | awk '{s += $1} END {print s + 0}')
"$PF_BIN" baseline --api-server "$KR_API" --token-file "$T/token" --ca-file "$KR_CA" --json \
    > "$T/base.json" 2> "$T/out/read.err" || kr_die "baseline: $(cat "$T/out/read.err")"
python3 - "$T/base.json" "$N" <<'PY' || kr_die "the ConfigMap is not what the writers folded"
import json, sys
b, n = json.load(open(sys.argv[1])), int(sys.argv[2])
e = [x for x in b["entries"] if x["kind"] == "pair"][0]
assert e["runs"] == n and sorted(e["values"]) == [400.0 + i for i in range(n)], e
PY
echo "ok   $N leaders at once on a real API server: every value folded once ($conflicts conflict(s) retried)"
