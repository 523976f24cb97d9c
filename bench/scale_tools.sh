#!/bin/bash
# Tools for bench/scale_netns on a host that lacks them (the GPU machine:
# Ubuntu 24.04, no iproute2, no nftables, no libyaml/libcjson, no
# libfabric). Run it HERE (Debian 12, root for apt-get) and carry DIR:
#
#   DIR/libexec/{ip,tc,nft}   Debian's binaries
#   DIR/lib/                  every library they need that is not glibc's
#   DIR/bin/{ip,tc,nft}       wrappers: the real binary with DIR/lib
#                             APPENDED to LD_LIBRARY_PATH (a program that
#                             `ip netns exec` starts keeps the caller's
#                             order; bench/scale_netns still starts agents
#                             with the caller's own LD_LIBRARY_PATH)
#   DIR/bin/gnu-time          GNU time (glibc only), for the GPU double's
#                             groups (tests/fakes/gpu/run_nodes.sh, PF_TIME)
#   DIR/tc/                   tc's plugin and distribution dir (TC_LIB_DIR)
#   DIR/etc/iproute2/         Debian's iproute2 tables (not needed by ip for
#                             what scale_netns does; kept for reference)
#   DIR/efa-preflight         the agent (copied from BUILD, default build/)
#   DIR/agentlib/             the agent's libraries that are not glibc's,
#                             and libfabric.so.1 (dlopened by the host
#                             engine) with its own; not to be put on
#                             LD_LIBRARY_PATH whole: DIR/bin/agent-libs
#                             prints a folder holding links to only those
#                             of them that the host lacks (ldconfig -p), so
#                             the host's own newer copies keep winning
#   DIR/certs/                a CA and a server certificate for the fake API
#                             server on 10.254.{0,64,128,192}.1 (k8s mode;
#                             valid 2 days;
#                             scale_netns makes fresh ones where openssl is)
#
# usage: bench/scale_tools.sh [DIR]      (default: .scale-tools in the repo)
# env:   BUILD (build), NO_APT=1 (never apt-get install)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.scale-tools}
build=${BUILD:-$root/build}
die() { echo "scale_tools: $*" >&2; exit 1; }

need_pkg() {   # need_pkg BINARY PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    [ -n "${NO_APT:-}" ] && die "$1 missing (package $2) and NO_APT is set"
    apt-get install -y "$2" >/dev/null 2>&1 || die "apt-get install $2 failed"
    command -v "$1" >/dev/null 2>&1 || die "$1 still missing after installing $2"
}
need_pkg ip iproute2
need_pkg tc iproute2
need_pkg nft nftables
[ -x "$build/efa-preflight" ] || die "no agent at $build/efa-preflight (make first)"

# glibc's own libraries: every glibc has them, newer ones included.
is_glibc() {
    case $1 in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|\
    librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*|libmvec.so.*|\
    libBrokenLocale.so.*|libnss_*|libthread_db.so.*|libc_malloc_debug.so.*) return 0 ;;
    esac
    return 1
}

# copy_deps DEST FILE...: the non-glibc libraries FILE needs (ldd resolves
# them transitively), copied under their soname.
copy_deps() {
    local dest=$1 f name path
    shift
    mkdir -p "$dest"
    for f in "$@"; do
        ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
        while read -r name path; do
            is_glibc "$name" && continue
            [ -e "$dest/$name" ] || cp -L "$path" "$dest/$name" || exit 1
        done || die "copying the libraries of $f"
        ldd "$f" | grep -q "not found" && die "$f: $(ldd "$f" | grep 'not found')"
    done
    return 0
}

rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/libexec" "$dir/lib" "$dir/tc" "$dir/etc" "$dir/agentlib" ||
    die "cannot create $dir"
dir=$(cd "$dir" && pwd)

# A. ip, tc, nft
for t in ip tc nft; do
    cp -L "$(command -v $t)" "$dir/libexec/$t" || die "copy $t"
    copy_deps "$dir/lib" "$dir/libexec/$t"
done
tcdir=/usr/lib/x86_64-linux-gnu/tc
if [ -d "$tcdir" ]; then
    cp -a "$tcdir/." "$dir/tc/"
    for so in "$dir"/tc/*.so; do [ -e "$so" ] && copy_deps "$dir/lib" "$so"; done
fi
[ -d /etc/iproute2 ] && cp -a /etc/iproute2 "$dir/etc/"
for t in ip tc nft; do
    extra=
    [ $t = tc ] && extra='export TC_LIB_DIR=${TC_LIB_DIR:-$d/tc}'
    cat > "$dir/bin/$t" <<EOF
#!/bin/sh
# Debian's $t with its libraries appended to the caller's search path.
d=\$(cd "\$(dirname "\$0")/.." && pwd)
export LD_LIBRARY_PATH=\${LD_LIBRARY_PATH:+\$LD_LIBRARY_PATH:}\$d/lib
$extra
exec "\$d/libexec/$t" "\$@"
EOF
    chmod +x "$dir/bin/$t"
done

# B. the agent and its libraries
cp -L "$build/efa-preflight" "$dir/efa-preflight" || die "copy the agent"
# which build this is (run this script again after each build)
echo "$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown) $(date -u +%FT%TZ)" > "$dir/AGENT_BUILD"
copy_deps "$dir/agentlib" "$dir/efa-preflight"
fab=$(ldconfig -p | awk '$1 == "libfabric.so.1" && /x86-64/ { print $NF; exit }')
if [ -n "$fab" ]; then
    cp -L "$fab" "$dir/agentlib/libfabric.so.1"
    copy_deps "$dir/agentlib" "$dir/agentlib/libfabric.so.1"
else
    echo "scale_tools: warning: no libfabric.so.1 here; the host engine needs one there" >&2
fi
cat > "$dir/bin/agent-libs" <<'EOF'
#!/bin/bash
# agent-libs: prints a folder for LD_LIBRARY_PATH that links to the carried
# agent libraries this host lacks (by soname, ldconfig -p), and, in turn,
# to those that they need and the host lacks. The host's own copies stay
# first for everything it has.
d=$(cd "$(dirname "$0")/.." && pwd)
use=$d/agentlib.use
rm -rf "$use" && mkdir -p "$use" || exit 1
ldc=$(command -v ldconfig || echo /sbin/ldconfig)   # sbin may not be on PATH
have=$("$ldc" -p 2>/dev/null | awk '/x86-64/ { print $1 }' | sort -u)
want="$d/efa-preflight"
[ -e "$d/agentlib/libfabric.so.1" ] && want="$want $d/agentlib/libfabric.so.1"
for round in 1 2 3 4 5 6 7 8; do
    missing=$(for f in $want; do LD_LIBRARY_PATH=$use ldd "$f" 2>/dev/null; done |
              awk '/not found/ { print $1 }' | sort -u)
    # libfabric itself is dlopened: link it when the host has none
    if [ "$round" = 1 ] && ! grep -qx libfabric.so.1 <<<"$have" &&
       [ ! -d /opt/amazon/efa ]; then
        missing="$missing libfabric.so.1"
    fi
    [ -z "$missing" ] && break
    for m in $missing; do
        [ -e "$d/agentlib/$m" ] || { echo "agent-libs: $m is needed and not carried" >&2; continue; }
        ln -sf "$d/agentlib/$m" "$use/$m"
    done
    want="$want $(for m in $missing; do [ -e "$use/$m" ] && echo "$use/$m"; done)"
done
echo "$use"
EOF
chmod +x "$dir/bin/agent-libs"

if [ -x /usr/bin/time ]; then
    cp /usr/bin/time "$dir/bin/gnu-time"
else
    echo "no /usr/bin/time (apt-get install time): bin/gnu-time left out" >&2
fi

# certificates for the fake API server on the hub bridge of any --net-base
# and --one-link (10.254.{0,64,128,192}.1)
"$root/tests/fakes/apiserver/mkcerts.sh" "$dir/certs" \
    "IP:127.0.0.1,IP:10.254.0.1,IP:10.254.64.1,IP:10.254.128.1,IP:10.254.192.1" ||
    die "certificates"

# checks: the wrappers run with nothing but their own libraries beside glibc
for t in ip tc nft; do
    case $t in ip) v=$("$dir/bin/ip" -V) ;; tc) v=$("$dir/bin/tc" -V) ;; nft) v=$("$dir/bin/nft" --version) ;; esac ||
        die "$dir/bin/$t does not run"
    miss=$(LD_LIBRARY_PATH=$dir/lib ldd "$dir/libexec/$t" | grep "not found")
    [ -z "$miss" ] || die "$t: $miss"
    echo "ok $t: $v"
done
LD_LIBRARY_PATH=$("$dir/bin/agent-libs") "$dir/efa-preflight" version >/dev/null ||
    die "the copied agent does not run"
echo "ok agent: $("$dir/efa-preflight" version), from $(cat "$dir/AGENT_BUILD")"
echo "$dir: $(du -sh "$dir" | cut -f1) ($(ls "$dir/lib" | wc -l) tool libraries, $(ls "$dir/agentlib" | wc -l) agent libraries)"
