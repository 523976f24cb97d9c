#!/bin/bash
# `efa-preflight node` on this very machine (no EFA, no GPU, no efa
# provider): a clear verdict and the documented exit code, never a crash.
#   default provider efa -> exit 1, NotAnEFAInstance (docs/reference/exit-codes.md)
#   --fabric-provider tcp -> exit 0, every EFA check skipped
set -u
for d in /sys/class/infiniband/*; do
    [ -e "$d/device/vendor" ] && [ "$(cat "$d/device/vendor")" = 0x1d0f ] &&
        { echo "this machine has EFA devices: the no-EFA expectations do not apply"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

"$PF_BIN" node --no-imds >"$tmp/table.txt" 2>"$tmp/err.txt"
rc=$?
cat "$tmp/table.txt"
if [ $rc = 1 ] && grep -q '^FAIL   instance_type      NotAnEFAInstance' "$tmp/table.txt" &&
   grep -q 'this is not an EFA node' "$tmp/table.txt" &&
   grep -q 'remedy: .*--fabric-provider tcp' "$tmp/table.txt" &&
   grep -q '^summary: FAIL NotAnEFAInstance' "$tmp/table.txt"; then
    echo "ok   default: exit 1, NotAnEFAInstance"
else
    echo "FAIL default run: exit $rc"; cat "$tmp/err.txt"; fails=$((fails + 1))
fi

"$PF_BIN" node --no-imds --json >"$tmp/out.json" 2>"$tmp/err.txt"
rc=$?
if [ $rc = 1 ] && python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"]["reason"] == "NotAnEFAInstance", d["verdict"]
assert d["node"]["efa"]["count"] == 0
# a missing library is a fact, not a crash
assert isinstance(d["node"]["cuda"]["loaded"], bool)
assert d["node"]["gpus"]["count"] == 0
assert d["node"]["libfabric"]["efa_domains"] == 0
PY
then
    echo "ok   --json: facts recorded"
else
    echo "FAIL --json run: exit $rc"; cat "$tmp/err.txt"; fails=$((fails + 1))
fi

"$PF_BIN" node --no-imds --fabric-provider tcp --json >"$tmp/tcp.json" 2>"$tmp/err.txt"
rc=$?
if [ $rc = 0 ] && python3 - "$tmp/tcp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"]["status"] == "pass", d["verdict"]
assert d["fabric_provider"]["fallback"] is True
efa = [c for c in d["checks"] if c["name"] != "gpu_count"]
assert all(c["status"] == "skip" and "provider tcp requested: EFA not required" in c["message"]
           for c in efa), efa
PY
then
    echo "ok   --fabric-provider tcp: exit 0, EFA checks skipped"
else
    echo "FAIL tcp run: exit $rc"; cat "$tmp/err.txt"; fails=$((fails + 1))
fi

[ $fails = 0 ] || exit 1
echo "node on this machine: as documented"
