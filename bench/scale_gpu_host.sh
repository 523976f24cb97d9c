#!/bin/bash
# The scale benchmark (bench/scale_netns) on the GPU machine's host, in one
# device call of under 10 minutes: that host has 16-32 cores and root but
# no ip/tc/nft and not all of the agent's libraries, so it uses what
# bench/scale_tools.sh put in .scale-tools (carry it: the agent binary,
# Debian's ip/tc/nft with their libraries, the agent's missing libraries,
# certificates for the fake API server).
#
# usage: bash bench/scale_gpu_host.sh "N..." RATE MODE "FAULTS..." [scale_netns options]
#   e.g. bash bench/scale_gpu_host.sh "128 256" 40mbit static "none slow:7,corrupt:6"
#   one row per N and fault spec (the namespaces of one N are built once);
#   rows that might not end within the call's budget are skipped, and said so
# env: OUT (results folder: scale.md, scale.d/ with every row's details,
#      host.txt, one log per N), BUDGET (seconds for the whole call, 560)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/pf-scale}
sizes=${1:-128}
rate=${2:-40mbit}
mode=${3:-static}
faults=${4:-none}
shift $(($# < 4 ? $# : 4))
budget=${BUDGET:-560}
tools=$root/.scale-tools
mkdir -p "$out"
[ -x "$tools/bin/ip" ] && [ -x "$tools/efa-preflight" ] ||
    { echo "no $tools: run bench/scale_tools.sh on the project machine and carry .scale-tools"; exit 2; }
{
    echo "host: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), kernel $(uname -r)"
    grep -m1 PRETTY_NAME /etc/os-release
    echo "agent: $(LD_LIBRARY_PATH="$("$tools/bin/agent-libs")" "$tools/efa-preflight" version 2>&1 | head -1), build $(cat "$tools/AGENT_BUILD" 2>/dev/null) (carried libraries in use: $(ls "$("$tools/bin/agent-libs")" | tr '\n' ' '))"
    echo "tcp_mem $(cat /proc/sys/net/ipv4/tcp_mem); somaxconn $(cat /proc/sys/net/core/somaxconn); gc_thresh3 $(cat /proc/sys/net/ipv4/neigh/default/gc_thresh3); pid_max $(cat /proc/sys/kernel/pid_max)"
} | tee -a "$out/host.txt"
start=$SECONDS
rc=0
for n in $sizes; do
    left=$((budget - (SECONDS - start)))
    [ "$left" -gt 150 ] || { echo "N=$n skipped: $left s left of $budget"; rc=1; continue; }
    # the harness tears down within the last 60 s; timeout ends it before
    # the device call's own limit whatever happens
    timeout -k 30 "$((left - 10))" bash "$root/bench/scale_netns" --n "$n" --rate "$rate" \
        --mode "$mode" --faults "$faults" --tools "$tools" --out "$out/scale.md" \
        --budget "$((left - 60))" "$@" > "$out/scale_netns-$n.log" 2>&1 || rc=1
    grep -v '^|' "$out/scale_netns-$n.log" | tail -n 8
done
echo
cat "$out/scale.md"
exit $rc
