#!/bin/bash
# Benchmark: the rendezvous at scale on this machine. Rank 0 is the
# agent's own code (build/bench/rdv_sim root); the other WORLD-1 ranks are
# simulated by PROCS processes of epoll-driven sockets (rdv_sim peers), all
# on 127.0.0.1, with an HMAC secret as in Kubernetes mode. Per size it
# prints the median of RUNS runs of:
#   time to peer table   from the peer processes' start to the last peer
#                        holding its table (CLOCK_MONOTONIC)
#   rank 0 CPU           user + system, getrusage of the whole process
#   rank 0 peak RSS      ru_maxrss of the whole process
#   bench/scale_rendezvous.sh [RUNS]    (default 3)
#   env: BUILD=build SIZES="256 1024 4096" PROCS=2 NOSECRET=1 (unsigned)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
BUILD=${BUILD:-build}
runs=${1:-3}
sizes=${SIZES:-256 1024 4096}
procs=${PROCS:-2}
secret=$([ -n "${NOSECRET:-}" ] || echo "bench-secret-0123456789abcdef")
sim=$BUILD/bench/rdv_sim
make --no-print-directory BUILD="$BUILD" "$sim" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=34900

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)  ($(nproc) CPUs, RLIMIT_NOFILE $(ulimit -Hn))"
for n in $sizes; do
    for ((run = 1; run <= runs; run++)); do
        port=$((port + 1))
        out=$tmp/$n-$run
        mkdir -p "$out"
        timeout 90 "$sim" root "$n" "$port" $secret >"$out/root" 2>"$out/root.err" &
        rpid=$!
        sleep 0.3              # rank 0 listening; peers retry anyway
        per=$(((n - 1) / procs))
        first=1
        pids=""
        for ((p = 0; p < procs; p++)); do
            count=$per
            [ $p -eq $((procs - 1)) ] && count=$((n - first))
            timeout 90 "$sim" peers "$first" "$count" "$n" "$port" $secret \
                >"$out/peers$p" 2>&1 &
            pids="$pids $!"
            first=$((first + count))
        done
        for p in $pids; do wait "$p" || true; done
        wait "$rpid" || { cat "$out/root.err"; echo "rank 0 failed at $n ranks"; exit 1; }
    done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$tmp" "$runs" "$sizes" "${secret:+HMAC}" <<'PY'
import re, statistics, sys, os
tmp, runs, sizes, hmac = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4] or "none"
def kv(line):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", line)}
print()
print("| ranks | HMAC | time to peer table, median (min-max) | rank 0 CPU | rank 0 peak RSS | failed peers |")
print("|---:|---|---|---:|---:|---:|")
for n in sizes:
    t, cpu, rss, failed = [], [], [], 0
    for run in range(1, runs + 1):
        d = os.path.join(tmp, "%s-%d" % (n, run))
        r = kv(open(os.path.join(d, "root")).read())
        peers = [kv(open(os.path.join(d, f)).read()) for f in sorted(os.listdir(d)) if f.startswith("peers")]
        t.append(max(p["done_ms"] for p in peers) - min(p["start_ms"] for p in peers))
        failed += sum(p["failed"] for p in peers)
        cpu.append(r["cpu_ms"])
        rss.append(r["maxrss_kib"] / 1024.0)
    print("| %s | %s | %d ms (%d-%d) | %d ms | %.1f MiB | %d |" % (
        n, hmac, statistics.median(t), min(t), max(t), statistics.median(cpu),
        statistics.median(rss), failed))
PY
