#!/bin/bash
# The --report file:
#  - a path that cannot work (no such directory, a directory) is refused
#    before the run: exit 2 at once, nothing probed, no table;
#  - its temp file is created exclusively under an unpredictable name: a
#    symlink planted at the old predictable name (<report>.tmp.<pid>) and a
#    symlink at the report itself leave their target untouched, and no
#    temp file is left behind;
#  - a report that cannot be written at the end (its directory removed
#    during the run) is a ReportFailed check: the table's summary says
#    "(exit 3)" and the process exits 3.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/build/efa-preflight}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
node=(node --no-imds --fabric-provider tcp)

for bad in "$tmp/nodir/r.json" "$tmp" "$tmp/"; do
    t0=$(date +%s.%N)
    timeout 20 "$bin" "${node[@]}" --report "$bad" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    [ $rc -eq 2 ] || { cat "$tmp/err"; fail "--report $bad: exit $rc, want 2"; }
    [ -s "$tmp/out" ] && { cat "$tmp/out"; fail "--report $bad: the run went on (stdout not empty)"; }
    grep -q "^efa-preflight: --report: " "$tmp/err" || { cat "$tmp/err"; fail "--report $bad: no clear message"; }
    echo "ok   --report $bad: exit 2 in ${secs}s before the run: $(head -n 1 "$tmp/err")"
done

# Symlinks: at the old predictable name (the pid is the agent's: exec
# keeps it) and, second run, at the report's own name.
mkdir "$tmp/d"
echo precious >"$tmp/victim"
bash -c 'ln -s "$1" "$2.tmp.$$" && exec "${@:3}"' _ "$tmp/victim" "$tmp/d/r.json" \
    "$bin" "${node[@]}" --report "$tmp/d/r.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -le 1 ] || { cat "$tmp/err"; fail "run with a planted link: exit $rc"; }
[ "$(cat "$tmp/victim")" = precious ] || fail "the report was written through the planted link <report>.tmp.<pid>"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/d/r.json" || fail "no report beside the link"
rm -f "$tmp"/d/r.json.tmp.*
ln -sf "$tmp/victim" "$tmp/d/r.json"
"$bin" "${node[@]}" --report "$tmp/d/r.json" >/dev/null 2>"$tmp/err"
[ "$(cat "$tmp/victim")" = precious ] || fail "the report was written through a link at its own name"
[ -f "$tmp/d/r.json" ] && [ ! -L "$tmp/d/r.json" ] || fail "the link at the report's name was not replaced by the report"
left=$(ls -A "$tmp/d" | grep -v '^r.json$')
[ -z "$left" ] || fail "temporary files left: $left"
echo "ok   links at <report>.tmp.<pid> and at the report: target untouched, report written, no temp file left"

# A report that fails at the end: the directory disappears during a run
# that a slowed rank stretches to a few seconds.
mkdir "$tmp/gone"
"$bin" local --ranks 2 --fabric-provider tcp --no-imds -b 64K -e 64K -n 2 -w 0 \
    --debug-slow-rank 1 --debug-slow-ms 150 --report "$tmp/gone/r.json" \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 0.7
rm -rf "$tmp/gone"
wait $pid
rc=$?
grep -q "report .*ReportFailed" "$tmp/out" || { cat "$tmp/out" "$tmp/err"; fail "no ReportFailed check in the table"; }
grep -q "summary: .*(exit $rc)" "$tmp/out" || { cat "$tmp/out"; fail "the summary's exit code is not the process's ($rc)"; }
[ $rc -eq 3 ] || fail "a report that could not be written: exit $rc, want 3"
echo "ok   report lost during the run: ReportFailed check, summary '(exit 3)', process exit 3"
echo "PASS"
