#!/bin/sh
# Make sure the Debian/Ubuntu packages the build and tests need are present.
# As root: install what is missing. Otherwise: print the apt-get line and stop.
set -eu

# package:file-that-proves-it-is-installed
NEEDED="
build-essential:/usr/bin/gcc
pkg-config:/usr/bin/pkg-config
libcurl4-openssl-dev:/usr/include/x86_64-linux-gnu/curl/curl.h
libcjson-dev:/usr/include/cjson/cJSON.h
libyaml-dev:/usr/include/yaml.h
libfabric-dev:/usr/include/rdma/fabric.h
libfabric-bin:/usr/bin/fi_info
libcriterion-dev:/usr/include/criterion/criterion.h
libopenmpi-dev:/usr/bin/mpicc
openmpi-bin:/usr/bin/mpirun
iproute2:/usr/sbin/ip
openssl:/usr/bin/openssl
python3:/usr/bin/python3
python3-yaml:/usr/lib/python3/dist-packages/yaml/__init__.py
binutils:/usr/bin/readelf
"

missing=""
for item in $NEEDED; do
    pkg=${item%%:*}
    file=${item#*:}
    # curl's header lives in a multiarch dir on Debian; accept either.
    if [ "$pkg" = libcurl4-openssl-dev ] && [ -e /usr/include/curl/curl.h ]; then
        continue
    fi
    [ -e "$file" ] || missing="$missing $pkg"
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "efa-preflight needs these packages:$missing" >&2
    echo "run: sudo apt-get install -y$missing" >&2
    exit 1
fi

echo "installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null || true
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
