#!/bin/bash
# make kube-real on a fresh machine: scripts/kube_real_build.sh builds
# kube-apiserver in its cache and installs it at OUT, a path relative to
# where it was called from (not inside the Kubernetes source tree it cd's
# into); the target installs the "kube" package group (etcd) and fails when
# its scenarios skip. The build itself is faked (PF_GO): its steps before
# `go build` are cached state here, so this takes a second.
set -u
cd "${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}" || exit 1
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
command -v flock >/dev/null || { echo "skip: no flock"; exit 77; }

cache=$tmp/cache
src=$cache/src/kubernetes-1.20.2
mkdir -p "$src/cmd/kube-apiserver" "$src/vendor/github.com/modern-go/reflect2" "$src/pkg/generated/openapi"
touch "$src/.pf-extracted" "$src/vendor/github.com/modern-go/reflect2/go_above_118.go"
echo 'package openapi' >"$src/pkg/generated/openapi/zz_generated.openapi.go"
cat >"$tmp/go" <<'SH'
#!/bin/sh
# a fake `go build -o OUT ... ./cmd/kube-apiserver`: writes OUT, records the cwd
while [ $# -gt 0 ]; do [ "$1" = -o ] && { out=$2; shift; }; shift; done
pwd >"$(dirname "$out")/go-cwd"
printf '#!/bin/sh\necho kube-apiserver\n' >"$out" && chmod +x "$out"
SH
chmod +x "$tmp/go"
mkdir -p "$tmp/clone"
(cd "$tmp/clone" && PF_KUBE_CACHE="$cache" PF_GO="$tmp/go" "$root/scripts/kube_real_build.sh" build/kube/kube-apiserver) \
    >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "kube_real_build.sh exited $?"; }
grep -q "/src/k8s.io/kubernetes$" "$cache/bin/go-cwd" || fail "the fake build did not run in the GOPATH: $(cat "$cache/bin/go-cwd")"
[ -x "$tmp/clone/build/kube/kube-apiserver" ] || fail "no build/kube/kube-apiserver where it was asked for: $(find "$tmp" -name kube-apiserver)"
[ ! -e "$src/build/kube/kube-apiserver" ] || fail "installed inside the Kubernetes source tree"
echo "ok   a fresh build lands at the relative OUT given (build/kube/kube-apiserver), not in the source tree"

grep -q '^kube-real: deps-kube ' mk/kube_real.mk && grep -q '^	@scripts/deps.sh --kube$' mk/kube_real.mk \
    || fail "make kube-real does not install the kube group"
scripts/deps.sh --list --kube | tr ' ' '\n' | grep -qx etcd-server || fail "deps.sh --kube lacks etcd-server"
grep -q 'PF_NO_SKIP=1' mk/kube_real.mk || fail "make kube-real lets its scenarios skip"
mkdir -p "$tmp/t"
printf '#!/bin/bash\necho "skip: no etcd"; exit 77\n' >"$tmp/t/test_kreal_x.sh"
cp tests/integration/run.sh "$tmp/t/"
(cd "$tmp/t" && PF_NO_SKIP=1 bash run.sh kreal_ >"$tmp/out" 2>&1) && fail "a tier whose every test skipped passed"
grep -q "FAIL: 1 of 1 tests skipped" "$tmp/out" || fail "$(cat "$tmp/out")"
(cd "$tmp/t" && bash run.sh kreal_ >/dev/null 2>&1) || fail "without PF_NO_SKIP a skip failed"
echo "ok   make kube-real installs etcd (deps --kube) and fails when a scenario skips"
