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
# The catalog override example does what its comments say: the 8-node
# point of p5.48xlarge's floor curve changed and a 64-node point added, the
# other points and everything else of the entry kept, p9 added.
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
python3 - README.md "$t/override.yaml" <<'EOF2' || { echo "FAIL: no catalog override example in README"; exit 1; }
import re, sys
blocks = re.findall(r"```yaml\n(.*?)```", open(sys.argv[1]).read(), re.S)
ex = [b for b in blocks if "p9.48xlarge" in b and "instances:" in b]
sys.exit(1) if not ex else open(sys.argv[2], "w").write(ex[0])
EOF2
entry() { awk -v e="  $1:" '$0 == e {on = 1; next} /^  [^ ]/ {on = 0} on'; }
base=$("$PF_BIN" catalog | entry p5.48xlarge)
over=$("$PF_BIN" catalog --catalog "$t/override.yaml") || {
    echo "FAIL: the README's catalog example is refused"; exit 1; }
# Everything but the floors is kept; the floors are the example's.
if [ "$(grep -v '^      ' <<<"$base")" != "$(entry p5.48xlarge <<<"$over" | grep -v '^      ')" ]; then
    echo "FAIL: the README's catalog example changes more of p5.48xlarge than its floors:"
    diff <(grep -v '^      ' <<<"$base") <(entry p5.48xlarge <<<"$over" | grep -v '^      ')
    exit 1
fi
floors=$(entry p5.48xlarge <<<"$over" | grep '^      ')
basefl=$(grep '^      ' <<<"$base")
grep -q '^      8: {busbw_gbps: 240, from_bytes: 1073741824, ' <<<"$floors" &&
    grep -q '^      64: {busbw_gbps: 180, from_bytes: 0, ' <<<"$floors" || {
    echo "FAIL: the README's catalog example does not give the floors it says: $floors"; exit 1; }
# every other point as it was
[ "$(grep -vE '^      (8|64): ' <<<"$floors")" = "$(grep -v '^      8: ' <<<"$basefl")" ] || {
    echo "FAIL: the README's catalog example changes other points:"
    diff <(grep -v '^      8: ' <<<"$basefl") <(grep -vE '^      (8|64): ' <<<"$floors"); exit 1; }
# and the effective floors follow
"$PF_BIN" catalog --json --catalog "$t/override.yaml" | python3 -c '
import json, sys
p5 = next(i for i in json.load(sys.stdin)["instances"] if i["name"] == "p5.48xlarge")
eff = {e["nodes"]: e["busbw_gbps"] for e in p5["effective_floors"]}
assert eff[2] == 250 and eff[8] == 240 and eff[1024] == 50, eff
' || { echo "FAIL: catalog --json does not carry the example's curve"; exit 1; }
entry p9.48xlarge <<<"$over" | grep -qx '    efa: 64' || {
    echo "FAIL: the README's catalog example does not add p9.48xlarge"; exit 1; }
# Every relative link of the operator docs leads somewhere: a file of the
# repository, or a heading of the page for a #fragment.
python3 - README.md docs/*.md charts/efa-preflight/README.md <<'EOF2' || exit 1
import os, re, sys
def anchors(path):
    out = set()
    for line in open(path):
        m = re.match(r"#+\s+(.*)", line)
        if m:
            t = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(t.replace(" ", "-"))
    return out
bad = 0
for page in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            print("FAIL: %s links to %s, which does not exist" % (page, target)); bad += 1
        elif frag and dest.endswith(".md") and frag not in anchors(dest):
            print("FAIL: %s links to %s, which has no heading #%s" % (page, target, frag)); bad += 1
sys.exit(1 if bad else 0)
EOF2
# Every reason the operator docs name (a `CamelCase` word) is one the agent
# emits, so a filter on a condition or Event reason copied from them
# matches; HyperPod's own label values are the only other such words.
hyperpod='^(InProgress|UnschedulablePendingReboot|UnschedulablePendingReplacement)$'
grep -rhoE '"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*"' "$PF_ROOT/agent" --include='*.c' \
    --include='*.h' | tr -d '"' | sort -u >"$t/emitted"
unknown=$(grep -ohE '`[A-Z][a-z0-9]+([A-Z][A-Za-z0-9]*)+`' README.md \
              charts/efa-preflight/README.md docs/report-schema.md | tr -d '`' |
          sort -u | grep -vE "$hyperpod" | comm -23 - "$t/emitted")
if [ -n "$unknown" ]; then
    echo "FAIL: the docs name reasons the agent never emits: $unknown"; exit 1
fi
echo "ok: the README's catalog example changes one point and adds one, the curve follows"
echo "ok: README lists all $(grep -c '^| `' <<<"$want") options and starts with make run / make test"
