#!/bin/bash
# docs/diagnosis.md and the agent's one reason table agree:
#  - the generated table in the doc is what `efa-preflight reasons
#    --markdown` prints;
#  - every reason of the table has a section (### heading) or a row of the
#    pass/skip table, and every reason documented is in the table;
#  - every reason of the table is emitted somewhere in agent/ (PF_R_<word>
#    outside reasons.c), and no reason word is written as a string literal
#    outside agent/reasons.c (a reason belongs to the one table).
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${PF_BIN:-$root/build/efa-preflight}
doc="$root/docs/diagnosis.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" reasons --json >"$tmp/table.json" || fail "reasons --json failed"
python3 -c 'import json,sys; [print(r["reason"]) for r in json.load(open(sys.argv[1]))]' \
    "$tmp/table.json" | sort >"$tmp/table"
n=$(wc -l <"$tmp/table")
[ "$n" -gt 40 ] || fail "the table lists only $n reasons"

# 1. The generated block.
sed -n '/^<!-- reasons:begin/,/^<!-- reasons:end/p' "$doc" | sed '1d;$d' >"$tmp/block"
"$bin" reasons --markdown >"$tmp/generated"
if ! diff -u "$tmp/generated" "$tmp/block" >"$tmp/diff"; then
    cat "$tmp/diff"
    fail "docs/diagnosis.md's reason table is stale: regenerate it with scripts/gen_reason_doc.sh"
fi

# 2. Documented outside the generated block.
doc_reasons() {
    sed '/^<!-- reasons:begin/,/^<!-- reasons:end/d' "$1" >"$tmp/prose"
    { sed -n 's/^### `\([A-Za-z0-9]*\)`.*/\1/p' "$tmp/prose"
      sed -n 's/^| `\([A-Za-z0-9]*\)` |.*/\1/p' "$tmp/prose"; } | sort -u
}
compare() {
    local table=$1 documented=$2 bad=0
    for r in $(comm -23 "$table" "$documented"); do
        echo "in the reason table but not in docs/diagnosis.md: $r"; bad=1
    done
    for r in $(comm -13 "$table" "$documented"); do
        echo "documented but not in the reason table: $r"; bad=1
    done
    return $bad
}
doc_reasons "$doc" >"$tmp/documented"
# The comparison must be able to fail, both ways.
grep -v '^### `PeerLost`' "$doc" >"$tmp/short.md"
echo '### `NoSuchReason`' >>"$tmp/short.md"
doc_reasons "$tmp/short.md" >"$tmp/short"
out=$(compare "$tmp/table" "$tmp/short")
if [ $? -eq 0 ] || ! grep -q 'not in docs/diagnosis.md: PeerLost' <<<"$out" ||
   ! grep -q 'not in the reason table: NoSuchReason' <<<"$out"; then
    fail "the comparison did not catch a doctored doc: $out"
fi
compare "$tmp/table" "$tmp/documented" || fail "docs/diagnosis.md and the reason table disagree"

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
    grep -q 'security group without' "$doc" ||
    fail "security-group hint missing in the agent or the doc"
echo "PASS: all $n reasons documented, the generated table current, none extra"
