#!/bin/bash
# The chart runs the agent with readOnlyRootFilesystem: it must write only
# to what the pod mounts (/tmp and /dev/shm emptyDirs, the report, history
# and textfile directories). A `local` run in a mount namespace whose root
# is read-only, with tmpfs on /tmp, /dev/shm and one output directory,
# passes and writes its report, history and metrics there; a report path
# on the read-only root is refused, so the root really is read-only. Ports: free ones (local's default).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/${BUILD:-build}/efa-preflight}
command -v unshare >/dev/null || { echo "skip: no unshare"; exit 77; }
unshare -m --propagation private true 2>/dev/null ||
    { echo "skip: cannot create a mount namespace here (needs root)"; exit 77; }
out=$(mktemp -d -p /var/tmp)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL $*"; cat "$out/log" 2>/dev/null | tail -n 20; exit 1; }

# Inside: / read-only; /tmp and /dev/shm tmpfs; $out/res a writable bind
# mount of its own (as the chart's hostPath and emptyDir mounts are). The
# binary runs from a copy beside it: a checkout under /tmp (or /dev/shm)
# would be hidden by those tmpfs mounts.
mkdir -p "$out/res" "$out/bin"
cp "$bin" "$out/bin/efa-preflight" || fail "cannot copy $bin"
bin=$out/bin/efa-preflight
timeout -k 5 120 unshare -m --propagation private bash -c '
    set -e
    mount --bind "$2/res" "$2/res"
    mount -o remount,bind,ro /
    mount -t tmpfs none /tmp
    mount -t tmpfs none /dev/shm
    touch /etc/pf-ro-probe 2>/dev/null && { echo "root is writable"; exit 9; }
    d=$2/res
    rc=0
    "$1" local --ranks 2 --fabric-provider tcp --no-imds --timeout 40 -e 256K \
        --report "$d/r.json" --history-dir "$d/history" --metrics-textfile "$d/efa_preflight.prom" \
        >"$d/out" 2>"$d/err" || rc=$?
    echo "$rc" >"$d/rc"
    "$1" local --ranks 2 --fabric-provider tcp --no-imds --timeout 40 -e 64K \
        --report /var/pf-readonly-report.json >"$d/out2" 2>"$d/err2" || true
' _ "$bin" "$out" >"$out/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "the read-only namespace run exited $rc"
[ "$(cat "$out/res/rc")" = 0 ] || { cat "$out/res/err"; fail "local under a read-only root exited $(cat "$out/res/rc")"; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["verdict"]["exit_code"] == 0' "$out/res/r.json" ||
    fail "no passing report in the writable directory"
ls "$out/res/history" | grep -q '^[0-9]\{8\}T.*Z\.json$' || fail "no history report"
grep -q '^efa_preflight_exit_code{node=' "$out/res/efa_preflight.prom" || fail "no metrics textfile"
grep -q 'directory /var is not writable: Read-only file system' "$out/res/err2" ||
    fail "a report on the read-only root was not refused: $(tail -n 3 "$out/res/err2")"
echo "ok   read-only root, tmpfs /tmp and /dev/shm: local passes; report, history, metrics in the mounted directory; a write to the root fails"
