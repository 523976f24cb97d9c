#!/bin/bash
# Metrics against the real parts (Debian's prometheus, prometheus-node-exporter,
# prometheus-pushgateway), on loopback: a local run that fails its floor
# (a reason to carry, an instance type that needs escaping) writes
# --metrics-textfile into node-exporter's textfile directory and pushes
# to a Pushgateway; Prometheus scrapes both. Every efa_preflight_* value
# Prometheus' HTTP API returns equals the JSON report's, from both paths;
# `promtool check metrics` passes on the file; a second run replaces the
# Pushgateway group rather than adding to it; a run on a fixture tree whose
# NIC counters move carries the per-NIC deltas through both paths; every
# dashboard query runs. Ports from the kernel (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"
for b in prometheus promtool prometheus-node-exporter prometheus-pushgateway; do
    command -v $b >/dev/null || {
        echo "skip: $b is not installed (apt-get install prometheus prometheus-node-exporter prometheus-pushgateway)"
        exit 77; }
done
fail() {
    echo "FAIL $*"
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 8 "$f"; }; done
    exit 1
}
PROM=127.0.0.1:$(pf_free_port) PGW=127.0.0.1:$(pf_free_port) NE=127.0.0.1:$(pf_free_port)

mkdir -p "$tmp/textfile" "$tmp/tsdb"
prometheus-pushgateway --web.listen-address=$PGW >"$tmp/pushgateway.log" 2>&1 &
pids+=($!)
prometheus-node-exporter --web.listen-address=$NE --collector.disable-defaults \
    --collector.textfile --collector.textfile.directory="$tmp/textfile" \
    >"$tmp/node-exporter.log" 2>&1 &
pids+=($!)
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs: [{targets: ["$NE"]}]
  - job_name: pushgateway
    honor_labels: true
    static_configs: [{targets: ["$PGW"]}]
EOF
promtool check config "$tmp/prometheus.yml" >"$tmp/promtool-config.log" 2>&1 ||
    fail "promtool check config refuses the test's own config"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address=$PROM >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
for u in "http://$PGW/-/ready" "http://$NE/metrics" "http://$PROM/-/ready"; do
    pf_wait_http "$u" 30 || fail "$u did not come up within 30 s"
done
echo "ok   pushgateway, node-exporter and prometheus up on loopback"

run_agent() {   # run_agent REPORT [more options]
    local report=$1; shift
    timeout -k 5 60 "$bin" local --ranks 2 --fabric-provider tcp --no-imds \
        --port 0 --timeout 40 -e 1M --min-busbw-gbps 1000 --instance-type 'p5"x\y' \
        --metrics-textfile "$tmp/textfile/efa_preflight.prom" \
        --pushgateway "http://$PGW" --report "$report" "$@" \
        >"$tmp/agent-out.log" 2>"$tmp/agent-err.log"
}
run_agent "$tmp/r.json"
rc=$?
[ $rc -eq 1 ] || fail "the agent exited $rc, want 1 (busbw below a 1000 GB/s floor)"
grep -q 'error' "$tmp/agent-err.log" && fail "the agent logged an error: $(grep error "$tmp/agent-err.log")"
ls "$tmp/textfile" | grep -qv '^efa_preflight.prom$' && fail "files other than the .prom left: $(ls "$tmp/textfile")"
promtool check metrics <"$tmp/textfile/efa_preflight.prom" >"$tmp/promtool.log" 2>&1 ||
    fail "promtool check metrics: $(cat "$tmp/promtool.log")"
echo "ok   promtool check metrics passes on the textfile ($(grep -c '^# TYPE' "$tmp/textfile/efa_preflight.prom") families)"
"$bin" reasons --json >"$tmp/reasons.json"

# compare REPORT: wait (bounded) until Prometheus has scraped this run from
# both paths, then check every value against the report.
compare() {
PYTHONPATH="$root/tests/integration" \
python3 - "$1" "$tmp/reasons.json" "$tmp/textfile/efa_preflight.prom" "$PROM" <<'PY'
import calendar, json, re, sys, time
import promql
report, reasons, textfile, prom = sys.argv[1:]
r = json.load(open(report))
rows = r["collective"]["rows"]
label_of = {x["reason"]: x["status_label"] or "usage" for x in json.load(open(reasons))}
status = label_of[r["verdict"]["reason"]] if r["verdict"]["reason"] else "pass"
started = calendar.timegm(time.strptime(r["started_at"], "%Y-%m-%dT%H:%M:%SZ"))

def query(q):
    return promql.query(prom, q)

# Both paths must show this run (its timestamp is after the report's
# start): the scrape job "node" for the textfile, and the pushed grouping
# key job="efa_preflight", which honor_labels keeps.
deadline = time.time() + 40
while True:
    got = query('efa_preflight_last_run_timestamp_seconds >= %d' % started)
    if {s["metric"]["job"] for s in got} == {"node", "efa_preflight"}:
        break
    if time.time() > deadline:
        sys.exit("FAIL Prometheus did not show the run from both jobs within 40 s: %s" % got)
    time.sleep(0.5)

want = {}   # (name, frozenset(labels)) -> value
def w(name, value, **labels):
    want[(name, frozenset(labels.items()))] = float(value)
w("efa_preflight_exit_code", r["verdict"]["exit_code"])
for s in ("pass", "warn", "fail", "error", "usage"):
    w("efa_preflight_status", s == status, status=s)
w("efa_preflight_verdict_info", 1, reason=r["verdict"]["reason"] or "",
  **{"class": r["verdict"]["class"]}, command=r["command"],
  instance_type=r["node"]["instance_type"], version=r["tool"]["version"])
w("efa_preflight_build_info", 1, version=r["tool"]["version"])
for row in rows:
    for p in ("out_of_place", "in_place"):
        w("efa_preflight_busbw_bytes_per_second", row[p]["busbw_gbps"] * 1e9,
          bytes=str(row["bytes"]), placement=p)
c = r["collective"]
w("efa_preflight_busbw_peak_bytes_per_second", c["peak_busbw_gbps"] * 1e9)
w("efa_preflight_busbw_average_bytes_per_second", c["avg_busbw_gbps"] * 1e9)
w("efa_preflight_busbw_floor_bytes_per_second", c["floor"]["busbw_gbps"] * 1e9)
w("efa_preflight_busbw_judged_bytes_per_second", c["floor"]["judged_busbw_gbps"] * 1e9)
w("efa_preflight_busbw_floor_message_size_bytes", c["floor"]["bytes"])
w("efa_preflight_collective_duration_seconds", c["wall_s"])
w("efa_preflight_collective_wrong_elements", c["wrong_total"])
w("efa_preflight_collective_ranks", c["nranks"])
w("efa_preflight_collective_nodes", c["nnodes"])
w("efa_preflight_efa_devices", r["node"]["efa"]["count"])
if r["instance"]:
    w("efa_preflight_efa_devices_expected", r["instance"]["efa_count"])
for dev in r["node"]["efa"]["devices"]:
    w("efa_preflight_efa_port_up", dev["port_active"], device=dev["name"])
nics = c.get("nics") or {}
if nics.get("counters_read"):
    for dev in nics["devices"]:
        w("efa_preflight_nic_sweep_bytes", dev["sweep_bytes"], device=dev["name"])
        w("efa_preflight_nic_errors", sum(dev["errors"].values()), device=dev["name"])
        for counter, v in dev["errors"].items():
            w("efa_preflight_nic_error_events", v, device=dev["name"], counter=counter)

names = sorted(set(re.findall(r"^# TYPE (\S+) gauge$", open(textfile).read(), re.M)))

def check(job):
    """The differences between what Prometheus holds for JOB and the report."""
    errs, have = [], {}
    for s in query('{__name__=~"efa_preflight_.*", job="%s"}' % job):
        m = dict(s["metric"])
        name = m.pop("__name__")
        inst = m.pop("instance")
        m.pop("job")
        if job == "efa_preflight" and inst != r["node"]["hostname"]:
            errs.append("pushgateway: instance %r, want the node %r" % (inst, r["node"]["hostname"]))
        # One label, node, on every sample of both paths (the textfile's
        # instance is node-exporter's address).
        node = m.pop("node", None)
        if node != r["node"]["hostname"]:
            errs.append("%s: %s has node=%r, want %r" % (job, name, node, r["node"]["hostname"]))
        have[(name, frozenset(m.items()))] = float(s["value"][1])
    for k, v in want.items():
        if k not in have:
            errs.append("%s: %s%s missing" % (job, k[0], dict(k[1])))
        elif abs(have[k] - v) > 1e-9 * max(1.0, abs(v)):
            errs.append("%s: %s%s = %r, the report says %r" % (job, k[0], dict(k[1]), have[k], v))
    # Every family with a sample in the file reached Prometheus.
    for n in names:
        if any(k[0] == n for k in want) and not any(k[0] == n for k in have):
            errs.append("%s: family %s never arrived" % (job, n))
    ts = have.get(("efa_preflight_last_run_timestamp_seconds", frozenset()), 0)
    dur = have.get(("efa_preflight_run_duration_seconds", frozenset()), 0)
    if not (started <= ts <= started + dur + 5 and 0 < dur < 60):
        errs.append("%s: last run at %r after %r s; the report started at %d" % (job, ts, dur, started))
    return errs, len(have)

# The previous run may have ended in the second this one started, so a
# timestamp alone does not prove the scrape is of this run: compare until
# the values agree or the deadline passes, and report the last differences.
bad = 0
for job in ("node", "efa_preflight"):
    while True:
        errs, n = check(job)
        if not errs or time.time() > deadline:
            break
        time.sleep(0.5)
    for e in errs:
        print("FAIL " + e)
    bad += len(errs)
    print("ok   %s: %d efa_preflight series, %d checked against the report" % (job, n, len(want)))
sys.exit(1 if bad else 0)
PY
}
compare "$tmp/r.json" || fail "Prometheus' values differ from the report"
# The Pushgateway path passes the same lint: what it serves for the pushed
# group, the node label included.
curl -fsS "http://$PGW/metrics" >"$tmp/pgw.prom" || fail "GET the Pushgateway's /metrics"
promtool check metrics <"$tmp/pgw.prom" >"$tmp/promtool-pgw.log" 2>&1 ||
    fail "promtool check metrics on the Pushgateway's page: $(cat "$tmp/promtool-pgw.log")"
grep -q "^efa_preflight_exit_code{instance=\"$(hostname)\",job=\"efa_preflight\",node=\"$(hostname)\"} 1\$" "$tmp/pgw.prom" ||
    fail "the Pushgateway does not serve efa_preflight_exit_code with the node label: $(grep efa_preflight_exit_code "$tmp/pgw.prom")"
for f in "$tmp/textfile/efa_preflight.prom" "$tmp/pgw.prom"; do
    n=$(grep '^efa_preflight_' "$f" | grep -vc "node=\"$(hostname)\"")
    [ "$n" -eq 0 ] || fail "$n samples of $f lack node=\"$(hostname)\""
done
echo "ok   promtool check metrics passes on the Pushgateway's page; node=\"$(hostname)\" on every sample of both paths"

# A second run replaces the Pushgateway's group (PUT) and the textfile.
run_agent "$tmp/r2.json" --min-busbw-gbps 0.000001
rc=$?
[ $rc -eq 0 ] || fail "the second run exited $rc, want 0"
compare "$tmp/r2.json" || fail "after the second run, Prometheus' values differ from its report"
n=$(curl -fsS "http://$PGW/metrics" | grep -c '^efa_preflight_exit_code{')
[ "$n" -eq 1 ] || fail "the Pushgateway holds $n groups of efa_preflight_exit_code, want 1"
echo "ok   a second run (pass) replaced both: Prometheus shows its values"

# Per-NIC counters: a run on the trn1 fixture tree (8 EFA devices) whose
# hardware counters the test moves between the reads, as
# test_nic_counters.sh does: 50 MB per NIC, rdmap18s27 retrans_timeout_events +3.
case $BUILD in /*) B=$BUILD ;; *) B=$root/$BUILD ;; esac
FX=$B/fixtures/sysfs
"$root/tests/fakes/make_sysfs.sh" "$FX" >"$tmp/fixtures.log" 2>&1 || fail "fixture build failed"
pf_counters_moved "$FX" "$tmp/after" || fail "the moved counters' copy"
EFA_PREFLIGHT_NCCL=/nonexistent/libnccl.so.2 EFA_PREFLIGHT_CUDART=/nonexistent/libcudart.so \
timeout -k 5 60 "$bin" local --ranks 2 --fabric-provider tcp --no-imds --port 0 \
    --sysfs-root "$FX/trn1.32xlarge" --dev-root "$FX/trn1.32xlarge" \
    --debug-counters-after "$tmp/after" --timeout 45 -b 1K -e 64K -n 2 -w 1 --min-busbw-gbps 0.000001 \
    --metrics-textfile "$tmp/textfile/efa_preflight.prom" --pushgateway "http://$PGW" \
    --report "$tmp/r3.json" >"$tmp/agent-out.log" 2>"$tmp/agent-err.log"
rc=$?
[ $rc -eq 0 ] || fail "the run on the trn1 fixture exited $rc"
promtool check metrics <"$tmp/textfile/efa_preflight.prom" >"$tmp/promtool.log" 2>&1 ||
    fail "promtool check metrics (NIC run): $(cat "$tmp/promtool.log")"
grep -q '^efa_preflight_nic_error_events{node="[^"]*",device="rdmap18s27",counter="retrans_timeout_events"} 3$' \
    "$tmp/textfile/efa_preflight.prom" || fail "no error event of rdmap18s27 in the textfile"
compare "$tmp/r3.json" || fail "per-NIC values in Prometheus differ from the report"
echo "ok   per-NIC counter deltas (8 NICs, rdmap18s27 retrans_timeout_events +3) reach Prometheus as the report has them"

# Every query of the chart's dashboard runs on this Prometheus; those of
# the main panels return data.
PYTHONPATH="$root/tests/integration" \
python3 - "$root/charts/efa-preflight/dashboards/efa-preflight.json" "$PROM" <<'PY' || fail "dashboard queries on Prometheus"
import json, re, sys
import promql
dash, prom = sys.argv[1:]
d = json.load(open(dash))
must = {"Nodes by status", "Top reasons", "busbw per node over time", "Floor margin per node",
        "busbw by message size", "Time since last validation", "Per-NIC errors during validation",
        "Per-NIC share of the sweep's traffic"}
bad = n = 0
for p in d["panels"]:
    for t in p.get("targets", []):    # a row has none
        q = re.sub(r"\$\{?node\}?", ".*", t["expr"])
        # Grafana's own range variable, as Grafana would set it
        q = re.sub(r"\$\{?__rate_interval\}?", "1m", q)
        try:
            r = promql.answer(prom, q)
        except Exception as e:
            print("FAIL panel %r: %s: %s" % (p["title"], q, e)); bad += 1; continue
        n += 1
        if r["status"] != "success":
            print("FAIL panel %r: %s: %s" % (p["title"], q, r)); bad += 1
        elif p["title"] in must and t["refId"] == "A" and not r["data"]["result"]:
            print("FAIL panel %r returns nothing: %s" % (p["title"], q)); bad += 1
print("ok   %d dashboard queries run on Prometheus; the main panels have data" % n)
sys.exit(1 if bad else 0)
PY

# An unreachable Pushgateway is logged and changes nothing else.
timeout -k 5 60 "$bin" local --ranks 2 --fabric-provider tcp --no-imds --port 0 --timeout 20 \
    -e 64K --pushgateway "http://user:pw@127.0.0.1:1" >"$tmp/out3.log" 2>"$tmp/err3.log"
rc=$?
[ $rc -eq 0 ] || fail "a run with an unreachable Pushgateway exited $rc, want 0"
grep -q 'error: metrics: Pushgateway http://127.0.0.1:1/metrics/job/efa_preflight/instance' "$tmp/err3.log" ||
    fail "no error naming the Pushgateway: $(cat "$tmp/err3.log")"
grep -q 'pw@' "$tmp/err3.log" && fail "the password was logged"
echo "ok   an unreachable Pushgateway: error logged without the password, exit code unchanged"
