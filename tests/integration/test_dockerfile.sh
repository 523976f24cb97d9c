#!/bin/bash
# The Dockerfile cannot be built here (no Docker engine), so check it
# statically: targets agent and full exist, every COPY --from names an
# earlier stage, every local file it copies exists and passes .dockerignore,
# versions and checksums are pinned, the builder has the old glibc; and the
# build context alone (what .dockerignore lets through) is enough for the
# Makefile to plan `make static`. Then show the checker rejects each kind of
# mistake with its exact reason.
set -u
root=${PF_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
check=tests/manifests/check_dockerfile.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; failures=$((failures + 1)); }

out=$(python3 $check . 2>&1)
if [ $? -eq 0 ] && grep -q 'stages builder agent ofi-build full webhook-build webhook, 0 problems' <<<"$out"; then
    pass "Dockerfile: $out"
else bad "Dockerfile check"; echo "$out" | sed 's/^/     /'; fi

# The build context, as docker would send it: only what .dockerignore keeps.
python3 - "$tmp/ctx" <<'EOF'
import os, shutil, subprocess, sys
sys.path.insert(0, "tests/manifests")
from check_dockerfile import dockerignore, ignored
pats = dockerignore(".")
files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"],
                       capture_output=True, text=True, check=True).stdout.split()
for f in files:
    if os.path.isfile(f) and not ignored(f, pats):
        dst = os.path.join(sys.argv[1], f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(f, dst)
EOF
n_ctx=$(find "$tmp/ctx" -type f | wc -l)
for f in Makefile mk/static.mk mk/static.sh agent/main.c agent/catalog.yaml; do
    [ -f "$tmp/ctx/$f" ] || bad "build context lacks $f"
done
for f in tests build .git k8s charts; do
    [ -e "$tmp/ctx/$f" ] && bad "build context carries $f"
done
# make -n resolves every prerequisite without compiling: a source the
# Makefile needs but the context lacks fails here with "No rule to make".
mkdir -p "$tmp/ctx/deps/cjson"
touch "$tmp/ctx/deps/cjson/cJSON.c" "$tmp/ctx/deps/cjson/cJSON.h"
if (cd "$tmp/ctx" && make -n static-link BUILD=build/static CJSON_SRC=deps/cjson) >"$tmp/plan" 2>&1 \
        && grep -q 'agent/main.o' "$tmp/plan" && grep -q -- '-static-libgcc' "$tmp/plan"; then
    pass "build context ($n_ctx files) is enough to plan make static ($(grep -c '^cc\|^gcc' "$tmp/plan") compiler runs)"
else bad "make -n static-link in the build context"; tail -n 5 "$tmp/plan" | sed 's/^/     /'; fi

# Each mistake, in a copy of the Dockerfile or the context's .dockerignore.
expect() {  # expect NAME SED-EXPR MESSAGE [ROOT]
    local name=$1 expr=$2 msg=$3 r=${4:-.}
    sed "$expr" Dockerfile >"$tmp/Dockerfile"
    cmp -s Dockerfile "$tmp/Dockerfile" && [ "$r" = . ] && { bad "$name: the edit changed nothing"; return; }
    local o
    o=$(python3 $check "$r" "$tmp/Dockerfile" 2>&1) && { bad "$name: accepted"; return; }
    if grep -qF -- "$msg" <<<"$o"; then pass "$name: rejected"
    else bad "$name: output lacks '$msg'"; echo "$o" | sed 's/^/     /'; fi
}
expect "missing full target" 's/ AS full$/ AS runtime/' "no stage named full (docker build --target full)"
expect "COPY --from a stage that does not exist" 's/--from=ofi-build/--from=ofi/' \
    "COPY --from=ofi names no earlier stage"
expect "COPY --from a later stage" '0,/--from=builder/s//--from=full/' \
    "COPY --from=full names no earlier stage"
expect "COPY of a missing local file" 's|^COPY agent/ agent/|COPY agents/ agent/|' \
    "COPY source agents/ does not exist"
expect "unpinned version" 's/^ARG CURL_VERSION=.*/ARG CURL_VERSION=latest/' \
    "ARG CURL_VERSION is not pinned (default 'latest')"
expect "malformed checksum" 's/^ARG CJSON_SHA256=.*/ARG CJSON_SHA256=cc6d93/' \
    "ARG CJSON_SHA256=cc6d93 is not a sha256"
expect "checksum never verified" '/cjson.zip" | sha256sum -c/d' \
    "ARG CJSON_SHA256 is set but no RUN checks it with sha256sum -c"
expect "new-glibc builder" 's/^ARG BUILDER_IMAGE=.*/ARG BUILDER_IMAGE=debian:bookworm-slim/' \
    "BUILDER_IMAGE=debian:bookworm-slim is not an old-glibc base"
expect "base image not an ARG" 's/^FROM ${AGENT_BASE_IMAGE} AS agent/FROM busybox AS agent/' \
    "base image busybox is not a build ARG"
expect "agent binary elsewhere" 's|/build/static/efa-preflight /usr/local/bin/efa-preflight|/build/static/efa-preflight /bin/efa-preflight|' \
    "stage agent does not put the agent at /usr/local/bin/efa-preflight"
expect "full image on CUDA 12.4 (cannot drive B200)" \
    's/^ARG CUDA_DEVEL_IMAGE=.*/ARG CUDA_DEVEL_IMAGE=nvidia\/cuda:12.4.1-devel-ubuntu22.04/; s/^ARG CUDA_RUNTIME_IMAGE=.*/ARG CUDA_RUNTIME_IMAGE=nvidia\/cuda:12.4.1-runtime-ubuntu22.04/' \
    "the full image's CUDA 12.4 cannot drive p6-b200.48xlarge (B200, sm_100) that the chart deploys to: it needs CUDA >= 12.8"
expect "full image with NCCL 2.21 (cannot drive B200)" 's/^ARG NCCL_VERSION=.*/ARG NCCL_VERSION=2.21.5-1/' \
    "the full image's NCCL 2.21.5-1 cannot drive p6-b200.48xlarge (B200, sm_100) that the chart deploys to: it needs NCCL >= 2.25"
expect "devel and runtime images on different CUDA" \
    's/^ARG CUDA_DEVEL_IMAGE=.*/ARG CUDA_DEVEL_IMAGE=nvidia\/cuda:12.9.1-devel-ubuntu22.04/' \
    "CUDA_DEVEL_IMAGE and CUDA_RUNTIME_IMAGE have different CUDA versions (12.9, 12.8)"
expect "webhook image with the static binary (no HTTP server)" \
    's|^COPY --from=webhook-build /src/efa-preflight/build/efa-preflight|COPY --from=builder /src/efa-preflight/build/static/efa-preflight|' \
    "stage webhook does not put the webhook-build binary at /usr/local/bin/efa-preflight"
expect "sources from Debian by default" 's/^ARG DEPS_FROM=upstream/ARG DEPS_FROM=debian/' \
    "ARG DEPS_FROM=debian: the default must stay upstream (the pinned, checksummed tarballs)"
mkdir -p "$tmp/root"
ln -s "$root/Makefile" "$root/agent" "$root/mk" "$tmp/root/"
printf '*\n!Makefile\n!agent\n' >"$tmp/root/.dockerignore"
expect "EFA path before the installer" 's|^ \&\& build/static/efa-preflight version| \&\& /opt/amazon/openmpi/bin/mpicc --version \&\& build/static/efa-preflight version|' \
    "RUN uses /opt/amazon/ in stage builder before the EFA installer ran there"
expect "MPI shim not shipped" '/libpf-mpi.so \/usr\/local\/bin\/libpf-mpi.so/d' \
    "stage full does not put the MPI shim at /usr/local/bin/libpf-mpi.so"
expect "COPY of a file .dockerignore excludes" 's/a/a/' \
    "COPY source mk/ is excluded by .dockerignore" "$tmp/root"

# The Dockerfile's libcurl and `make static-debian`'s are the same build: the
# two ./configure flag lists (kept apart because the image cannot run the
# host script) must not drift.
if python3 - "$root/Dockerfile" "$root/mk/static-sources.sh" <<'PY'
import re, sys
def flags(path):
    text = open(path).read().replace("\\\n", " ")
    m = re.search(r"\./configure (.*?)(?:&&|>|\n)", text)
    return sorted(f for f in m.group(1).split() if f.startswith("--") and not f.startswith("--prefix"))
a, b = flags(sys.argv[1]), flags(sys.argv[2])
if a != b:
    print("curl configure flags differ:", sorted(set(a) ^ set(b)))
    sys.exit(1)
print("ok   curl configure flags agree (%d flags)" % len(a))
PY
then :; else failures=$((failures + 1)); fi

echo "dockerfile: $failures failed checks"
[ $failures -eq 0 ]
