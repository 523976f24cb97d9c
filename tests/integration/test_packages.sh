#!/bin/bash
# One list of packages (scripts/packages.txt): `make deps` (scripts/deps.sh)
# and .ci/run both install from it, so a newcomer's `make test` on a fresh
# box skips only what needs hardware or static archives. Every tool an
# integration test looks for (command -v ...) comes from a package of its
# "test" group (or one Debian marks essential); helm and kubectl from the
# npm package scripts/helm_tools.sh pins, which scripts/deps.sh runs.
set -u
cd "$PF_ROOT" || exit 1
fail() { echo "FAIL $*"; exit 1; }
command -v dpkg-query >/dev/null && command -v dpkg >/dev/null ||
    { echo "skip: not a Debian system (dpkg-query)"; exit 77; }

grep -q '^    scripts/deps.sh --all$' .ci/run || fail ".ci/run does not install with scripts/deps.sh --all"
! grep -q 'apt-get install' .ci/run || fail ".ci/run names packages of its own: $(grep -n 'apt-get install' .ci/run)"
test_pkgs=" $(scripts/deps.sh --list) "
all_pkgs=" $(scripts/deps.sh --list --all) "
[ "$(wc -w <<<"$test_pkgs")" -ge 30 ] || fail "deps.sh --list names only: $test_pkgs"
for p in buildah podman; do
    [[ "$all_pkgs" == *" $p "* && "$test_pkgs" != *" $p "* ]] ||
        fail "$p is not in the image group alone"
done
echo "ok   .ci/run and make deps install from scripts/packages.txt ($(wc -w <<<"$test_pkgs") packages, $(wc -w <<<"$all_pkgs") with the image test's)"

tools=$( (grep -ohE 'command -v [a-z0-9_.-]+' tests/integration/*.sh tests/integration/kube/*.sh \
              tests/fakes/apiserver/lib.sh |
          awk '$3 ~ /^[a-z]/ {print $3}'
          grep -ohE 'for b in [a-z0-9 _.-]+; do' tests/integration/*.sh tests/integration/kube/*.sh |
          sed 's/for b in //; s/; do//' | tr ' ' '\n') | sort -u)
n=0
for tool in $tools; do
    path=$(command -v "$tool") || { echo "note $tool is not installed here: not checked"; continue; }
    # Merged /usr: dpkg may know the file under /bin or /sbin.
    pkg=$(for p in "$path" "$(readlink -f "$path")" "/bin/$tool" "/sbin/$tool"; do
              dpkg -S "$p" 2>/dev/null; done | head -n 1 | cut -d: -f1)
    [ -n "$pkg" ] || { echo "note $tool ($path) belongs to no package here: not checked"; continue; }
    n=$((n + 1))
    [[ "$test_pkgs" == *" $pkg "* ]] && continue
    [ "$(dpkg-query -W -f '${Essential}' "$pkg" 2>/dev/null)" = yes ] && continue
    fail "a test looks for $tool ($pkg), which scripts/packages.txt does not list"
done
echo "ok   the $n tools the tests look for come from listed packages"
grep -q '^helm_tools$' scripts/deps.sh || fail "scripts/deps.sh does not run scripts/helm_tools.sh"
grep -qE '^version=[0-9]+\.[0-9]+\.[0-9]+$' scripts/helm_tools.sh \
    && grep -qE '^integrity=sha512-[A-Za-z0-9+/]{86}==$' scripts/helm_tools.sh \
    && grep -qE '^layer_sha256=[0-9a-f]{64}$' scripts/helm_tools.sh \
    || fail "scripts/helm_tools.sh pins no exact version and checksums"
[ ! -e tests/helm_render ] || fail "tests/helm_render is back: the chart tests use real Helm"
echo "ok   helm and kubectl: a pinned npm package, integrity and layer sha256 checked (scripts/helm_tools.sh)"
