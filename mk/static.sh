#!/bin/sh
# Helpers of `make static` (mk/static.mk).
#
#   mk/static.sh archives OUTFILE
#       Finds the static archive of every third-party library the agent
#       links: libcurl and everything its pkg-config file says a static link
#       needs (one level of their own pkg-config dependencies too), libyaml,
#       and libcjson unless CJSON_SRC names a cJSON source tree. Writes their
#       paths to OUTFILE, one a line. If any is missing, names every missing
#       one on stderr and exits 1. glibc's own libraries (c, m, dl, pthread,
#       rt, resolv) stay dynamic and are not looked for.
#       Environment: CC, CURL_PREFIX (a libcurl install to prefer, e.g. one
#       built with only OpenSSL and zlib), CJSON_SRC.
#
#   mk/static.sh check-needed BINARY
#       Passes when BINARY's dynamic section needs nothing but glibc
#       (libc, libm, libdl, libpthread, librt, ld-linux); otherwise names
#       the other libraries and exits 1. Prints the newest GLIBC_ symbol
#       version the binary requires: its glibc baseline.
set -eu

CC=${CC:-cc}
GLIBC_LIBS="c m dl pthread rt resolv"

pc() {
    if [ -n "${CURL_PREFIX:-}" ]; then
        PKG_CONFIG_PATH="$CURL_PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
            pkg-config "$@"
    else
        pkg-config "$@"
    fi
}

# The -l names (without -l) a static link of the pkg-config modules needs.
static_names() {
    pc --static --libs-only-l "$@" | tr ' ' '\n' | sed -n 's/^-l//p'
}

# Path of libNAME.a, or nothing.
find_archive() {
    for dir in ${CURL_PREFIX:+$CURL_PREFIX/lib $CURL_PREFIX/lib64} \
               $(pc --libs-only-L libcurl yaml-0.1 2>/dev/null | tr ' ' '\n' | sed -n 's/^-L//p'); do
        if [ -f "$dir/lib$1.a" ]; then echo "$dir/lib$1.a"; return; fi
    done
    path=$($CC -print-file-name="lib$1.a")
    case $path in */*) [ -f "$path" ] && echo "$path" ;; esac
}

archives() {
    out=$1
    command -v pkg-config >/dev/null || { echo "make static: pkg-config is not installed" >&2; exit 1; }
    pc --exists libcurl || { echo "make static: no libcurl.pc (install libcurl4-openssl-dev or set CURL_PREFIX)" >&2; exit 1; }
    pc --exists yaml-0.1 || { echo "make static: no yaml-0.1.pc (install libyaml-dev)" >&2; exit 1; }

    names=$(static_names libcurl yaml-0.1)
    # One level of the dependencies' own static needs (idn2 -> unistring,
    # brotlidec -> brotlicommon), when they have a pkg-config file.
    for n in $names; do
        for mod in "lib$n" "$n"; do
            if pc --exists "$mod" 2>/dev/null; then
                names="$names $(static_names "$mod")"
                break
            fi
        done
    done
    if [ -z "${CJSON_SRC:-}" ]; then
        names="$names cjson"
    elif [ ! -f "$CJSON_SRC/cJSON.c" ] || [ ! -f "$CJSON_SRC/cJSON.h" ]; then
        echo "make static: CJSON_SRC=$CJSON_SRC has no cJSON.c and cJSON.h" >&2
        exit 1
    fi

    found="" missing="" seen=" "
    for n in $names; do
        case " $GLIBC_LIBS " in *" $n "*) continue ;; esac
        case $seen in *" $n "*) continue ;; esac
        seen="$seen$n "
        a=$(find_archive "$n")
        if [ -n "$a" ]; then found="$found$a
"; else missing="$missing lib$n.a"; fi
    done
    if [ -n "$missing" ]; then
        echo "make static: missing static archives:$missing" >&2
        echo "  libcurl's static link needs: $(static_names libcurl | sort -u | tr '\n' ' ')" >&2
        echo "  Either install the -dev packages that ship them, or link a libcurl built with" >&2
        echo "  only OpenSSL and zlib (as the Dockerfile's builder stage does):" >&2
        echo "  make static CURL_PREFIX=<its install prefix>; for cJSON, CJSON_SRC=<cJSON source dir>." >&2
        exit 1
    fi
    printf '%s' "$found" >"$out"
}

check_needed() {
    bin=$1
    command -v readelf >/dev/null || { echo "check-needed: readelf is not installed (binutils)" >&2; exit 1; }
    needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    [ -n "$needed" ] || { echo "check-needed: $bin has no NEEDED entries (not a dynamic ELF?)" >&2; exit 1; }
    others=""
    for lib in $needed; do
        case $lib in
            libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*.so.*) ;;
            *) others="$others $lib" ;;
        esac
    done
    baseline=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
               sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)
    echo "$bin needs:" $needed
    echo "glibc baseline: $baseline"
    if [ -n "$others" ]; then
        echo "check-needed: $bin depends on more than glibc:$others" >&2
        exit 1
    fi
}

case ${1:-} in
    archives) [ $# -eq 2 ] || { echo "usage: $0 archives OUTFILE" >&2; exit 2; }; archives "$2" ;;
    check-needed) [ $# -eq 2 ] || { echo "usage: $0 check-needed BINARY" >&2; exit 2; }; check_needed "$2" ;;
    *) echo "usage: $0 archives OUTFILE | check-needed BINARY" >&2; exit 2 ;;
esac
