#!/bin/bash
# The monitor's scrape endpoint read by a real Prometheus (Debian's), on
# loopback ports the kernel hands out: the p5 fixture's 32 NICs, one of
# which has its retransmit timeouts rising. `promtool check metrics`
# passes on /metrics and on the textfile written beside it; Prometheus
# stores every NIC's counters, sees the rising one's rate and the NIC
# judged unhealthy; /healthz answers 200, an unknown path 404.
. "$(dirname "$0")/lib_test.sh"
for b in prometheus promtool curl; do
    command -v $b >/dev/null || { echo "skip: $b is not installed"; exit 77; }
done
fail() {
    echo "FAIL $*"
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 8 "$f"; }; done
    exit 1
}

"$root/tests/fakes/make_sysfs.sh" "$tmp/fixtures" || fail "fixtures"
cp -a "$tmp/fixtures/p5.48xlarge" "$tmp/fx"
ctr="$tmp/fx/sys/class/infiniband/rdmap20s27/ports/1/hw_counters/retrans_timeout_events"

# The monitor, on a port the kernel gave (retried if someone took it).
monitor() {
    exec "$bin" monitor --sysfs-root "$tmp/fx" --dev-root "$tmp/fx" --no-imds \
        --interval 0.5 --listen "$ADDR" --node-name node-0 \
        --metrics-textfile "$tmp/monitor.prom" -v
}
pf_serve monitor "$tmp/monitor.log" /healthz 10 "in use" ||
    fail "the monitor did not serve /healthz"
MON=$ADDR
echo "ok   the monitor serves /healthz on $MON"
( while :; do
      v=$(cat "$ctr"); echo $((v + 2)) >"$ctr.tmp" && mv "$ctr.tmp" "$ctr"
      sleep 0.25
  done ) &
pids+=($!)

code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$MON/nothing")
[ "$code" = 404 ] || fail "GET /nothing answered $code, want 404"
curl -fsS --max-time 2 "http://$MON/metrics" >"$tmp/scrape.txt" || fail "GET /metrics"
promtool check metrics <"$tmp/scrape.txt" >"$tmp/promtool.log" 2>&1 ||
    fail "promtool check metrics on /metrics: $(cat "$tmp/promtool.log")"
promtool check metrics <"$tmp/monitor.prom" >"$tmp/promtool-file.log" 2>&1 ||
    fail "promtool check metrics on the textfile: $(cat "$tmp/promtool-file.log")"
echo "ok   promtool check metrics passes on /metrics ($(grep -c '^# TYPE' "$tmp/scrape.txt") families) and on the textfile"

cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: efa-preflight-monitor
    static_configs: [{targets: ["$MON"]}]
EOF
prom() {
    exec prometheus --config.file="$tmp/prometheus.yml" \
        --storage.tsdb.path="$tmp/tsdb" --web.listen-address="$ADDR"
}
pf_serve prom "$tmp/prometheus.log" /-/ready 30 "address already in use" ||
    fail "prometheus did not come up"
PROM=$ADDR
echo "ok   prometheus up on $PROM"

PYTHONPATH="$root/tests/integration" python3 - "$PROM" <<'PY' || fail "Prometheus' view of the monitor"
import json, sys, time
import promql
prom = sys.argv[1]
def query(q):
    return promql.query(prom, q)
def until(what, q, ok, secs=40):
    deadline = time.time() + secs
    while True:
        got = query(q)
        if ok(got):
            print("ok   " + what)
            return got
        if time.time() > deadline:
            sys.exit("FAIL %s: %s gave %s" % (what, q, got))
        time.sleep(0.5)
until("32 NICs' tx_bytes stored, one series each, port 1",
      'efa_preflight_nic_tx_bytes_total{job="efa-preflight-monitor",node="node-0"}',
      lambda g: len(g) == 32 and {s["metric"]["port"] for s in g} == {"1"})
until("the device-level no_completion_cmds of all 32 NICs (port 0)",
      'efa_preflight_nic_no_completion_cmds_total{port="0"}', lambda g: len(g) == 32)
until("rdmap20s27's retransmit timeouts rise, no other NIC's",
      'rate(efa_preflight_nic_retrans_timeout_events_total[5s]) > 0',
      lambda g: [s["metric"]["device"] for s in g] == ["rdmap20s27"])
until("rdmap20s27 judged unhealthy, the 31 others healthy",
      'efa_preflight_nic_healthy',
      lambda g: len(g) == 32 and [s["metric"]["device"] for s in g if s["value"][1] == "0"] == ["rdmap20s27"])
until("the EFANICHealthy condition False with EFANICErrorRate",
      'efa_preflight_monitor_condition{status="False",reason="EFANICErrorRate"}',
      lambda g: len(g) == 1)
until("device count 32 against 32 expected",
      'efa_preflight_monitor_efa_devices - efa_preflight_monitor_efa_devices_expected',
      lambda g: len(g) == 1 and g[0]["value"][1] == "0")
PY
