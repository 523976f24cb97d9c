#!/bin/bash
# The chart's Grafana dashboard asks only for metrics the agent writes:
# every metric name in its PromQL (panels and variables) is a family of the
# textfile a real run writes, with samples (the fleet baseline's too). The extractor is checked too (names in
# functions, matchers, grouping and arithmetic found; labels, functions and
# variables not), and a dashboard naming a metric the agent does not write
# or wrote no sample of, or a query selecting none, fails. The chart, rendered with the dashboard
# on, carries the file unchanged in a ConfigMap, and docs/reference/metrics.md
# lists every family. A port from the kernel (lib_port.sh).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/${BUILD:-build}/efa-preflight}
cd "$root" || exit 1
dash=charts/efa-preflight/dashboards/efa-preflight.json
check=tests/manifests/dashboard_metrics.py
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
. "$root/tests/integration/lib_port.sh"

# 1. What the agent writes, from a real run whose every family the
#    dashboard reads has samples: three ranks on 127.0.0.1-3 (three nodes,
#    so the pairwise test judges every node's links) on the trn1 fixture
#    tree whose NIC counters move between the reads (per-NIC families), a
#    floor (--min-busbw-gbps) and a --baseline file of three runs for the
#    pairs' type, engine and size (the efa_preflight_baseline_pair_*
#    families), every bar far below what loopback moves.
tests/fakes/make_sysfs.sh "$tmp/fixtures" >/dev/null || fail "fixtures"
fx=$tmp/fixtures/trn1.32xlarge
cp -a "$fx" "$tmp/after"
for d in "$tmp"/after/sys/class/infiniband/*/ports/1/hw_counters; do
    echo $(( $(cat "$d/tx_bytes") + 50000000 )) >"$d/tx_bytes"
done
echo 3 >"$tmp/after/sys/class/infiniband/rdmap18s27/ports/1/hw_counters/retrans_timeout_events"
cat >"$tmp/base.json" <<'EOF'
{"version": 1, "entries": [{"type": "trn1.32xlarge", "engine": "host", "kind": "pair",
  "nodes": 2, "bytes": 65536, "values": [0.001, 0.0011, 0.0009], "runs": 3}]}
EOF
port=$(pf_free_port)
for r in 0 1 2; do
    EFA_PREFLIGHT_NCCL=/nonexistent/libnccl.so.2 EFA_PREFLIGHT_CUDART=/nonexistent/libcudart.so \
    timeout -k 5 60 "$bin" run --bootstrap static --rank $r \
        --peers "127.0.0.1:$port,127.0.0.2:$port,127.0.0.3:$port" \
        --fabric-provider tcp --no-imds --timeout 30 -b 64K -e 64K -n 2 -w 1 \
        --sysfs-root "$fx" --dev-root "$fx" --debug-counters-after "$tmp/after" \
        --min-busbw-gbps 0.0005 --debug-floor-any-provider --baseline "$tmp/base.json" \
        --metrics-textfile "$tmp/r$r.prom" >/dev/null 2>"$tmp/err$r" &
    pids[$r]=$!
done
for r in 0 1 2; do
    wait "${pids[$r]}" || fail "rank $r exited $?: $(cat "$tmp/err$r")"
done
mv "$tmp/r0.prom" "$tmp/efa_preflight.prom"
for want in 'baseline_pair_median_bytes_per_second{node="[^"]*",bytes="65536"} 1000000$' \
            'baseline_pair_floor_bytes_per_second{node="[^"]*",bytes="65536"} 800000$' \
            'baseline_pair_runs{node="[^"]*",bytes="65536"} 3$'; do
    grep -q "^efa_preflight_$want" "$tmp/efa_preflight.prom" ||
        fail "no efa_preflight_$want: $(grep baseline_pair "$tmp/efa_preflight.prom")"
done
n=$(grep -c '^# TYPE efa_preflight_' "$tmp/efa_preflight.prom")
[ "$n" -ge 15 ] || fail "the agent wrote $n families"
# The label the dashboard keys on is on every sample.
unlabelled=$(grep '^efa_preflight_' "$tmp/efa_preflight.prom" | grep -v "^[a-z_]*{node=\"$(hostname)\"")
[ -z "$unlabelled" ] || fail "samples without node=\"$(hostname)\" first: $unlabelled"

missing=$(grep -o '^# TYPE efa_preflight_[a-z_]*' "$tmp/efa_preflight.prom" | cut -d' ' -f3 |
          while read -r m; do grep -q "\`$m\`" docs/reference/metrics.md || echo "$m"; done)
[ -z "$missing" ] || fail "docs/reference/metrics.md does not list: $missing"
echo "ok   the agent writes $n families, each listed in docs/reference/metrics.md"

# 1b. What the monitor writes (its row of per-NIC rates), from a bounded
#     run on the p5 fixture: its families join the gate's.
# GPUs from the NVML double (one XID), so the GPU families have samples
printf 'gpu.0.xid 79\n' >"$tmp/nvml.fixture"
EFA_PREFLIGHT_NVML=$root/${BUILD:-build}/double/libnvml-double.so \
    PF_NVML_FIXTURE="$tmp/nvml.fixture" \
timeout -k 5 30 "$bin" monitor --no-imds --sysfs-root "$tmp/fixtures/p5.48xlarge" \
    --dev-root "$tmp/fixtures/p5.48xlarge" --interval 0.1 --monitor-intervals 2 \
    --node-name "$(hostname)" --metrics-textfile "$tmp/monitor.prom" \
    >/dev/null 2>"$tmp/err" || fail "the monitor exited $?: $(cat "$tmp/err")"
m=$(grep -c '^# TYPE efa_preflight_' "$tmp/monitor.prom")
missing=$(grep -o '^# TYPE efa_preflight_[a-z_]*' "$tmp/monitor.prom" | cut -d' ' -f3 |
          grep -v '^efa_preflight_nic_.*_total$' |
          while read -r f; do grep -q "\`$f\`" docs/reference/counters.md || echo "$f"; done)
[ -z "$missing" ] || fail "docs/reference/counters.md does not list the monitor's: $missing"
cat "$tmp/efa_preflight.prom" "$tmp/monitor.prom" >"$tmp/all.prom"
echo "ok   the monitor writes $m families, each gauge listed in docs/reference/counters.md"

# 2. The dashboard against them.
python3 "$check" "$dash" "$tmp/all.prom" >"$tmp/out" || { cat "$tmp/out"; fail "dashboard"; }
tail -n 1 "$tmp/out"
grep -q '"name": "node"' "$dash" || fail "the dashboard's node variable is not named node"
for title in "busbw per node over time" "Pair links: fleet baseline" "Nodes by status" "Top reasons" "Per-NIC" \
             "Per-NIC traffic (monitor)" "Per-NIC error rates (monitor)" \
             "GPUs: unhealthy per the monitor" "GPU XIDs and NVLink errors (monitor)"; do
    grep -q "panel '$title" "$tmp/out" || fail "no panel '$title'"
done
echo "ok   the dashboard's panels: busbw per node, the fleet baseline, nodes by status, top reasons, per-NIC"

# 3. The extractor finds what it must and nothing else.
python3 - "$check" <<'PY' || fail "extractor"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("dm", sys.argv[1])
dm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dm)
cases = {
    'sum by (instance, le) (rate(a_total{job="x",b=~"$v"}[5m])) / on (x) group_left (y) b_gauge':
        ["a_total", "b_gauge"],
    'topk(10, count by (reason) (c_info{reason!="a b", instance=~"${instance}"}))': ["c_info"],
    'time() - d_seconds offset 1h > 2e3 and bool e': ["d_seconds", "e"],
    'label_values(f_seconds, instance)': ["f_seconds"],
    'max_over_time(g[1h:5m]) unless h{x="y"} or vector(1)': ["g", "h"],
}
bad = 0
for q, want in cases.items():
    got = dm.metric_names(q)
    if got != want:
        print("FAIL metric_names(%r) = %r, want %r" % (q, got, want)); bad += 1
sys.exit(1 if bad else 0)
PY
echo "ok   the PromQL extractor finds metric names only"

# 4. A dashboard naming an unwritten metric, or selecting none, fails.
python3 - "$dash" "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["panels"][0]["targets"][0]["expr"] = 'count by (status) (efa_preflight_node_status == 1)'
json.dump(d, open(sys.argv[2] + "/unknown.json", "w"))
d = json.load(open(sys.argv[1]))
d["panels"][1]["targets"][0]["expr"] = 'vector(1)'
json.dump(d, open(sys.argv[2] + "/none.json", "w"))
d = json.load(open(sys.argv[1]))
d["panels"][0]["targets"][0]["expr"] = 'count by (instance) (efa_preflight_status == 1)'
json.dump(d, open(sys.argv[2] + "/instance.json", "w"))
PY
python3 "$check" "$tmp/unknown.json" "$tmp/efa_preflight.prom" >"$tmp/out" &&
    fail "a dashboard using efa_preflight_node_status passed"
grep -q "uses efa_preflight_node_status, which the agent does not write" "$tmp/out" ||
    fail "the failure does not name the metric: $(cat "$tmp/out")"
python3 "$check" "$tmp/none.json" "$tmp/efa_preflight.prom" >"$tmp/out" &&
    fail "a query selecting no metric passed"
grep -q "selects no metric: vector(1)" "$tmp/out" || fail "no 'selects no metric'"
python3 "$check" "$tmp/instance.json" "$tmp/efa_preflight.prom" >"$tmp/out" &&
    fail "a query grouping by instance passed"
grep -q "keys on the label instance .*; use node: count by (instance)" "$tmp/out" ||
    fail "no 'keys on the label instance': $(cat "$tmp/out")"
# A run without a baseline declares the baseline families but gives them
# no sample: the dashboard's baseline panel selects nothing there.
grep -v '^efa_preflight_baseline_pair_' "$tmp/all.prom" >"$tmp/nobase.prom"
python3 "$check" "$dash" "$tmp/nobase.prom" >"$tmp/out" &&
    fail "a dashboard passed against a run with no baseline samples"
grep -q "panel 'Pair links: fleet baseline' target A uses efa_preflight_baseline_pair_median_bytes_per_second, of which the run wrote no sample" "$tmp/out" ||
    fail "no 'of which the run wrote no sample': $(cat "$tmp/out")"
echo "ok   a dashboard with an unknown metric, one without samples, an empty query or keyed on instance fails, naming it"

# 5. The chart carries the dashboard unchanged (rendered by real Helm, as
#    test_manifests.sh does).
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml is not installed"; exit 77; }
. tests/integration/lib_helm.sh
helm_find || exit 77
"$HELM" template efa-preflight charts/efa-preflight --namespace efa-preflight \
    --set image.repository=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight \
    -f tests/manifests/fixtures/values-observability.yaml >"$tmp/rendered.yaml" ||
    fail "the chart does not render with the dashboard on"
python3 - "$tmp/rendered.yaml" "$dash" <<'PY' || fail "dashboard ConfigMap"
import json, sys, yaml
cms = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap"]
assert len(cms) == 1, "%d ConfigMaps" % len(cms)
cm = cms[0]
assert cm["metadata"]["labels"].get("grafana_dashboard") == "1", cm["metadata"]
assert json.loads(cm["data"]["efa-preflight.json"]) == json.load(open(sys.argv[2]))
PY
echo "ok   grafanaDashboard.enabled renders a ConfigMap holding the dashboard as is"

# 6. The DaemonSet and ConfigMap with every observability value on are valid
#    Kubernetes objects (test_manifests.sh installs the validators).
if command -v node >/dev/null && [ -d tests/manifests/node_modules/kubernetes-models ]; then
    node tests/manifests/validate.mjs manifests "$tmp/rendered.yaml" >"$tmp/out" 2>&1 ||
        { grep -v '^ok ' "$tmp/out"; fail "Kubernetes schemas of the observability render"; }
    python3 - "$tmp/rendered.yaml" <<'PY' || fail "observability mounts"
import sys, yaml
ds = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "DaemonSet"][0]
spec = ds["spec"]["template"]["spec"]
c = spec["containers"][0]
env = {e["name"]: e.get("value") for e in c["env"]}
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v.get("hostPath", {}).get("path") for v in spec["volumes"]}
assert env["EFA_PREFLIGHT_METRICS_TEXTFILE"].startswith(mounts["metrics-textfile"] + "/"), env
assert env["EFA_PREFLIGHT_METRICS_TEXTFILE"].endswith(".prom"), env
assert env["EFA_PREFLIGHT_HISTORY_DIR"] == mounts["history"], (env, mounts)
assert env["EFA_PREFLIGHT_HISTORY_KEEP"] == "30", env
assert env["EFA_PREFLIGHT_PUSHGATEWAY"] == "http://pushgateway.monitoring:9091", env
assert vols["metrics-textfile"] == "/var/lib/node_exporter/textfile_collector", vols
assert vols["history"] == "/var/lib/efa-preflight/history", vols
PY
    echo "ok   observability render: valid objects, the env points into the hostPath mounts"
else
    echo "note the Kubernetes validators are not installed (test_manifests.sh does that): schemas not checked"
fi
