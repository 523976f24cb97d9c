#!/bin/bash
# `make static`: when every static archive is there, build/static/efa-preflight
# must need nothing but glibc (readelf NEEDED: libc/libm/libdl/libpthread/
# librt/ld-linux). When some are missing, make static must fail before
# compiling and name exactly the missing ones; then this test skips (77).
# Either way the NEEDED checker itself is tested both ways first.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
build=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }

for tool in readelf objdump pkg-config cc; do
    command -v $tool >/dev/null || { echo "skip: $tool is not installed (make deps)"; exit 77; }
done

# 1. The checker: a program linked only against glibc passes and reports
#    its baseline; the normal (dynamic) agent is rejected, naming its
#    third-party libraries.
printf '#include <dlfcn.h>\n#include <math.h>\n#include <stdio.h>\nint main(int c, char **v) { (void)v; printf("%%f %%p\\n", sqrt((double)c), dlsym(RTLD_DEFAULT, "x")); return 0; }\n' >"$tmp/glibc_only.c"
cc -o "$tmp/glibc_only" "$tmp/glibc_only.c" -ldl -lm || fail "cannot build the glibc-only probe"
out=$(mk/static.sh check-needed "$tmp/glibc_only" 2>&1) || fail "checker rejected a glibc-only binary: $out"
grep -q '^glibc baseline: 2\.[0-9][0-9]*$' <<<"$out" || fail "checker printed no glibc baseline: $out"
echo "ok   checker accepts a glibc-only binary ($(grep baseline <<<"$out"))"
if [ -x "$build/efa-preflight" ]; then
    dyn=$build/efa-preflight
    out=$(mk/static.sh check-needed "$dyn" 2>&1) && fail "checker accepted the dynamic agent: $out"
    for lib in libcurl libyaml libcjson; do
        grep -q "depends on more than glibc:.*$lib" <<<"$out" || fail "checker did not name $lib: $out"
    done
    echo "ok   checker rejects the dynamic agent, naming libcurl, libyaml, libcjson"
fi

# A make free of the settings of a surrounding make (make asan passes
# BUILD, CFLAGS and SANFLAGS down through MAKEFLAGS).
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "$@"; }

# The glibc-only result: NEEDED lists glibc only, no GPU/fabric library is
# linked, and it runs.
check_static_binary() {
    local bin=build/static/efa-preflight needed lib stack
    [ -x "$bin" ] || fail "make static succeeded without $bin"
    needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    for lib in $needed; do
        case $lib in
            libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*.so.*) ;;
            *) fail "$bin needs $lib (NEEDED: $needed)" ;;
        esac
    done
    for stack in libnccl libcudart libfabric libcurl libyaml libcjson libssl libcrypto libz; do
        grep -q "$stack" <<<"$needed" && fail "$bin links $stack dynamically"
    done
    "$bin" version | grep -q '^efa-preflight ' || fail "$bin version failed"
    echo "ok   $bin ($(stat -c %s "$bin") bytes) NEEDED: $needed($(grep 'glibc baseline' "$1"))"
}

# 2. make static with the host's archives.
if mk static >"$tmp/make.log" 2>&1; then
    check_static_binary "$tmp/make.log"
    exit 0
fi

# 3. It failed: it must name every missing archive, and only missing ones,
#    before compiling anything.
msg=$(grep '^make static: missing static archives:' "$tmp/make.log") || {
    sed 's/^/    /' "$tmp/make.log"; fail "make static failed without naming missing archives"; }
named=$(sed 's/^make static: missing static archives://' <<<"$msg")
[ -e build/static/efa-preflight ] && [ build/static/efa-preflight -nt "$tmp/make.log" ] \
    && fail "make static linked a binary despite missing archives"
grep -q 'static-link' "$tmp/make.log" && fail "make static compiled despite missing archives"
has_archive() {
    local p
    p=$(cc -print-file-name="lib$1.a")
    [[ $p == */* && -f $p ]]
}
for a in $named; do
    n=${a#lib}; n=${n%.a}
    has_archive "$n" && fail "$a is named missing but $(cc -print-file-name="$a") exists"
done
# Independently of mk/static.sh: what libcurl's pkg-config file lists, plus
# libyaml and cJSON.
for n in $(pkg-config --static --libs-only-l libcurl yaml-0.1 | tr ' ' '\n' | sed -n 's/^-l//p') cjson; do
    case $n in c|m|dl|pthread|rt|resolv) continue ;; esac
    if ! has_archive "$n" && [[ " $named " != *" lib$n.a "* ]]; then
        fail "lib$n.a is missing but make static did not name it: $msg"
    fi
done
echo "ok   make static fails before compiling and names exactly the missing archives"

# 4. The host route: libcurl and cJSON built from the distribution's sources
#    by `make static-debian` (mk/static-sources.sh). Fetching and building
#    them takes minutes, so the test does it only when asked
#    (PF_TEST_STATIC_FETCH=1) and otherwise uses what an earlier
#    `make static-debian` left.
deps=build/static/deps
if [ ! -f $deps/curl/lib/libcurl.a ] && [ "${PF_TEST_STATIC_FETCH:-0}" = 1 ]; then
    mk/static-sources.sh $deps >"$tmp/fetch.log" 2>&1 || {
        tail -n 5 "$tmp/fetch.log"; echo "skip: static archives missing on this host:$named; fetching sources failed"; exit 77; }
fi
if [ -f $deps/curl/lib/libcurl.a ] && [ -f $deps/cjson/cJSON.c ]; then
    mk static CURL_PREFIX="$PWD/$deps/curl" CJSON_SRC="$PWD/$deps/cjson" >"$tmp/make2.log" 2>&1 || {
        tail -n 20 "$tmp/make2.log"; fail "make static with the sources in $deps failed"; }
    check_static_binary "$tmp/make2.log"
    exit 0
fi
echo "skip: static archives missing on this host:$named (make static-debian builds libcurl and cJSON from Debian's sources)"
exit 77
