#!/bin/bash
# Progress while it waits, at the default log level: rank 0 of 2 whose peer
# never starts waits 20 s (--timeout 23: rank 0 gives up 3 s before the
# run's deadline, bootstrap.c) and prints at least three
# progress lines on stderr, each naming the missing rank, one plain line
# each (stderr is a file: no '\r', no escape codes). On a terminal (script
# gives it a pty) the same wait is one live line rewritten with '\r'.
# The lone rank 1 names rank 0 it cannot reach; --log-level error and
# --progress-interval 0 silence them. Loopback only, on ports from the
# kernel (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"
p1=$(pf_free_port)
peers=127.0.0.1:$p1,127.0.0.1:$p1
common=(run --bootstrap static --rank 0 --fabric-provider tcp --no-imds)

# 1. Rank 0 waits 20 s for rank 1.
start=$(date +%s)
timeout -k 5 40 "$bin" "${common[@]}" --peers "$peers" --timeout 23 \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
secs=$(( $(date +%s) - start ))
[ $rc -eq 3 ] || fail "rank 0 alone exited $rc, want 3 (PeerTimeout)"
grep -q "rank 1 (127.0.0.1) never joined the rendezvous on port $p1 within 2[0-9] s" "$tmp/out" ||
    fail "rank 0 did not wait 20 s or more for rank 1"
lines=$(grep -c 'progress: waiting for peers: 1 of 2 ranks joined, missing rank 1 (127.0.0.1' "$tmp/err")
[ "$lines" -ge 3 ] || fail "$lines progress lines naming rank 1 in ${secs} s, want >= 3"
[ "$(grep -c 'progress:' "$tmp/err")" -eq "$lines" ] || fail "progress lines that do not name rank 1"
grep -q $'\r' "$tmp/err" && fail "a carriage return on a stderr that is no terminal"
grep -q $'\033' "$tmp/err" && fail "an escape code on a stderr that is no terminal"
# No two lines within the interval (5 s): compare the timestamps.
python3 - "$tmp/err" <<'PY' || fail "progress lines closer than the 5 s interval"
import re, sys
ts = [int(h) * 3600 + int(m) * 60 + float(s) for h, m, s in
      re.findall(r"^(\d\d):(\d\d):(\d\d\.\d+) efa-preflight progress:", open(sys.argv[1]).read(), re.M)]
gaps = [b - a for a, b in zip(ts, ts[1:])]
print("progress lines at gaps of", ["%.2f" % g for g in gaps], "s")
sys.exit(0 if all(4.9 <= g for g in gaps) else 1)
PY
echo "ok   rank 0 waiting ${secs} s: $lines progress lines naming rank 1, e.g.:"
grep -m1 'progress:' "$tmp/err" | sed 's/^/     /'

# 2. On a terminal: one live line, '\r' before each update, a newline when
#    the wait ends.
if command -v script >/dev/null; then
    p2=$(pf_free_port)
    timeout -k 5 30 script -qec "$bin ${common[*]} --peers 127.0.0.1:$p2,127.0.0.1:$p2 \
        --timeout 4 --progress-interval 1 2>&1 >/dev/null" /dev/null >"$tmp/tty" 2>&1
    n=$(grep -o $'\rwaiting for peers: 1 of 2 ranks joined, missing rank 1' "$tmp/tty" | wc -l)
    [ "$n" -ge 2 ] || { cat -A "$tmp/tty" | head; fail "$n live updates on a terminal, want >= 2"; }
    grep -q 'progress:' "$tmp/tty" && fail "plain progress lines on a terminal"
    echo "ok   on a terminal: $n live updates of one line"
else
    echo "note script(1) absent: the terminal case is not checked"
fi

# 3. Rank 1 without rank 0 names the address it cannot reach.
p3=$(pf_free_port)
p4=$(pf_free_port)
timeout -k 5 30 "$bin" run --bootstrap static --rank 1 --fabric-provider tcp \
    --no-imds --peers 127.0.0.1:$p3,127.0.0.1:$p4 --timeout 4 \
    --progress-interval 1 >"$tmp/out" 2>"$tmp/err"
grep -q "progress: waiting for peers: rank 0 at 127.0.0.1:$p3 not reached yet" "$tmp/err" ||
    fail "rank 1 does not say which rank 0 it waits for"
echo "ok   rank 1: names rank 0 at 127.0.0.1:$p3"

# 4. Silenced by --log-level error and by --progress-interval 0.
for opt in "--log-level error" "--progress-interval 0"; do
    # shellcheck disable=SC2086
    p5=$(pf_free_port)
    timeout -k 5 30 "$bin" "${common[@]}" --peers 127.0.0.1:$p5,127.0.0.1:$p5 \
        --timeout 3 $opt >"$tmp/out" 2>"$tmp/err"
    grep -q 'progress:' "$tmp/err" && fail "progress lines with $opt"
done
echo "ok   no progress lines with --log-level error or --progress-interval 0"
