#!/bin/bash
# `efa-preflight local`: N rank processes on this machine, rendezvous on
# loopback. 3 ranks over tcp pass with 0 wrong and one table on stdout (only
# rank 0 writes); 1 rank runs alone; a rank SIGKILLed mid-sweep makes the
# launcher exit 3 and say which rank died and how, and the survivors report
# PeerLost; --ranks beyond what the host holds is a usage error naming the
# limit; two runs at once pick their own free ports and both pass. The
# ports given with --port come from the kernel (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"

# 1. Three ranks pass.
pf_local 0 "local --ranks 3" --ranks 3 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 40 -e 1M --report "$tmp/r.json" --log-level info
got=$(json "$tmp/r.json" '(r["verdict"]["exit_code"], r["collective"]["nranks"], r["collective"]["wrong_total"], r["collective"]["error"], len(r["collective"]["rows"]))')
[ "$got" = "(0, 3, 0, None, 18)" ] ||
    fail "report (exit_code, nranks, wrong, error, rows) = $got"
[ "$(grep -c '^# Out of bounds values : 0 OK' "$tmp/out")" -eq 1 ] ||
    fail "stdout does not hold exactly one result table"
for r in 0 1 2; do
    grep -q "\[rank $r\] info: discover: local bootstrap, rank $r of 3" "$tmp/err" ||
        fail "rank $r did not log its local rank with its tag"
done
n=$(grep -o 'rank [0-2] of 3, run local-[0-9]*-[0-9]*' "$tmp/err" | sed 's/.*run //' | sort -u | wc -l)
[ "$n" -eq 1 ] || fail "ranks derived $n different run ids"
echo "ok   local --ranks 3: pass, 0 wrong, one table, one run id"

# 2. One rank: the collective with a world of one.
pf_local 0 "local --ranks 1" --ranks 1 --fabric-provider tcp --no-imds \
    --timeout 30 -e 64K --report "$tmp/r1.json"
[ "$(json "$tmp/r1.json" '(r["collective"]["nranks"], r["collective"]["wrong_total"])')" = "(1, 0)" ] ||
    fail "local --ranks 1 report is not one rank with 0 wrong"
echo "ok   local --ranks 1: pass with a world of one"

# 3. A rank killed mid-sweep: the launcher reports it and exits 3.
"$bin" local --ranks 3 --fabric-provider tcp --no-imds --port "$(pf_free_port)" \
    --timeout 60 -b 64K -e 1M -n 20 -w 5 --debug-slow-rank 0 --debug-slow-ms 100 \
    --report "$tmp/r3.json" --log-level info >"$tmp/out" 2>"$tmp/err" &
launcher=$!
for ((i = 0; i < 150; i++)); do
    [ "$(grep -c 'host engine: provider' "$tmp/err")" -eq 3 ] && break
    sleep 0.1
done
[ "$(grep -c 'host engine: provider' "$tmp/err")" -eq 3 ] || fail "the sweep did not start"
victim=""
for pid in $(pgrep -P $launcher); do
    grep -q "^$(printf 'efa-preflight')" /proc/$pid/comm 2>/dev/null || continue
    victim=$pid         # the last child forked is rank 2
done
[ -n "$victim" ] || fail "no rank processes under the launcher"
sleep 1
kill -9 "$victim"
t0=$(date +%s)
wait $launcher
rc=$?
secs=$(( $(date +%s) - t0 ))
[ $rc -eq 3 ] || fail "launcher exited $rc after a rank was killed, want 3"
[ $secs -le 15 ] || fail "launcher needed $secs s after the kill"
grep -q "local: rank 2 (pid $victim) was killed by signal 9 (Killed)" "$tmp/err" ||
    fail "launcher did not name the killed rank"
[ "$(json "$tmp/r3.json" 'r["collective"]["error"]["reason"]')" = PeerLost ] ||
    fail "rank 0's report does not say PeerLost"
echo "ok   killed rank: launcher exit 3 after ${secs} s, rank 0 reports PeerLost"

# 4. --ranks beyond what the host holds: a usage error naming the limit,
#    before any rank starts.
(ulimit -n 160; exec timeout -k 5 30 "$bin" local --ranks 40 --fabric-provider tcp \
    --no-imds --port "$(pf_free_port)" --timeout 20 -e 64K >"$tmp/out" 2>"$tmp/err")
rc=$?
[ $rc -eq 2 ] || fail "local --ranks 40 under ulimit -n 160 exited $rc, want 2"
grep -q "efa-preflight: --ranks asks for 40 local ranks: this host holds at most 32 (RLIMIT_NOFILE (ulimit -n) 160: rank 0 keeps a connection to every rank plus 128 spare descriptors)" "$tmp/err" ||
    fail "the error does not name RLIMIT_NOFILE: $(cat "$tmp/err")"
! grep -q "starting" "$tmp/err" || fail "ranks were started"
timeout -k 5 30 "$bin" local --ranks 2147483647 --fabric-provider tcp --no-imds \
    --port "$(pf_free_port)" --timeout 20 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "local --ranks 2147483647 exited $rc, want 2"
grep -q "local ranks: this host holds at most [0-9]* (memory: [0-9]* MiB available, about 256 MiB per rank for messages up to 67108864 bytes" "$tmp/err" ||
    fail "the error does not name memory: $(cat "$tmp/err")"
echo "ok   --ranks beyond the host: exit 2 naming RLIMIT_NOFILE or memory, nothing started"

# 5. Two `local` runs at once on one host, neither given --port: each picks
#    a free port, both pass, and no rank of one ever knocks on the other's
#    rank 0 (no refused HELLO, each rank 0 admits exactly its own ranks).
#    --port, when given, is the port used.
for i in a b; do
    timeout -k 5 90 "$bin" local --ranks 3 --fabric-provider tcp --no-imds \
        --timeout 60 -b 64K -e 4M -n 5 --report "$tmp/c$i.json" --log-level info \
        >"$tmp/out-$i" 2>"$tmp/err-$i" &
    eval "pid_$i=\$!"
done
wait "$pid_a"; rc_a=$?
wait "$pid_b"; rc_b=$?
[ $rc_a -eq 0 ] && [ $rc_b -eq 0 ] || {
    tail -n 8 "$tmp/err-a" "$tmp/err-b"; fail "concurrent local runs exited $rc_a and $rc_b, want 0 and 0"; }
port_a=$(grep -o 'rendezvous on 127.0.0.1:[0-9]*' "$tmp/err-a" | cut -d: -f2)
port_b=$(grep -o 'rendezvous on 127.0.0.1:[0-9]*' "$tmp/err-b" | cut -d: -f2)
[ -n "$port_a" ] && [ -n "$port_b" ] && [ "$port_a" != "$port_b" ] && [ "$port_a" != 29600 ] ||
    fail "concurrent runs used ports '$port_a' and '$port_b'"
for i in a b; do
    ! grep -q 'refused a connection\|HELLO.* refused' "$tmp/err-$i" ||
        fail "run $i: a stranger reached its rank 0: $(grep refused "$tmp/err-$i")"
    grep -q 'rendezvous: 3 ranks joined' "$tmp/err-$i" || fail "run $i: rank 0 did not admit its 3 ranks"
    [ "$(json "$tmp/c$i.json" '(r["verdict"]["exit_code"], r["collective"]["nranks"])')" = "(0, 3)" ] ||
        fail "run $i: report is not a 3-rank pass"
done
port=$(pf_free_port)
timeout -k 5 60 "$bin" local --ranks 2 --fabric-provider tcp --no-imds --port "$port" \
    --timeout 30 -e 64K --log-level info >"$tmp/out" 2>"$tmp/err" || fail "local --port $port exited $?"
grep -q "rendezvous on 127.0.0.1:$port" "$tmp/err" || fail "--port $port was not used"
echo "ok   two concurrent local runs: free ports $port_a and $port_b, both pass, no stranger; --port honoured"
