#!/bin/bash
# `efa-preflight monitor` without a cluster: bad input is exit 2 naming
# what is wrong, before anything runs; a bounded run on the p5en and
# old-driver fixtures exits 0 and leaves a textfile that says what it saw.
. "$(dirname "$0")/lib_test.sh"
fail() { echo "FAIL: $*"; exit 1; }
"$root/tests/fakes/make_sysfs.sh" "$tmp/fixtures" || fail "fixtures"
fx=$tmp/fixtures

refused() {   # refused 'what the message names' args...
    local want=$1 rc
    shift
    timeout 10 "$bin" monitor --no-imds --sysfs-root "$fx/p5en.48xlarge" \
        --dev-root "$fx/p5en.48xlarge" --monitor-intervals 1 "$@" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "monitor $*: exit $rc, want 2 ($(cat "$tmp/err"))"
    grep -qF -- "$want" "$tmp/err" || fail "monitor $*: the message does not name '$want': $(cat "$tmp/err")"
}
refused "'rx_drops' is not counter=rate" --monitor-thresholds rx_drops
refused "rx_drops: 'fast' is not a rate per second" --monitor-thresholds rx_drops=fast
refused "expected host:port" --listen 9464
refused "--interval" --interval 0
refused "sysfs_root '$tmp/none'" --sysfs-root "$tmp/none"
refused "must be a file named *.prom" --metrics-textfile "$tmp/x.txt"
echo "ok   bad --monitor-thresholds, --listen, --interval, --sysfs-root, --metrics-textfile: exit 2 naming them"

run() {   # run FIXTURE: 3 intervals into $tmp/FIXTURE.prom
    timeout 20 "$bin" monitor --no-imds --sysfs-root "$fx/$1" --dev-root "$fx/$1" \
        --interval 0.1 --monitor-intervals 3 --node-name n1 \
        --metrics-textfile "$tmp/$1.prom" >"$tmp/$1.out" 2>"$tmp/$1.err" ||
        fail "monitor on $1 exited $? ($(cat "$tmp/$1.err"))"
}
run p5en.48xlarge
grep -q '^efa_preflight_monitor_efa_devices{node="n1"} 16$' "$tmp/p5en.48xlarge.prom" ||
    fail "p5en: 16 devices not in the textfile"
grep -q '^efa_preflight_monitor_intervals_total{node="n1"} 3$' "$tmp/p5en.48xlarge.prom" ||
    fail "p5en: not 3 intervals"
grep -q 'status="True",reason="EFANICsHealthy"} 1' "$tmp/p5en.48xlarge.prom" ||
    fail "p5en: not healthy"
echo "ok   p5en: 16 NICs read 3 times, healthy, exit 0"
run p5-nocounters
grep -q 'reason="EFANICCountersUnavailable"} 1' "$tmp/p5-nocounters.prom" ||
    fail "a driver without counters is not EFANICCountersUnavailable"
grep -q '_total{node="n1",device=' "$tmp/p5-nocounters.prom" &&
    fail "counters exported where the driver has none"
echo "ok   a driver without hw_counters: EFANICCountersUnavailable (True), no counter series"
run p5-31
grep -q 'status="False",reason="EFANICDeviceGone"} 1' "$tmp/p5-31.prom" ||
    fail "31 of 32 devices is not EFANICDeviceGone"
grep -q "EFANICDeviceGone 31 EFA devices, the instance type has 32" "$tmp/p5-31.err" ||
    fail "the log does not say the count: $(cat "$tmp/p5-31.err")"
echo "ok   31 devices on a p5: EFANICDeviceGone (False), logged with the count"
