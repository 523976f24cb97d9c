#!/bin/bash
# The configuration table (docs/reference/configuration.md) is exactly
# what the binary accepts; the README shows the two set-up commands; the
# catalog override example (docs/reference/catalog.md) does what it says;
# the docs name no reason the agent never emits.
set -u
cd "$PF_ROOT"
cfg=docs/reference/configuration.md
want=$(python3 scripts/config_table.py "$PF_BIN") || { echo "FAIL: config_table.py"; exit 1; }
have=$(sed -n '/<!-- config-table/,/<!-- end config-table/p' "$cfg" | sed '1d;$d')
if [ "$want" != "$have" ]; then
    echo "FAIL: $cfg's table is stale; regenerate with:"
    echo "  python3 scripts/config_table.py > /tmp/t && (edit $cfg between the markers)"
    diff <(echo "$want") <(echo "$have") | head -20
    exit 1
fi
# The two set-up commands are in the README, as the commands they are, and
# both are targets of the Makefile.
for c in run test; do
    sed -n '/^```sh$/,/^```$/p' README.md | grep -q "^make $c " ||
        { echo "FAIL: the README does not show make $c in a sh block"; exit 1; }
    grep -q "^$c:" Makefile || { echo "FAIL: the README's make $c is no Makefile target"; exit 1; }
done
# The catalog override example does what its comments say: the 8-node
# point of p5.48xlarge's floor curve changed and a 64-node point added, the
# other points and everything else of the entry kept, p9 added.
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
python3 - docs/reference/catalog.md "$t/override.yaml" <<'EOF2' || { echo "FAIL: no catalog override example in docs/reference/catalog.md"; exit 1; }
import re, sys
blocks = re.findall(r"```yaml\n(.*?)```", open(sys.argv[1]).read(), re.S)
ex = [b for b in blocks if "p9.48xlarge" in b and "instances:" in b]
sys.exit(1) if not ex else open(sys.argv[2], "w").write(ex[0])
EOF2
entry() { awk -v e="  $1:" '$0 == e {on = 1; next} /^  [^ ]/ {on = 0} on'; }
base=$("$PF_BIN" catalog | entry p5.48xlarge)
over=$("$PF_BIN" catalog --catalog "$t/override.yaml") || {
    echo "FAIL: the catalog example is refused"; exit 1; }
# Everything but the floors is kept; the floors are the example's.
if [ "$(grep -v '^      ' <<<"$base")" != "$(entry p5.48xlarge <<<"$over" | grep -v '^      ')" ]; then
    echo "FAIL: the catalog example changes more of p5.48xlarge than its floors:"
    diff <(grep -v '^      ' <<<"$base") <(entry p5.48xlarge <<<"$over" | grep -v '^      ')
    exit 1
fi
floors=$(entry p5.48xlarge <<<"$over" | grep '^      ')
basefl=$(grep '^      ' <<<"$base")
grep -q '^      8: {busbw_gbps: 240, from_bytes: 1073741824, ' <<<"$floors" &&
    grep -q '^      64: {busbw_gbps: 180, from_bytes: 0, ' <<<"$floors" || {
    echo "FAIL: the catalog example does not give the floors it says: $floors"; exit 1; }
# every other point as it was
[ "$(grep -vE '^      (8|64): ' <<<"$floors")" = "$(grep -v '^      8: ' <<<"$basefl")" ] || {
    echo "FAIL: the catalog example changes other points:"
    diff <(grep -v '^      8: ' <<<"$basefl") <(grep -vE '^      (8|64): ' <<<"$floors"); exit 1; }
# and the effective floors follow
"$PF_BIN" catalog --json --catalog "$t/override.yaml" | python3 -c '
import json, sys
p5 = next(i for i in json.load(sys.stdin)["instances"] if i["name"] == "p5.48xlarge")
eff = {e["nodes"]: e["busbw_gbps"] for e in p5["effective_floors"]}
assert eff[2] == 250 and eff[8] == 240 and eff[1024] == 50, eff
' || { echo "FAIL: catalog --json does not carry the example's curve"; exit 1; }
entry p9.48xlarge <<<"$over" | grep -qx '    efa: 64' || {
    echo "FAIL: the catalog example does not add p9.48xlarge"; exit 1; }
# Every reason the operator docs name (a `CamelCase` word) is one the agent
# emits, so a filter on a condition or Event reason copied from them
# matches; HyperPod's own label values, a hostPath type, a Kubernetes
# kind the chart renders (ValidatingAdmissionPolicy) and two kernel names
# the scale harness reads (/proc's VmHWM and TcpExt) are the only other
# such words. The chart's values page (docs/reference/values.md,
# generated) lists Kubernetes' own enums (IfNeeded, ClusterIssuer), no
# reasons: it is left out.
hyperpod='^(InProgress|UnschedulablePendingReboot|UnschedulablePendingReplacement|DirectoryOrCreate|ValidatingAdmissionPolicy|VmHWM|TcpExt)$'
grep -rhoE '"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*"' "$PF_ROOT/agent" --include='*.c' \
    --include='*.h' | tr -d '"' | sort -u >"$t/emitted"
unknown=$(grep -ohE '`[A-Z][a-z0-9]+([A-Z][A-Za-z0-9]*)+`' README.md \
              charts/efa-preflight/README.md $(find docs -name '*.md' ! -path docs/reference/values.md) | tr -d '`' |
          sort -u | grep -vE "$hyperpod" | comm -23 - "$t/emitted")
if [ -n "$unknown" ]; then
    echo "FAIL: the docs name reasons the agent never emits: $unknown"; exit 1
fi
echo "ok: the catalog example changes one point and adds one, the curve follows"
echo "ok: $cfg lists all $(grep -c '^| `' <<<"$want") options; the README shows make run / make test"
