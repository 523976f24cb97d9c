#!/bin/bash
# Straggler localisation over a late link: `netem delay 50ms` on rank 2's
# interface (lib_straggler.sh), ports 36100-36109. The ring misses
# --min-busbw-gbps 0.03 (a healthy ring here reaches ~0.2 GB/s at 1 MiB);
# only rank 2 fails. Skipped when the kernel has no sch_netem.
set -u
. "$(cd "$(dirname "$0")" && pwd)/lib_straggler.sh"
sg_slow_link_case 36101 0.03 "netem delay 50ms" -b 1M -e 1M -n 2 -w 1
