#!/bin/bash
# Host engine over the shm provider: 2 ranks pass with 0 wrong up to 16 MiB
# (several pipelined chunks per ring step). Ports from the kernel
# (lib_port.sh).
. "$(dirname "$0")/lib_test.sh"

fi_info -p shm -t FI_EP_RDM >/dev/null 2>&1 ||
    { echo "libfabric has no shm provider on this machine"; exit 77; }
pf_local 0 "local --ranks 2 over shm" --ranks 2 --fabric-provider shm --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 1K -e 16M -f 4 -n 3 -w 1 \
    --report "$tmp/r.json"
got=$(json "$tmp/r.json" '(r["verdict"]["exit_code"], r["verdict"]["reason"], r["collective"]["engine"], r["collective"]["provider"], r["collective"]["nranks"], r["collective"]["wrong_total"], len(r["collective"]["rows"]))')
[ "$got" = "(0, 'ProviderFallback', 'host', 'shm', 2, 0, 8)" ] ||
    fail "report (exit, reason, engine, provider, nranks, wrong, rows) = $got"
echo "ok   2 ranks over shm: 8 sizes to 16 MiB, 0 wrong"
