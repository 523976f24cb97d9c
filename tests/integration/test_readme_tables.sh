#!/bin/bash
# The README's labels and RBAC tables are generated, like its config table:
# the labels from the agent's own table (agent/publish/node_build.c, which
# a unit test holds the Node patch to), the RBAC from the chart's render
# (real Helm: scripts/helm_tools.sh) with each rule's "# why:" comment. A
# label added in the code or a grant changed in the chart without the
# README fails here, and so does a rule with no reason given.
set -u
cd "$PF_ROOT" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml is not installed (make deps)"; exit 77; }
between() { sed -n "/<!-- $1-table/,/<!-- end $1-table/p" README.md | sed '1d;$d'; }

want=$(python3 scripts/readme_tables.py labels) || fail "readme_tables.py labels"
if [ "$want" != "$(between labels)" ]; then
    echo "FAIL README labels table is stale; regenerate: python3 scripts/readme_tables.py labels"
    diff <(echo "$want") <(between labels) | head -20; exit 1
fi
n=$(grep -c '^| `' <<<"$want")
[ "$n" -eq 8 ] || fail "the labels table has $n labels, the agent writes 8"
# The table names every label key the agent's patch code writes.
for k in $(grep -o 'add_label(labels, prefix, "[a-z-]*"' agent/publish/node_build.c | cut -d'"' -f2 | sort -u); do
    grep -q "^| \`$k\` |" <<<"$want" || fail "the agent writes $k, the labels table lacks it"
done
echo "ok   README labels table: the agent's $n labels"

. tests/integration/lib_helm.sh
helm_find || exit 77
render() {
    "$HELM" template efa-preflight "$1" --namespace efa-preflight \
        --set image.repository=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight
}
render charts/efa-preflight >"$tmp/r.yaml" || fail "chart render"
want=$(python3 scripts/readme_tables.py rbac "$tmp/r.yaml") || fail "readme_tables.py rbac: $want"
if [ "$want" != "$(between rbac)" ]; then
    echo "FAIL README RBAC table differs from the chart's grants; regenerate:"
    echo "  python3 scripts/readme_tables.py rbac <(helm template efa-preflight charts/efa-preflight ...)"
    diff <(echo "$want") <(between rbac) | head -20; exit 1
fi
echo "ok   README RBAC table: the chart's $(grep -c '^| [CR]' <<<"$want") grants"

# It can fail: a verb added in the chart, a rule without its reason.
cp -r charts/efa-preflight "$tmp/chart"
sed -i 's/verbs: \[patch\]/verbs: [patch, update]/' "$tmp/chart/templates/rbac.yaml"
render "$tmp/chart" >"$tmp/r2.yaml"
[ "$(python3 scripts/readme_tables.py rbac "$tmp/r2.yaml")" != "$(between rbac)" ] ||
    fail "a verb added to the chart left the table unchanged"
sed -i '0,/# why: the two conditions/{/# why: the two conditions/d}' "$tmp/chart/templates/rbac.yaml"
render "$tmp/chart" >"$tmp/r3.yaml"
out=$(python3 scripts/readme_tables.py rbac "$tmp/r3.yaml" 2>&1) && fail "a rule without a reason passed"
grep -q "has no '# why:' comment" <<<"$out" || fail "no 'has no # why' message: $out"
echo "ok   a grant changed in the chart, or given without a reason, is caught"
