#!/bin/bash
# docs/reference/values.md is the chart's values table, generated from
# values.yaml and values.schema.json (scripts/values_table.py): current, and
# the generator refuses a value without a comment, a value the schema does
# not know and a schema key values.yaml lacks.
set -u
cd "${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}" || exit 1
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml is not installed (make deps)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }

python3 scripts/values_table.py --check || fail "regenerate: python3 scripts/values_table.py --write"
n=$(grep -c '^| `' docs/reference/values.md)
[ "$n" -ge 150 ] || fail "the table has $n values"
for k in global commonLabels extraEnv webhook.namespaceSelector webhook.certGen.image.digest \
         prometheusRule.rules.EFAPreflightFailed.for image.agentDigest tests.enabled; do
    grep -q "^| \`$k\` |" docs/reference/values.md || fail "the table lacks $k"
done
echo "ok   docs/reference/values.md is current ($n values)"

mkdir -p "$tmp/scripts" "$tmp/charts" "$tmp/docs/reference"
cp scripts/values_table.py "$tmp/scripts/"
cp -r charts/efa-preflight "$tmp/charts/"
cp docs/reference/values.md "$tmp/docs/reference/"
v=$tmp/charts/efa-preflight/values.yaml
sed -i 's/^validHours: 24$/validHours: 48/' "$v"
python3 "$tmp/scripts/values_table.py" --check >"$tmp/out" 2>&1 && fail "a changed default left the page current"
grep -q "docs/reference/values.md is stale" "$tmp/out" || fail "no 'stale': $(cat "$tmp/out")"
printf 'newKnob: 1\n' >>"$v"
python3 "$tmp/scripts/values_table.py" >"$tmp/out" 2>&1 && fail "a value the schema does not know passed"
grep -q "newKnob is in values.yaml but not in values.schema.json" "$tmp/out" || fail "$(cat "$tmp/out")"
python3 - "$tmp/charts/efa-preflight/values.schema.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["properties"]["newKnob"] = {"type": "integer"}
s["properties"]["webhook"]["required"].append("ghost")
s["properties"]["webhook"]["properties"]["ghost"] = {"type": "string"}
json.dump(s, open(sys.argv[1], "w"))
PY
python3 "$tmp/scripts/values_table.py" >"$tmp/out" 2>&1 && fail "an undocumented value passed"
grep -q "newKnob has no comment in values.yaml" "$tmp/out" && grep -q "webhook.ghost is required by the schema but not in values.yaml" "$tmp/out" \
    || fail "$(cat "$tmp/out")"
echo "ok   the generator refuses a stale page, an unknown value, an uncommented one and a schema key values.yaml lacks"
