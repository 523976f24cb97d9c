#!/bin/bash
# EFA hardware counters end to end, on the fixture trees of
# tests/fakes/make_sysfs.sh (fake libfabric, as test_node_fixtures.sh):
#   - `node` on p5 with errors since boot: warn EFANICErrorsSinceBoot
#     naming the device, the counters and the uptime; exit 0;
#   - `node` on an old driver (no Nitro v4 counters) and on one without
#     hw_counters: reported, nothing fails;
#   - `local` on a trn1 tree whose counters the test moves between the
#     reads (--debug-counters-after: a copy it rewrote): the report's
#     collective.nics and the table's per-NIC block carry the deltas; over
#     tcp the NICs are reported but not judged (EFANotRequired).
# Ports 36175-36179.
. "$(dirname "$0")/lib_test.sh"
pf_fixtures
pf_need "$FAKE"
export EFA_PREFLIGHT_NCCL=/nonexistent/libnccl.so.2
export EFA_PREFLIGHT_CUDART=/nonexistent/libcudart.so
fail() { echo "FAIL $*"; tail -n 5 "$tmp/err.txt" 2>/dev/null; exit 1; }
check() { json "$1" "[(c['status'], c['reason'], c['message']) for c in r['checks'] if c['name'] == '$2'][0]"; }

node_fx() {   # node_fx FIXTURE DOMAINS: JSON in $tmp/$1.json, exit in RC
    PF_FAKE_FI_EFA_DOMAINS=$2 "$PF_BIN" node --sysfs-root "$FX/$1" \
        --dev-root "$FX/$1" --no-imds --libfabric-path "$FAKE" \
        --expect-gpus 0 --min-memlock-mib 0 --efa-recount-ms 0 --json \
        >"$tmp/$1.json" 2>"$tmp/err.txt"
    RC=$?
}

node_fx p5-booterrors 32
[ $RC -eq 0 ] || fail "p5-booterrors exited $RC: $(json "$tmp/p5-booterrors.json" 'r["verdict"]')"
got=$(check "$tmp/p5-booterrors.json" efa_nic_errors)
[ "$got" = "('warn', 'EFANICErrorsSinceBoot', \"1 of 32 EFA device(s) counted errors since they came up, at most the host's uptime of 3.2 d ago: rdmap19s27 rx_drops 2, retrans_timeout_events 7\")" ] ||
    fail "p5-booterrors efa_nic_errors: $got"
[ "$(json "$tmp/p5-booterrors.json" 'r["verdict"]["reason"]')" = EFANICErrorsSinceBoot ] ||
    fail "p5-booterrors headline $(json "$tmp/p5-booterrors.json" 'r["verdict"]["reason"]')"
[ "$(json "$tmp/p5-booterrors.json" 'r["node"]["efa"]["devices"][3]["hw_counters"]["retrans_timeout_events"]')" = 7 ] ||
    fail "p5-booterrors: the device's counters are not in the report"
echo "ok   errors since boot: exit 0, warn: $(json "$tmp/p5-booterrors.json" '[c["message"] for c in r["checks"] if c["name"] == "efa_nic_errors"][0]')"

node_fx p5-olddriver 32
[ $RC -eq 0 ] || fail "p5-olddriver exited $RC"
got=$(check "$tmp/p5-olddriver.json" efa_nic_errors)
grep -q "^('pass', None, 'no error counter above 0 on 32 EFA device(s) since they came up (host up 3.2 d); absent on this driver: retrans_bytes, retrans_pkts, retrans_timeout_events, unresponsive_remote_events, impaired_remote_conn_events')$" <<<"$got" ||
    fail "p5-olddriver efa_nic_errors: $got"
[ "$(json "$tmp/p5-olddriver.json" 'r["node"]["efa"]["devices"][0]["hw_counters"]["retrans_pkts"]')" = None ] ||
    fail "p5-olddriver: an absent counter is not null"
node_fx p5-nocounters 32
[ $RC -eq 0 ] || fail "p5-nocounters exited $RC"
got=$(check "$tmp/p5-nocounters.json" efa_nic_errors)
grep -q "^('skip', 'NotApplicable', 'the EFA driver exposes no hardware counters" <<<"$got" ||
    fail "p5-nocounters efa_nic_errors: $got"
echo "ok   old driver, no counters at all: reported, exit 0 both"

# Counters moved between the reads: a copy of the trn1 tree, rewritten.
pf_counters_moved "$FX" "$tmp/after" || fail "the moved counters' copy"
timeout -k 5 60 "$PF_BIN" local --ranks 2 --fabric-provider tcp --no-imds \
    --sysfs-root "$FX/trn1.32xlarge" --dev-root "$FX/trn1.32xlarge" \
    --debug-counters-after "$tmp/after" --port 36175 --timeout 45 \
    -b 1K -e 64K -n 2 -w 1 --report "$tmp/local.json" >"$tmp/out.txt" 2>"$tmp/err.txt"
rc=$?
[ $rc -eq 0 ] || fail "local over the moved trn1 counters exited $rc"
R=$tmp/local.json
[ "$(json $R '[d["name"] for d in r["collective"]["nics"]["devices"]]')" = \
  "['rdmap16s27', 'rdmap17s27', 'rdmap18s27', 'rdmap19s27', 'rdmap20s27', 'rdmap21s27', 'rdmap22s27', 'rdmap23s27']" ] ||
    fail "devices: $(json $R 'r["collective"]["nics"]["devices"]')"
[ "$(json $R '(r["collective"]["nics"]["devices"][2]["sweep_bytes"], r["collective"]["nics"]["devices"][2]["sweep_share"], r["collective"]["nics"]["devices"][2]["errors"])')" = \
  "(50000000, 0.125, {'retrans_timeout_events': 3})" ] ||
    fail "rdmap18s27: $(json $R 'r["collective"]["nics"]["devices"][2]')"
for name in nic_traffic nic_errors; do
    got=$(check $R $name)
    grep -q "^('skip', 'EFANotRequired', 'provider tcp;ofi_rxm: this run did not use the EFA NICs" <<<"$got" ||
        fail "$name over tcp: $got"
done
grep -q "^# NICs: 8 EFA, hardware counters over the sweep: 400.0 MB moved$" "$tmp/out.txt" ||
    fail "no per-NIC block in the table"
grep -q "^ rdmap18s27  *50.0 MB   12.5%  retrans_timeout_events +3$" "$tmp/out.txt" ||
    fail "the table's rdmap18s27 line: $(grep rdmap18s27 "$tmp/out.txt")"
echo "ok   local over counters moved mid-run: 8 NICs x 50 MB, 12.5% each, rdmap18s27 retrans_timeout_events +3 in report and table; not judged over tcp"
