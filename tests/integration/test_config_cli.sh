#!/bin/bash
# The CLI's contract for bad input: a message naming what and where, exit 2,
# nothing else done. And the catalog command with an override file.
set -u
fail() { echo "FAIL: $*"; exit 1; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT

expect() { # expect CODE "message substring" -- args...
    local code=$1 msg=$2; shift 3
    out=$("$PF_BIN" "$@" 2>&1); rc=$?
    [ "$rc" -eq "$code" ] || fail "efa-preflight $*: exit $rc, want $code; output: $out"
    [[ "$out" == *"$msg"* ]] || fail "efa-preflight $*: output lacks '$msg': $out"
    echo "ok: $* -> $code ($msg)"
}

printf 'port: 1\nfabric_provder: tcp\n' >"$t/typo.yaml"
printf 'timeout: soon\n' >"$t/type.yaml"
printf 'port: [1\n' >"$t/bad.yaml"
printf 'version: 1\ninstances:\n  p5.48xlarge:\n    efa: 30\n  x9.large:\n    efa: 3\n' >"$t/cat.yaml"
printf 'version: 1\ninstances:\n  p5.48xlarge:\n    gpus: 8\n' >"$t/badcat.yaml"

expect 2 "unknown command 'nod'" -- nod
expect 2 "usage: efa-preflight" --
expect 2 "unknown option '--bogus' for 'node'" -- node --bogus
expect 2 "typo.yaml:2: unknown key 'fabric_provder'" -- run --config "$t/typo.yaml"
expect 2 "type.yaml:1: key 'timeout': 'soon' is not an integer" -- run --config "$t/type.yaml"
expect 2 "bad.yaml:2:1: invalid YAML" -- node --config "$t/bad.yaml"
expect 2 "config file: $t/none.yaml" -- node --config "$t/none.yaml"
EFA_PREFLIGHT_ITERS=0 expect 2 "EFA_PREFLIGHT_ITERS: 0 is out of range 1..100000" -- local
expect 2 "badcat.yaml:4: p5.48xlarge: unknown field 'gpus'" -- catalog --catalog "$t/badcat.yaml"
expect 0 "--fabric-provider" -- run --help
expect 0 "efa-preflight 0." -- version

# --help lists every exit code, 4 (a peer failed, not this node) included,
# for the commands that end in a verdict and in the top-level usage; the
# same codes as docs/reference/exit-codes.md's table.
for cmd in node run local; do
    out=$("$PF_BIN" $cmd --help) || fail "$cmd --help exited $?"
    for c in "0 pass" "1 validation failed" "2 usage/config error" "3 infrastructure error" \
             "4 a peer failed, not this node"; do
        [[ "$out" == *"$c"* ]] || fail "$cmd --help lacks exit code '$c': $(tail -n 3 <<<"$out")"
    done
done
out=$("$PF_BIN" 2>&1)
[[ "$out" == *"4 a peer failed, not this node"* ]] || fail "usage lacks exit code 4: $out"
doc_codes=$(grep -o '^| [0-9] ' "$PF_ROOT/docs/reference/exit-codes.md" | tr -dc '0-9')
help_codes=$(grep -o '[0-9] [a-z]' <<<"$("$PF_BIN" run --help | sed -n '/^exit codes/,$p')" | tr -dc '0-9')
[ "$doc_codes" = "01234" ] && [ "$help_codes" = "$doc_codes" ] ||
    fail "exit codes: docs/reference/exit-codes.md $doc_codes, run --help $help_codes"
echo "ok: --help lists exit codes 0-4, as docs/reference/exit-codes.md"

# A near-miss instance type names the catalog entry it missed; a type near
# none gets no guess.
mkdir -p "$t/sys"
expect 1 "'p5.48xlrge' (from flag) has no catalog entry (did you mean p5.48xlarge?)" -- \
    node --instance-type p5.48xlrge --no-imds --sysfs-root "$t/sys" --dev-root "$t/sys"
expect 1 "(did you mean p4de.24xlarge?)" -- \
    node --instance-type p4de.24xlargee --no-imds --sysfs-root "$t/sys" --dev-root "$t/sys"
out=$("$PF_BIN" node --instance-type m5.large --no-imds --sysfs-root "$t/sys" --dev-root "$t/sys" 2>&1)
[[ "$out" == *"'m5.large' (from flag) has no catalog entry and no EFA"* ]] ||
    fail "m5.large: $out"
echo "ok: no guess for a type near no catalog entry"

out=$("$PF_BIN" catalog --catalog "$t/cat.yaml") || fail "catalog with override failed"
grep -A1 '^  p5.48xlarge:' <<<"$out" | grep -q 'efa: 30' || fail "override not applied"
grep -q '^  x9.large:' <<<"$out" || fail "added type missing"
grep -q '^  p4d.24xlarge:' <<<"$out" || fail "embedded types lost"
echo "ok: catalog override applied, added type listed"

# Operator input is echoed in error messages: control bytes in it (a
# terminal escape that clears the screen or retitles the window) come out
# as '?', as peer input does.
clean() { # clean EXPECT_SUBSTRING -- args... (env given before)
    local msg=$1; shift 2
    out=$("$PF_BIN" "$@" 2>&1); rc=$?
    [ "$rc" -eq 2 ] || fail "efa-preflight $*: exit $rc, want 2; output: $out"
    if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$out"; then
        fail "efa-preflight $*: raw control bytes echoed: $(od -c <<<"$out" | head -5)"
    fi
    [[ "$out" == *"$msg"* ]] || fail "efa-preflight $*: output lacks '$msg': $out"
    echo "ok: control bytes cleaned ($msg)"
}
clean "'?[2J' is not a node count" -- run --max-tainted $'\e[2J'
EFA_PREFLIGHT_LABEL_PREFIX=$'\e[2Jx.io/' clean "label prefix '?[2Jx.io/'" -- run
EFA_PREFLIGHT_FABRIC_PROVIDER=$'\e]0;pwned\a' clean "'?]0;pwned?' is not a provider" -- node
printf 'label_prefix: "\\e[2Jx.io/"\n' >"$t/esc.yaml"
clean "key 'label_prefix': label prefix '?[2Jx.io/'" -- run --config "$t/esc.yaml"
clean "sysfs_root" -- node --no-imds --sysfs-root $'/nonexistent\e[2J'
