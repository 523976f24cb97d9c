#!/bin/bash
# Host engine over the shm provider: 2 ranks pass with 0 wrong up to 16 MiB
# (several pipelined chunks per ring step). Ports from the kernel
# (lib_port.sh).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/${BUILD:-build}/efa-preflight}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; tail -n 20 "$tmp/err" 2>/dev/null; exit 1; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
. "$root/tests/integration/lib_port.sh"

fi_info -p shm -t FI_EP_RDM >/dev/null 2>&1 ||
    { echo "libfabric has no shm provider on this machine"; exit 77; }
timeout -k 5 60 "$bin" local --ranks 2 --fabric-provider shm --no-imds \
    --port "$(pf_free_port)" --timeout 45 -b 1K -e 16M -f 4 -n 3 -w 1 \
    --report "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "local --ranks 2 over shm exited $rc"
got=$(json "$tmp/r.json" '(r["verdict"]["exit_code"], r["verdict"]["reason"], r["collective"]["engine"], r["collective"]["provider"], r["collective"]["nranks"], r["collective"]["wrong_total"], len(r["collective"]["rows"]))')
[ "$got" = "(0, 'ProviderFallback', 'host', 'shm', 2, 0, 8)" ] ||
    fail "report (exit, reason, engine, provider, nranks, wrong, rows) = $got"
echo "ok   2 ranks over shm: 8 sizes to 16 MiB, 0 wrong"
