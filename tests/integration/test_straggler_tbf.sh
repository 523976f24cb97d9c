#!/bin/bash
# Straggler localisation over a thin link: a token bucket (tbf, 20 Mbit/s
# = 0.0025 GB/s) on rank 2's interface (lib_straggler.sh), ports
# 36110-36119. The ring falls to about the thin link's rate, below
# --min-busbw-gbps 0.008; healthy rings and links stay above it with room
# (0.2 GB/s at 4 MiB here, 0.018 at worst under ASan on a busy CI machine);
# only rank 2 fails.
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib_straggler.sh"
sg_slow_link_case 36111 0.008 "tbf rate 20mbit burst 32kb latency 400ms" \
    -b 1M -e 4M -n 2 -w 1
