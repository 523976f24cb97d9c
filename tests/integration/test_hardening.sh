#!/bin/bash
# Every build is hardened (Makefile PF_HARDEN_*, mk/mpi.mk, mk/static.mk),
# read back from the binaries themselves, so a dropped flag fails here:
#   PIE            ELF type DYN with FLAGS_1 PIE (executables)
#   full RELRO     a GNU_RELRO segment and BIND_NOW
#   NX stack       GNU_STACK without E
#   stack guard    __stack_chk_fail imported, and -fstack-protector-strong
#                  in the producer string of every compile unit of agent/
#   FORTIFY        __*_chk functions imported (not in sanitizer builds,
#                  which leave FORTIFY out on purpose)
#   CET (x86-64)   .note.gnu.property with IBT and SHSTK, -fcf-protection
#                  in every agent/ compile unit
# Checked: the agent, the MPI shim when built, the static binary when
# built. First the checker must reject an unhardened binary.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
build=${BUILD:-build}
bin=${PF_BIN:-$build/efa-preflight}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for tool in readelf cc python3; do
    command -v $tool >/dev/null || { echo "skip: $tool is not installed"; exit 77; }
done
x86=$([ "$(uname -m)" = x86_64 ] && echo 1 || echo 0)

# check FILE KIND(exe|lib): prints what is missing, exit 1 if anything is.
check() {
    local f=$1 kind=$2 miss="" dyn syms
    dyn=$(readelf -dW "$f")
    syms=$(readelf --dyn-syms -W "$f")
    if [ "$kind" = exe ]; then
        readelf -hW "$f" | grep -q 'Type:.*DYN' || miss="$miss PIE(type)"
        grep -q 'FLAGS_1.*PIE' <<<"$dyn" || miss="$miss PIE(FLAGS_1)"
    fi
    readelf -lW "$f" | grep -q GNU_RELRO || miss="$miss RELRO"
    grep -qE 'BIND_NOW|FLAGS_1.*NOW' <<<"$dyn" || miss="$miss BIND_NOW"
    readelf -lW "$f" | grep GNU_STACK | grep -q 'RWE' && miss="$miss NX-stack"
    grep -q '__stack_chk_fail' <<<"$syms" || miss="$miss stack-protector(__stack_chk_fail)"
    if ! grep -q '__asan_init' <<<"$syms"; then
        grep -E '__[a-z]+_chk' <<<"$syms" | grep -vq '__stack_chk_fail' ||
            miss="$miss FORTIFY(__*_chk)"
    fi
    if [ "$x86" = 1 ]; then
        readelf -nW "$f" | grep -q 'x86 feature:.*IBT.*SHSTK' || miss="$miss CET(IBT,SHSTK note)"
    fi
    # Every compile unit of our own sources, from the DWARF producer (none
    # when built without -g: then the symbols above are the evidence).
    python3 - "$f" "$x86" <<'PY' || miss="$miss compile-flags"
import subprocess, sys
out = subprocess.run(["readelf", "--debug-dump=info", sys.argv[1]], capture_output=True,
                     text=True, errors="replace").stdout
units, prod = [], None
for line in out.splitlines():
    if "DW_AT_producer" in line:
        prod = line.rsplit(": ", 1)[-1]
    elif "DW_AT_name" in line and prod is not None:
        units.append((line.rsplit(": ", 1)[-1].strip(), prod))
        prod = None
ours = [(n, p) for n, p in units if n.startswith("agent/") and n.endswith(".c")]
bad = [n for n, p in ours if "-fstack-protector-strong" not in p or
       (sys.argv[2] == "1" and "-fcf-protection" not in p)]
for n in bad:
    sys.stderr.write("  %s built without -fstack-protector-strong / -fcf-protection\n" % n)
sys.exit(1 if bad else 0)
PY
    if [ -n "$miss" ]; then
        echo "  $f lacks:$miss"
        return 1
    fi
    return 0
}

# The checker can fail: an unhardened program is rejected.
printf 'int main(int c, char **v) { char b[64]; __builtin_strcpy(b, v[0]); return b[c]; }\n' >"$tmp/plain.c"
cc -O0 -fno-stack-protector -fcf-protection=none -no-pie -Wl,-z,lazy -Wl,-z,norelro \
    -o "$tmp/plain" "$tmp/plain.c" 2>/dev/null ||
    cc -O0 -fno-stack-protector -no-pie -o "$tmp/plain" "$tmp/plain.c" || { echo "FAIL: cannot build the probe"; exit 1; }
if check "$tmp/plain" exe >"$tmp/why"; then
    echo "FAIL: the checker accepted an unhardened binary"; exit 1
fi
echo "ok   checker rejects an unhardened binary:$(sed -n 's/.*lacks://p' "$tmp/why")"

fail=0
[ -x "$bin" ] || { echo "FAIL: no agent at $bin"; exit 1; }
if check "$bin" exe; then echo "ok   $bin: PIE, full RELRO, NX stack, stack protector, FORTIFY, CET"; else fail=1; fi
if [ -f "$build/libpf-mpi.so" ]; then
    if check "$build/libpf-mpi.so" lib; then echo "ok   $build/libpf-mpi.so: full RELRO, NX stack, stack protector, FORTIFY, CET"; else fail=1; fi
else
    echo "note $build/libpf-mpi.so not built (no mpicc): not checked"
fi
if [ -f build/static/efa-preflight ] && [ build/static/efa-preflight -nt Makefile ]; then
    if check build/static/efa-preflight exe; then echo "ok   build/static/efa-preflight: hardened"; else fail=1; fi
fi
[ $fail -eq 0 ] || { echo "FAIL: a hardening flag was dropped (Makefile PF_HARDEN_*)"; exit 1; }
echo "PASS"
