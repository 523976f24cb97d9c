#!/bin/bash
# The agent must start where NCCL, CUDA and libfabric are absent: none of
# them may be a link-time dependency (they are dlopened). libmicrohttpd (and
# GnuTLS under it) is, in the default build: the webhook's and the monitor's
# server.
set -u
command -v readelf >/dev/null || { echo "readelf not installed (binutils)"; exit 77; }
needed=$(readelf -d "$PF_BIN" | awk '/\(NEEDED\)/ { gsub(/[][]/, "", $5); print $5 }')
echo "NEEDED:"; echo "$needed" | sed 's/^/  /'
[ -n "$needed" ] || { echo "FAIL: no NEEDED entries read from $PF_BIN"; exit 1; }
bad=$(echo "$needed" | grep -Ei 'nccl|cuda|cudart|fabric' || true)
if [ -n "$bad" ]; then
    echo "FAIL: linked against: $bad"
    exit 1
fi
# The embedded HTTP(S) server (webhook, monitor) is linked, not dlopened:
# a default build that lost it (the PF_HTTPD=0 stub) could not serve.
if strings "$PF_BIN" | grep -q 'built with PF_HTTPD=0'; then
    echo "note: built with PF_HTTPD=0 (no HTTP server): libmicrohttpd not expected"
else
    echo "$needed" | grep -q '^libmicrohttpd\.so' ||
        { echo "FAIL: libmicrohttpd not in NEEDED: the HTTP server is missing"; exit 1; }
fi
# and the probe resolves them at run time instead
for sym in dlopen; do
    readelf -W --dyn-syms "$PF_BIN" | grep -q " $sym" ||
        { echo "FAIL: $sym not imported"; exit 1; }
done
echo "no NCCL, CUDA or libfabric library in NEEDED"
