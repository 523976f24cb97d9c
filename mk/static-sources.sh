#!/bin/sh
# mk/static-sources.sh DIR
#
# For `make static-debian`: on a Debian or Ubuntu host whose libcurl.a needs
# archives the distribution does not ship (libgssapi_krb5.a, libldap.a, ...),
# fetch the distribution's own curl and cJSON sources with `apt-get source`
# and build what `make static` needs from them:
#   DIR/curl    a static libcurl with only HTTP(S) over OpenSSL, and zlib
#   DIR/cjson   the cJSON source tree (cJSON.c, cJSON.h)
# apt uses a private deb-src list and lists directory under DIR: the host's
# apt configuration is not changed. Sources are verified by apt against the
# distribution's signed Release files. Needs: apt-get, dpkg-source (dpkg-dev),
# libssl-dev, zlib1g-dev, a C compiler and make. Idempotent: what DIR already
# holds is not fetched or built again.
set -eu

dir=${1:?usage: mk/static-sources.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ -f "$dir/curl/lib/libcurl.a" ] && [ -f "$dir/cjson/cJSON.c" ]; then
    echo "static-sources: $dir already holds libcurl.a and cJSON"
    exit 0
fi

for tool in apt-get dpkg-source make; do
    command -v $tool >/dev/null || { echo "static-sources: $tool is not installed (apt-get install dpkg-dev make)" >&2; exit 1; }
done
[ -f /usr/include/openssl/ssl.h ] || { echo "static-sources: libssl-dev is not installed" >&2; exit 1; }
[ -f /usr/include/zlib.h ] || { echo "static-sources: zlib1g-dev is not installed" >&2; exit 1; }

# The host's first binary archive (URI and suite) becomes a deb-src line.
# STATIC_SOURCES_SUITE takes the sources of another suite of that archive
# (the Dockerfile's Debian 11 builder: where a mirror no longer serves
# bullseye's .dsc files, bookworm's sources build there as well).
. /etc/os-release
suite=${STATIC_SOURCES_SUITE:-${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}}
uri=""
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$f" | grep -v security | head -n 1)
    [ -n "$uri" ] && break
done
if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" && $2 !~ /^\[/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list)
fi
[ -n "$uri" ] || { echo "static-sources: no Debian/Ubuntu archive found in /etc/apt" >&2; exit 1; }

# Sources are unpacked and built outside DIR (which sits under build/,
# where the Makefile collects *.d files: curl's docs have some), and only
# the results are kept.
work=$(mktemp -d "${TMPDIR:-/tmp}/efa-preflight-static.XXXXXX")
trap 'rm -rf "$work"' EXIT
apt_dir=$work/apt
mkdir -p "$apt_dir/lists/partial"
echo "deb-src $uri $suite main" >"$apt_dir/sources.list"
apt_opts="-o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$apt_dir/lists -o APT::Sandbox::User=root"
echo "static-sources: apt-get source curl cjson from $uri $suite"
# shellcheck disable=SC2086
apt-get $apt_opts -qq update
mkdir -p "$work/src"
# shellcheck disable=SC2086
(cd "$work/src" && apt-get $apt_opts -qq source curl cjson >/dev/null)

if [ ! -f "$dir/cjson/cJSON.c" ]; then
    src=$(find "$work/src" -maxdepth 2 -name cJSON.c | head -n 1)
    [ -n "$src" ] || { echo "static-sources: no cJSON.c in the cjson source package" >&2; exit 1; }
    mkdir -p "$dir/cjson"
    cp "$src" "$(dirname "$src")/cJSON.h" "$dir/cjson/"
fi

if [ ! -f "$dir/curl/lib/libcurl.a" ]; then
    csrc=$(find "$work/src" -maxdepth 1 -type d -name 'curl-[0-9]*' | head -n 1)
    [ -n "$csrc" ] || { echo "static-sources: no curl source tree" >&2; exit 1; }
    echo "static-sources: building a static libcurl (HTTP/HTTPS, OpenSSL, zlib) from $(basename "$csrc")"
    # Hardened as the agent it is linked into (HARDEN_CFLAGS, as in the
    # Dockerfile).
    (cd "$csrc" &&
     ./configure CFLAGS="${HARDEN_CFLAGS:--O2 -fstack-protector-strong -fcf-protection=full -D_FORTIFY_SOURCE=2}" \
        --prefix="$dir/curl" --disable-shared --enable-static --with-pic \
        --with-openssl --with-zlib \
        --without-libpsl --without-libidn2 --without-nghttp2 --without-nghttp3 \
        --without-ngtcp2 --without-brotli --without-zstd --without-libssh2 \
        --without-libssh --without-librtmp --without-libgsasl --without-gssapi \
        --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
        --disable-telnet --disable-tftp --disable-pop3 --disable-imap \
        --disable-smb --disable-smtp --disable-gopher --disable-mqtt \
        --disable-ftp --disable-file --disable-manual --disable-docs \
        --without-ca-bundle --without-ca-path >"$dir/curl-configure.log" 2>&1 ||
        { tail -n 20 "$dir/curl-configure.log" >&2; exit 1; }
     make -j2 -C lib >"$dir/curl-build.log" 2>&1 &&
     make -C lib install >>"$dir/curl-build.log" 2>&1 &&
     make -C include install >>"$dir/curl-build.log" 2>&1 &&
     make install-pkgconfigDATA >>"$dir/curl-build.log" 2>&1 ||
        { tail -n 20 "$dir/curl-build.log" >&2; exit 1; })
fi
echo "static-sources: CURL_PREFIX=$dir/curl CJSON_SRC=$dir/cjson"
