#!/bin/bash
# Straggler localisation over a thin link: a token bucket (tbf, 100 Mbit/s
# = 0.0125 GB/s) on rank 2's interface (lib_straggler.sh), ports
# 36110-36119. The ring falls to about the thin link's rate, below
# --min-busbw-gbps 0.05 (a healthy ring here reaches ~0.2 GB/s at 4 MiB);
# only rank 2 fails.
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib_straggler.sh"
sg_slow_link_case 36111 0.05 "tbf rate 100mbit burst 64kb latency 200ms" \
    -b 1M -e 4M -n 2 -w 1
