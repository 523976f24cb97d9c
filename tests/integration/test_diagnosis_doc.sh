#!/bin/bash
# docs/diagnosis.md and the agent agree: every reason string the agent can
# emit is documented, and every reason documented is one the agent emits.
# Reasons are the CamelCase string literals in agent/ (minus the words
# below, which are Kubernetes vocabulary, not reasons); documented reasons
# are the "### `Name`" headings and the first column of the table of pass,
# skip and condition reasons.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
doc="$root/docs/diagnosis.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Literals that are not reasons: condition types, taint effect, pod phases,
# condition statuses, Event types and kinds, a /proc/meminfo key, the DMI
# vendor string.
not_reasons='^(EFADevicesReady|EFAFabricReady|NoSchedule|Pending|Failed|Succeeded|True|False|Unknown|Normal|Warning|Event|Node|Job|Kubernetes|Hugepagesize|Amazon)$'

agent_reasons() {
    grep -rhoE '"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*"' "$1" \
        --include='*.c' --include='*.h' | tr -d '"' |
        grep -vE "$not_reasons" | sort -u
}

doc_reasons() {
    { sed -n 's/^### `\([A-Za-z0-9]*\)`.*/\1/p' "$1"
      sed -n 's/^| `\([A-Za-z0-9]*\)` |.*/\1/p' "$1"; } | sort -u
}

# Prints what differs; exit 1 when anything does.
compare() {
    local emitted=$1 documented=$2 bad=0
    for r in $(comm -23 "$emitted" "$documented"); do
        echo "emitted by the agent but not in docs/diagnosis.md: $r"; bad=1
    done
    for r in $(comm -13 "$emitted" "$documented"); do
        echo "documented but never emitted by agent/: $r"; bad=1
    done
    return $bad
}

agent_reasons "$root/agent" >"$tmp/emitted"
doc_reasons "$doc" >"$tmp/documented"
n=$(wc -l <"$tmp/emitted")
echo "agent emits $n reasons; docs/diagnosis.md documents $(wc -l <"$tmp/documented")"

# The comparison must be able to fail: a doc missing one reason and naming
# one that does not exist is caught, both ways.
grep -v '^### `PeerLost`' "$doc" >"$tmp/short.md"
echo '### `NoSuchReason`' >>"$tmp/short.md"
doc_reasons "$tmp/short.md" >"$tmp/short"
out=$(compare "$tmp/emitted" "$tmp/short")
if [ $? -eq 0 ] || ! grep -q 'not in docs/diagnosis.md: PeerLost' <<<"$out" ||
   ! grep -q 'never emitted by agent/: NoSuchReason' <<<"$out"; then
    echo "FAIL: the comparison did not catch a doctored doc: $out"; exit 1
fi

# The reasons the issue asks for are among them (and so documented).
for r in EFADeviceCountMismatch EFAModuleNotLoaded EFADeviceFilesMissing \
         EFAProviderUnavailable MemlockTooLow HugePagesUnavailable \
         LibfabricTooOld NetPluginMissing SocketFallback GDRDisabled \
         PeerTimeout PeerLost PeerRejected BandwidthBelowThreshold \
         DataCorruption APIUnavailable Forbidden; do
    grep -qx "$r" "$tmp/emitted" || { echo "FAIL: agent/ never emits $r"; exit 1; }
done
# The security-group hint is documented where the agent gives it.
grep -q 'security group without' "$root/agent/collective/host_ep.c" &&
    grep -q 'security group without' "$doc" ||
    { echo "FAIL: security-group hint missing in the agent or the doc"; exit 1; }

if ! compare "$tmp/emitted" "$tmp/documented"; then
    echo "FAIL: docs/diagnosis.md and agent/ disagree"; exit 1
fi
echo "PASS: all $n reasons documented, none extra"
