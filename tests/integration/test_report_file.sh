#!/bin/bash
# The --report file:
#  - a path that cannot work (no such directory, a directory) is refused
#    before the run: exit 2 at once, nothing probed, no table;
#  - its temp file is created exclusively under an unpredictable name: a
#    symlink planted at the old predictable name (<report>.tmp.<pid>)
#    leaves its target untouched, and no temp file is left behind;
#  - only a regular file (or a missing one) is replaced: a symlink, a
#    character device, a FIFO at the report's name (and at
#    --metrics-textfile's), a --history-dir that is not a directory, are
#    refused before the run (exit 2 naming the path) and left as they
#    were; the same check again at the rename (unit test
#    util/fsutil.c) covers an entry that changes during the run;
#  - a report that cannot be written at the end (its directory removed
#    during the run) is a ReportFailed check: the table's summary says
#    "(exit 3)" and the process exits 3.
. "$(dirname "$0")/lib_test.sh"
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
left=$(ls -A "$tmp/d" | grep -v '^r.json$')
[ -z "$left" ] || fail "temporary files left: $left"
echo "ok   link at <report>.tmp.<pid>: target untouched, report written, no temp file left"

# Only a regular file or a missing one is replaced. The device is made
# here (a copy of /dev/null's numbers under the test's own directory), so
# no real device is ever at stake.
mkdir "$tmp/t"
ln -s "$tmp/victim" "$tmp/t/link.json"
ln -s /dev/null "$tmp/t/devlink.prom"
mkfifo "$tmp/t/fifo.json"
kinds="link.json:symbolic%link fifo.json:FIFO"
if mknod "$tmp/t/null.json" c 1 3 2>/dev/null; then
    kinds="$kinds null.json:character%device"
    cp -a "$tmp/t/null.json" "$tmp/t/null.prom"
else
    echo "note: mknod not permitted here: the character-device case is left out"
fi
echo notadir >"$tmp/t/hist"
before=$(ls -l "$tmp/t")
check_refused() {   # check_refused FLAG PATH KIND
    local t0 rc secs
    t0=$(date +%s.%N)
    timeout 20 "$bin" "${node[@]}" "$1" "$2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    [ $rc -eq 2 ] || { cat "$tmp/err"; fail "$1 $2: exit $rc, want 2"; }
    [ -s "$tmp/out" ] && { cat "$tmp/out"; fail "$1 $2: the run went on"; }
    grep -q "^efa-preflight: $1: $2 is $3" "$tmp/err" ||
        { cat "$tmp/err"; fail "$1 $2: the message does not name the path and what it is ($3)"; }
    echo "ok   $1 $2 ($3): exit 2 in ${secs}s: $(head -n 1 "$tmp/err")"
}
for k in $kinds; do   # name:kind, '%' for a space
    kind=${k#*:}
    check_refused --report "$tmp/t/${k%%:*}" "a ${kind//%/ }"
done
check_refused --metrics-textfile "$tmp/t/devlink.prom" "a symbolic link"
[ -e "$tmp/t/null.prom" ] && check_refused --metrics-textfile "$tmp/t/null.prom" "a character device"
check_refused --history-dir "$tmp/t/hist" "a regular file, not a directory"
check_refused --history-dir "$tmp/t/fifo.json" "a FIFO, not a directory"
[ "$(ls -l "$tmp/t")" = "$before" ] || { echo "$before"; ls -l "$tmp/t"; fail "an entry was changed"; }
[ "$(cat "$tmp/victim")" = precious ] || fail "the link's target was written"
[ "$(cat "$tmp/t/hist")" = notadir ] || fail "the file named as --history-dir was changed"
echo "ok   every refused entry is as it was (type, numbers, target)"

# A missing history directory is still created, a regular report file
# still replaced.
echo old >"$tmp/t/r.json"
"$bin" "${node[@]}" --report "$tmp/t/r.json" --history-dir "$tmp/t/newhist" \
    >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -le 1 ] || { cat "$tmp/err"; fail "a regular report file and a missing history dir: exit $rc"; }
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/t/r.json" || fail "the regular report file was not replaced"
[ "$(ls "$tmp/t/newhist" | wc -l)" -eq 1 ] || fail "the history directory was not created with one report"
echo "ok   a regular report file is replaced, a missing history directory created"

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
