#!/bin/bash
# The README's configuration table is exactly what the binary accepts.
set -u
cd "$PF_ROOT"
want=$(python3 scripts/config_table.py "$PF_BIN") || { echo "FAIL: config_table.py"; exit 1; }
have=$(sed -n '/<!-- config-table/,/<!-- end config-table/p' README.md | sed '1d;$d')
if [ "$want" != "$have" ]; then
    echo "FAIL: README configuration table is stale; regenerate with:"
    echo "  python3 scripts/config_table.py > /tmp/t && (edit README between the markers)"
    diff <(echo "$want") <(echo "$have") | head -20
    exit 1
fi
# The two set-up commands come first.
head -5 README.md | grep -q '^make run' || { echo "FAIL: README does not start with make run"; exit 1; }
head -5 README.md | grep -q '^make test' || { echo "FAIL: README does not start with make test"; exit 1; }
echo "ok: README lists all $(grep -c '^| `' <<<"$want") options and starts with make run / make test"
