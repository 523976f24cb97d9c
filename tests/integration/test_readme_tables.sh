#!/bin/bash
# The labels, RBAC and catalog tables of docs/reference/ are generated,
# like the config table (the catalog's floor points from the binary's
# embedded catalog):
# the labels from the agent's own table (agent/publish/node_build.c, which
# a unit test holds the Node patch to), the RBAC from the chart's render
# (real Helm: scripts/helm_tools.sh) with each rule's "# why:" comment. A
# label added in the code or a grant changed in the chart without the
# docs fails here, and so does a rule with no reason given.
set -u
cd "$PF_ROOT" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml is not installed (make deps)"; exit 77; }
# between NAME PAGE: the generated block of that page.
between() { sed -n "/<!-- $1-table/,/<!-- end $1-table/p" "docs/reference/$2" | sed '1d;$d'; }

want=$(python3 scripts/readme_tables.py labels) || fail "readme_tables.py labels"
if [ "$want" != "$(between labels labels.md)" ]; then
    echo "FAIL docs/reference/labels.md's table is stale; regenerate: python3 scripts/readme_tables.py labels"
    diff <(echo "$want") <(between labels labels.md) | head -20; exit 1
fi
n=$(grep -c '^| `' <<<"$want")
[ "$n" -eq 8 ] || fail "the labels table has $n labels, the agent writes 8"
# The table names every label key the agent's patch code writes.
for k in $(grep -o 'add_label(labels, prefix, "[a-z-]*"' agent/publish/node_build.c | cut -d'"' -f2 | sort -u); do
    grep -q "^| \`$k\` |" <<<"$want" || fail "the agent writes $k, the labels table lacks it"
done
echo "ok   docs/reference/labels.md: the agent's $n labels"

# The catalog's floor points, from the binary's own catalog.
want=$(python3 scripts/readme_tables.py catalog "$PF_BIN") || fail "readme_tables.py catalog"
if [ "$want" != "$(between catalog catalog.md)" ]; then
    echo "FAIL docs/reference/catalog.md's table is stale; regenerate: python3 scripts/readme_tables.py catalog build/efa-preflight"
    diff <(echo "$want") <(between catalog catalog.md) | head -20; exit 1
fi
n=$("$PF_BIN" catalog --json | python3 -c 'import json,sys; print(sum(len(i["floors"]) + len(i["host_floors"]) for i in json.load(sys.stdin)["instances"]))')
[ "$(grep -c '^| [a-z0-9*.-]* | [0-9]' <<<"$want")" -eq "$n" ] || fail "the catalog table does not have the catalog's $n points"
echo "ok   docs/reference/catalog.md: the catalog's $n floor points with their sources"

. tests/integration/lib_helm.sh
helm_find || exit 77
render() {
    "$HELM" template efa-preflight "$1" --namespace efa-preflight \
        --set image.repository=123456789012.dkr.ecr.us-west-2.amazonaws.com/efa-preflight
}
render charts/efa-preflight >"$tmp/r.yaml" || fail "chart render"
want=$(python3 scripts/readme_tables.py rbac "$tmp/r.yaml") || fail "readme_tables.py rbac: $want"
if [ "$want" != "$(between rbac rbac.md)" ]; then
    echo "FAIL docs/reference/rbac.md differs from the chart's grants; regenerate:"
    echo "  python3 scripts/readme_tables.py rbac <(helm template efa-preflight charts/efa-preflight ...)"
    diff <(echo "$want") <(between rbac rbac.md) | head -20; exit 1
fi
echo "ok   docs/reference/rbac.md: the chart's $(grep -c '^| [CR]' <<<"$want") grants"

# It can fail: a verb added in the chart, a rule without its reason.
cp -r charts/efa-preflight "$tmp/chart"
sed -i 's/verbs: \[patch\]/verbs: [patch, update]/' "$tmp/chart/templates/rbac.yaml"
render "$tmp/chart" >"$tmp/r2.yaml"
[ "$(python3 scripts/readme_tables.py rbac "$tmp/r2.yaml")" != "$(between rbac rbac.md)" ] ||
    fail "a verb added to the chart left the table unchanged"
sed -i '0,/# why: the two conditions/{/# why: the two conditions/d}' "$tmp/chart/templates/rbac.yaml"
render "$tmp/chart" >"$tmp/r3.yaml"
out=$(python3 scripts/readme_tables.py rbac "$tmp/r3.yaml" 2>&1) && fail "a rule without a reason passed"
grep -q "has no '# why:' comment" <<<"$out" || fail "no 'has no # why' message: $out"
echo "ok   a grant changed in the chart, or given without a reason, is caught"
