#!/bin/bash
# The diagnosis pages and the agent's one reason table agree:
#  - the generated table of docs/reference/reasons.md is what
#    `efa-preflight reasons --markdown` prints;
#  - every reason of the table has a section (### heading) on the page of
#    its class under docs/operate/diagnosis/ (warn: warnings.md), or, for a
#    pass/skip reason, a row of the pass/skip table; every reason
#    documented is in the table;
#  - every reason of the table is emitted somewhere in agent/ (PF_R_<word>
#    outside reasons.c), and no reason word is written as a string literal
#    outside agent/reasons.c (a reason belongs to the one table).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/build/efa-preflight}
ref="$root/docs/reference/reasons.md"
diag="$root/docs/operate/diagnosis"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" reasons --json >"$tmp/table.json" || fail "reasons --json failed"
python3 -c 'import json,sys; [print(r["reason"], r["class"]) for r in json.load(open(sys.argv[1]))]' \
    "$tmp/table.json" | sort >"$tmp/classes"
cut -d' ' -f1 "$tmp/classes" >"$tmp/table"
n=$(wc -l <"$tmp/table")
[ "$n" -gt 40 ] || fail "the table lists only $n reasons"

# 1. The generated block.
sed -n '/^<!-- reasons:begin/,/^<!-- reasons:end/p' "$ref" | sed '1d;$d' >"$tmp/block"
"$bin" reasons --markdown >"$tmp/generated"
if ! diff -u "$tmp/generated" "$tmp/block" >"$tmp/diff"; then
    cat "$tmp/diff"
    fail "docs/reference/reasons.md's reason table is stale: regenerate it with scripts/gen_reason_doc.sh"
fi

# 2. Documented outside the generated block: "REASON PAGE" for every
#    section of DIR's pages, "REASON ref" for every row of the reference's
#    pass/skip table.
documented() {
    local dir=$1 f
    for f in "$dir"/*.md; do
        sed -n "s/^### \`\([A-Za-z0-9]*\)\`.*/\1 $(basename "$f" .md)/p" "$f"
    done
    sed '/^<!-- reasons:begin/,/^<!-- reasons:end/d' "$ref" |
        sed -n 's/^| `\([A-Za-z0-9]*\)` |.*/\1 ref/p'
}
# The page a class's reasons belong on.
page_of() { case $1 in warn) echo warnings ;; ok) echo ref ;; *) echo "$1" ;; esac; }
compare() {
    local dir=$1 bad=0 r c p where
    documented "$dir" | sort -u >"$tmp/documented"
    cut -d' ' -f1 "$tmp/documented" | sort -u >"$tmp/documented.words"
    for r in $(comm -23 "$tmp/table" "$tmp/documented.words"); do
        echo "in the reason table but not documented: $r (add a section to docs/operate/diagnosis/$(page_of "$(grep "^$r " "$tmp/classes" | cut -d' ' -f2)").md)"; bad=1
    done
    for r in $(comm -13 "$tmp/table" "$tmp/documented.words"); do
        echo "documented but not in the reason table: $r"; bad=1
    done
    while read -r r c; do
        p=$(page_of "$c")
        [ "$p" = ref ] && continue
        where=$(grep "^$r " "$tmp/documented" | cut -d' ' -f2 | grep -v '^ref$' | tr '\n' ' ')
        [ -z "$where" ] && continue
        [ "$where" = "$p " ] ||
            { echo "$r (class $c) belongs on docs/operate/diagnosis/$p.md, not: $where"; bad=1; }
    done <"$tmp/classes"
    return $bad
}
# The comparison must be able to fail: a section missing, one too many, one
# on the wrong class's page.
cp -r "$diag" "$tmp/short"
sed -i '/^### `PeerLost`/d' "$tmp/short/infrastructure.md"
echo '### `NoSuchReason`' >>"$tmp/short/node.md"
grep -A3 '^### `SlowPeer`' "$diag/peer.md" >>"$tmp/short/node.md"
out=$(compare "$tmp/short")
if [ $? -eq 0 ] || ! grep -q 'not documented: PeerLost' <<<"$out" ||
   ! grep -q 'not in the reason table: NoSuchReason' <<<"$out" ||
   ! grep -q 'SlowPeer (class peer) belongs on docs/operate/diagnosis/peer.md' <<<"$out"; then
    fail "the comparison did not catch a doctored doc: $out"
fi
compare "$diag" || fail "the diagnosis pages and the reason table disagree"

# 3. The sources: every row is used, no word is written outside the table.
for r in $(cat "$tmp/table"); do
    grep -rqw --include='*.c' --exclude=reasons.c "PF_R_$r" "$root/agent" ||
        fail "reason $r is in the table but agent/ never emits it"
    hits=$(grep -rn --include='*.c' --include='*.h' --exclude=reasons.c "\"$r\"" "$root/agent")
    [ -z "$hits" ] || fail "reason word written outside agent/reasons.c: $hits"
done

# The reasons the product promises are among them.
for r in EFADeviceCountMismatch EFAModuleNotLoaded EFADeviceFilesMissing \
         EFAProviderUnavailable MemlockTooLow HugePagesUnavailable \
         LibfabricTooOld NetPluginMissing SocketFallback GDRDisabled \
         PeerTimeout PeerLost PeerRejected BandwidthBelowThreshold \
         DataCorruption APIUnavailable Forbidden RendezvousPortInUse; do
    grep -qx "$r" "$tmp/table" || fail "the table has no $r"
done
# The security-group hint is documented where the agent gives it.
grep -q 'security group without' "$root/agent/collective/host/host_ep.c" &&
    cat "$diag"/*.md | grep -q 'security group without' ||
    fail "security-group hint missing in the agent or the doc"
echo "PASS: all $n reasons documented, each on its class's page, the generated table current, none extra"
