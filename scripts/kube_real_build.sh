#!/usr/bin/env bash
# Build a real kube-apiserver (v1.20.2) from Debian 12's `kubernetes` source
# package, offline once the source is here, for tests/kube_real/.
#
#   scripts/kube_real_build.sh OUT      writes OUT (the kube-apiserver binary)
#
# The binary is cached in $PF_KUBE_CACHE (default /var/cache/pf-kube) so every
# clone on the machine shares one build (17 min on 2 busy cores); OUT is a copy.
# $PF_KUBE_APISERVER names an existing binary to use instead of building.
#
# Needs: golang-1.19-go, dpkg-dev (apt-get source), a deb-src line for
# bookworm, network for the two downloads (the source package and reflect2).
#
# Two fixes to the tarball, both known upstream:
#  - vendor/github.com/modern-go/reflect2 is v1.0.1, whose linkname to
#    reflect.mapiterinit has the pre-Go-1.18 signature: the binary builds and
#    then crashes iterating any map. v1.0.2 (Debian's
#    golang-github-modern-go-reflect2-dev) has the Go 1.18+ version.
#  - pkg/generated/openapi/zz_generated.openapi.go is not in the tarball; it is
#    generated with the vendored openapi-gen, as the upstream Makefile would.
set -euo pipefail

out=${1:?usage: $0 OUT}
# Absolute: the build cd's into the GOPATH before it installs OUT.
case $out in /*) ;; *) out=$PWD/$out ;; esac
cache=${PF_KUBE_CACHE:-/var/cache/pf-kube}
ver=1.20.2
bin="$cache/bin/kube-apiserver-$ver"

say() { printf 'kube_real_build: %s\n' "$*" >&2; }

# private_source PKG: apt-get source --download-only through a private
# deb-src list made from the host's first Debian archive (bookworm), so a
# host without deb-src lines builds too; the host's apt setup is untouched.
private_source() {
	local uri="" f apt_dir opts
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f "$f" ]] || continue
		uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$f" | grep -v security | head -n 1)
		[[ -n "$uri" ]] && break
	done
	if [[ -z "$uri" && -f /etc/apt/sources.list ]]; then
		uri=$(awk '$1 == "deb" && $2 !~ /^\[/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list)
	fi
	[[ -n "$uri" ]] || return 1
	apt_dir=$(mktemp -d)
	mkdir -p "$apt_dir/lists/partial"
	echo "deb-src $uri bookworm main" >"$apt_dir/sources.list"
	opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
	      -o "Dir::State::Lists=$apt_dir/lists" -o APT::Sandbox::User=root)
	say "apt-get source $1 through a private deb-src line ($uri bookworm)"
	apt-get "${opts[@]}" -qq update >&2 &&
		apt-get "${opts[@]}" source --download-only "$1" >&2
	local rc=$?
	rm -rf "$apt_dir"
	return $rc
}

install_out() {
	mkdir -p "$(dirname "$out")"
	# A hard link where the cache is on the same file system: one copy of
	# the 100 MB binary however many trees use it.
	ln -f "$1" "$out.tmp.$$" 2>/dev/null || cp -f "$1" "$out.tmp.$$"
	mv -f "$out.tmp.$$" "$out"
	say "$out from $1"
}

if [[ -n "${PF_KUBE_APISERVER:-}" ]]; then
	[[ -x "$PF_KUBE_APISERVER" ]] || { say "PF_KUBE_APISERVER=$PF_KUBE_APISERVER is not an executable"; exit 2; }
	install_out "$PF_KUBE_APISERVER"
	exit 0
fi
if [[ -x "$bin" ]]; then
	install_out "$bin"
	exit 0
fi

go=${PF_GO:-/usr/lib/go-1.19/bin/go}
[[ -x "$go" ]] || { say "no Go 1.19 at $go (apt-get install golang-1.19-go)"; exit 2; }
mkdir -p "$cache/src" "$cache/bin"
# One build at a time per cache; a second caller waits and then copies.
exec 9>"$cache/build.lock"
flock 9
if [[ -x "$bin" ]]; then install_out "$bin"; exit 0; fi

src="$cache/src/kubernetes-$ver"
if [[ ! -f "$src/.pf-extracted" ]]; then
	rm -rf "$src"
	(
		cd "$cache/src"
		ls kubernetes_*really"$ver"*.orig.tar.gz >/dev/null 2>&1 ||
			apt-get source --download-only kubernetes >&2 ||
			private_source kubernetes ||
			{ say "apt-get source kubernetes failed: a deb-src line for bookworm is needed"; exit 2; }
		tar xzf kubernetes_*really"$ver"*.orig.tar.gz
	)
	[[ -d "$src/cmd/kube-apiserver" ]] || { say "no $src/cmd/kube-apiserver after extracting"; exit 2; }
	touch "$src/.pf-extracted"
fi

r2="$src/vendor/github.com/modern-go/reflect2"
if [[ ! -f "$r2/go_above_118.go" ]]; then
	(
		cd "$cache/src"
		ls golang-github-modern-go-reflect2-dev_1.0.2*.deb >/dev/null 2>&1 ||
			apt-get download golang-github-modern-go-reflect2-dev >&2
		deb=$(ls golang-github-modern-go-reflect2-dev_1.0.2*.deb | head -1)
		rm -rf r2 && mkdir r2 && dpkg-deb -x "$deb" r2
		new=r2/usr/share/gocode/src/github.com/modern-go/reflect2
		[[ -f "$new/go_above_118.go" ]] || { say "$deb has no go_above_118.go"; exit 2; }
		rm -f "$r2"/*.go "$r2"/*.s
		cp "$new"/*.go "$new"/*.s "$r2"/
	)
	say "vendored reflect2 replaced by v1.0.2"
fi

gopath="$cache/gopath"
mkdir -p "$gopath/src/k8s.io"
ln -sfn "$src" "$gopath/src/k8s.io/kubernetes"
export GOPATH="$gopath" GO111MODULE=off GOPROXY=off GOFLAGS="${GOFLAGS:--p=2}" CGO_ENABLED=0
export GOCACHE="$cache/gocache" PATH="$(dirname "$go"):$PATH"
cd "$gopath/src/k8s.io/kubernetes"

openapi=pkg/generated/openapi/zz_generated.openapi.go
if [[ ! -s "$openapi" ]]; then
	say "building openapi-gen"
	nice -n 19 "$go" build -o "$cache/bin/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
	# The packages the upstream Makefile feeds it (Makefile.generated_files:
	# KUBE_OPENAPI_TAG_FILES): every Go dir outside vendor/ (staging/src/X
	# named vendor/X) with a '+k8s:openapi-gen=' tag, less code-generator and
	# sample-apiserver.
	dirs=$(set +o pipefail; find -H . \( -path ./_\* -o -path ./.\* -o -path ./vendor \) -prune -o \
			-type f -name '*.go' -print |
		sed 's|^./staging/src|vendor|; s|^./||' |
		xargs grep -l '^// *+k8s:' | xargs grep -l '+k8s:openapi-gen=' |
		sed 's|/[^/]*$||' | LC_ALL=C sort -u |
		grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' |
		sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)
	say "generating $openapi ($(tr ',' '\n' <<<"$dirs" | wc -l) packages)"
	nice -n 19 "$cache/bin/openapi-gen" --logtostderr \
		-i "$dirs" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
		-h hack/boilerplate/boilerplate.generatego.txt -r "$cache/openapi_violations.report" >&2
	[[ -s "$openapi" ]] || { say "openapi-gen wrote no $openapi"; exit 1; }
fi

say "building kube-apiserver (GOFLAGS=$GOFLAGS, nice 19; about 17 min on 2 busy cores)"
vpkg=k8s.io/kubernetes/vendor/k8s.io/component-base/version
start=$(date +%s)
nice -n 19 "$go" build -o "$bin.tmp" \
	-ldflags "-s -w -X $vpkg.gitVersion=v$ver -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=20 -X $vpkg.gitTreeState=clean" \
	./cmd/kube-apiserver
mv -f "$bin.tmp" "$bin"
say "built $bin in $(( $(date +%s) - start )) s"
install_out "$bin"
