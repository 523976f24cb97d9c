#!/bin/bash
# The agent and webhook images, built from the Dockerfile and run (make
# image-test).
#
# Registries cannot be reached where this runs, so the base images are made
# with mmdebstrap from Debian's archive and imported into a private
# container storage (under $IMAGE_WORK, default build/image: the host's
# images are left alone):
#   builder     Debian 11 minbase: BUILDER_IMAGE, the glibc 2.31 baseline
#   agent base  Debian's busybox-static and libc6 alone (variant extract,
#               no dpkg or apt) with busybox's applet links: AGENT_BASE_IMAGE,
#               as the default busybox:*-glibc. Not scratch: the copy-in
#               initContainer and the image's CMD run `cp`, which the agent
#               binary does not do; and glibc, the binary's one dependency,
#               lets it run in its own image too.
#   bookworm    Debian 12 minbase + libfabric1: a second, newer rootfs for
#               the copy-in pattern ("your training image")
# Then `buildah bud --isolation chroot` builds the `agent` target with
# DEPS_FROM=debian (no upstream downloads), and podman (runc, cgroupfs,
# vfs, no network but loopback) runs four cases:
#   1. version in the agent image
#   2. local --ranks 2 --fabric-provider tcp in the agent image (no
#      libfabric there: FabricUnavailable, exit 1, by design)
#   3. copy-in: the agent image's default command copies the binary into a
#      volume; a bookworm container runs it from there (local, 2 ranks)
#   4. glibc baseline: the same binary runs in the bullseye rootfs
# and the `webhook` target (WEBHOOK_BASE_IMAGE = the bookworm rootfs, its
# packages from Debian's archive), run as the chart runs it (user 65532,
# read-only root):
#   5. version, every shared library found
#   6. `efa-preflight webhook` with a test certificate: says it serves
#      HTTPS and accepts a connection on its port (loopback of its own
#      network namespace)
# Needs root, buildah, podman, runc and mmdebstrap (.ci/run installs them);
# without them it exits 77 naming what is missing. It installs nothing.
set -u
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
root=$(cd "$here/../.." && pwd)
cd "$root" || exit 1
work=${IMAGE_WORK:-$root/build/image}
suite_builder=bullseye
suite_other=bookworm
tag=efa-preflight-test
# The Debian mirror reachable here no longer serves bullseye's source .dsc
# files (its binaries and tarballs it does): curl and cJSON are built from
# bookworm's sources, on the bullseye builder (its glibc is what counts).
sources_suite=${IMAGE_SOURCES_SUITE:-bookworm}

missing=""
for t in buildah podman runc mmdebstrap; do
    command -v $t >/dev/null || missing="$missing $t"
done
if [ -n "$missing" ]; then
    echo "skip: image test needs$missing (apt-get install buildah podman runc mmdebstrap)"
    exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "skip: image test needs root (mmdebstrap, buildah chroot isolation)"
    exit 77
fi

mkdir -p "$work"
store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
pod() { podman "${store[@]}" --runtime runc --cgroup-manager cgroupfs "$@"; }
run() {
    pod run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=1000:1000 "$@"
}
failures=0
pass() { echo "ok   $*"; }
bad() { echo "FAIL $*"; failures=$((failures + 1)); }
t0=$(date +%s)
step() { echo "---- $* ($(( $(date +%s) - t0 )) s)"; }

# rootfs NAME MMDEBSTRAP-ARGS...: make $work/NAME.tar once, import it as
# localhost/$tag/NAME (again only when the storage lost it).
rootfs() {
    local name=$1; shift
    if [ ! -s "$work/$name.tar" ]; then
        mmdebstrap --quiet "$@" "$work/$name.part.tar" >"$work/$name.log" 2>&1 \
            || { echo "FAIL mmdebstrap $name"; tail -n 20 "$work/$name.log"; exit 1; }
        # variant extract runs no hooks: busybox's applet links are added
        # to the tarball here.
        if [ "$name" = busybox ]; then
            rm -rf "$work/links"; mkdir -p "$work/links/bin"
            for a in sh cp ls cat mkdir; do ln -s busybox "$work/links/bin/$a"; done
            tar -rf "$work/$name.part.tar" -C "$work/links" ./bin/sh ./bin/cp ./bin/ls \
                ./bin/cat ./bin/mkdir || exit 1
        fi
        mv "$work/$name.part.tar" "$work/$name.tar"
    fi
    # The image is imported again whenever the tarball is newer.
    if ! pod image exists "localhost/$tag/$name" ||
            [ "$work/$name.tar" -nt "$work/$name.imported" ]; then
        pod import --quiet "$work/$name.tar" "localhost/$tag/$name" >/dev/null ||
            { echo "FAIL podman import $name"; exit 1; }
        touch "$work/$name.imported"
    fi
}

step "base images (mmdebstrap)"
rootfs builder --variant=minbase $suite_builder
rootfs busybox --variant=extract --include=busybox-static,libc6 $suite_other
rootfs bullseye --variant=minbase --include=libfabric1 $suite_builder
rootfs bookworm --variant=minbase --include=libfabric1 $suite_other
pass "base images: $(ls "$work"/*.tar | xargs -n1 basename | tr '\n' ' ')"

step "buildah bud --target agent (DEPS_FROM=debian, $sources_suite sources)"
img=localhost/$tag/efa-preflight:agent
if buildah "${store[@]}" bud --isolation chroot --target agent \
        --build-arg BUILDER_IMAGE=localhost/$tag/builder \
        --build-arg AGENT_BASE_IMAGE=localhost/$tag/busybox \
        --build-arg DEPS_FROM=debian --build-arg DEBIAN_SOURCES_SUITE=$sources_suite \
        -t "$img" -f Dockerfile . >"$work/build.log" 2>&1; then
    pass "agent image built: $(grep -m1 'glibc baseline' "$work/build.log")"
else
    bad "buildah bud --target agent"; tail -n 30 "$work/build.log"
    echo "image: $failures failed checks"; exit 1
fi
size=$(pod image inspect --format '{{.Size}}' "$img")
echo "     image size: $size bytes"

step "1. version"
out=$(run "$img" /usr/local/bin/efa-preflight version 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q '^efa-preflight [0-9]' <<<"$out"; then
    pass "version in the agent image: $(head -n 1 <<<"$out")"
else bad "version (rc=$rc)"; echo "$out" | tail -n 10 | sed 's/^/     /'; fi

# local_run WHERE IMAGE BIN [podman args]: 2 local ranks over tcp, no
# network but loopback. Prints the summary; returns the agent's exit code.
local_run() {
    local where=$1 image=$2 bin=$3; shift 3
    local out rc
    out=$(run "$@" "$image" "$bin" local --ranks 2 --fabric-provider tcp --no-imds 2>&1); rc=$?
    echo "$out" >"$work/$(tr ' /()' '____' <<<"$where").log"
    summary=$(grep -m1 '^summary:' <<<"$out")
    if [ -z "$summary" ]; then
        bad "$where: local --ranks 2 printed no summary (rc=$rc)"
        echo "$out" | tail -n 15 | sed 's/^/     /'
        return 99
    fi
    echo "     $where: exit $rc, $summary"
    return $rc
}

# With libfabric in the rootfs the tcp provider stands in for EFA: both
# ranks run the all_reduce and the verdict is a warning, exit 0.
want_fallback_pass() {
    local where=$1 rc=$2
    if [ "$rc" -eq 0 ] && grep -q 'WARN ProviderFallback' <<<"$summary" \
            && grep -q '^# Avg bus bandwidth' "$work/$(tr ' /()' '____' <<<"$where").log"; then
        pass "$where: local --ranks 2 --fabric-provider tcp ran the all_reduce: $summary"
    else
        bad "$where: want exit 0 with WARN ProviderFallback and a bandwidth table (exit $rc)"
        tail -n 15 "$work/$(tr ' /()' '____' <<<"$where").log" | sed 's/^/     /'
    fi
}

step "2. local --ranks 2 in the agent image"
# The agent image carries no libfabric (the copy-in pattern runs the
# binary where the training image's libfabric is): the agent must say so,
# fail the fabric and exit 1, not crash or pass.
local_run "agent image" "$img" /usr/local/bin/efa-preflight
rc=$?
if [ $rc -eq 1 ] && grep -q 'FAIL FabricUnavailable' <<<"$summary" \
        && grep -q 'libfabric not loadable.*libfabric.so.1: cannot open shared object file' \
            "$work/agent_image.log"; then
    pass "agent image: local --ranks 2 --fabric-provider tcp runs and names the missing libfabric: $summary"
else
    bad "agent image: want exit 1, FabricUnavailable naming libfabric.so.1 (exit $rc)"
    tail -n 15 "$work/agent_image.log" | sed 's/^/     /'
fi

step "3. copy-in: agent image copies, bookworm runs"
pod volume rm -f efa-preflight-copy >/dev/null 2>&1
pod volume create efa-preflight-copy >/dev/null
if run -v efa-preflight-copy:/preflight "$img" >"$work/copy.log" 2>&1; then
    pass "the agent image's default command copied the binary into the volume"
else bad "copy into the volume"; sed 's/^/     /' "$work/copy.log"; fi
local_run "copy-in (bookworm)" "localhost/$tag/bookworm" /preflight/efa-preflight \
    -v efa-preflight-copy:/preflight:ro
want_fallback_pass "copy-in (bookworm)" $?

step "4. glibc baseline: the binary in the bullseye rootfs"
out=$(run -v efa-preflight-copy:/preflight:ro "localhost/$tag/bullseye" \
          sh -c 'ldd --version | head -n 1; /preflight/efa-preflight version' 2>&1); rc=$?
if [ $rc -eq 0 ] && grep -q '2\.31' <<<"$out" && grep -q '^efa-preflight [0-9]' <<<"$out"; then
    pass "bullseye (glibc 2.31): $(tr '\n' ' ' <<<"$out")"
else bad "binary in bullseye (rc=$rc)"; echo "$out" | sed 's/^/     /'; fi
local_run "glibc 2.31 (bullseye)" "localhost/$tag/bullseye" /preflight/efa-preflight \
    -v efa-preflight-copy:/preflight:ro
want_fallback_pass "glibc 2.31 (bullseye)" $?
pod volume rm -f efa-preflight-copy >/dev/null 2>&1

step "buildah bud --target webhook (WEBHOOK_BASE_IMAGE: the bookworm rootfs)"
wimg=localhost/$tag/efa-preflight:webhook
if buildah "${store[@]}" bud --isolation chroot --target webhook \
        --build-arg WEBHOOK_BASE_IMAGE=localhost/$tag/bookworm \
        -t "$wimg" -f Dockerfile . >"$work/build-webhook.log" 2>&1; then
    pass "webhook image built ($(pod image inspect --format '{{.Size}}' "$wimg") bytes)"
    # as the chart's Deployment runs it
    # (--read-only: podman mounts a tmpfs on /tmp, as the chart's emptyDir)
    wrun() { run --read-only --user 65532:65532 "$@"; }

    step "5. version in the webhook image"
    out=$(wrun --entrypoint sh "$wimg" -c 'efa-preflight version && ldd /usr/local/bin/efa-preflight' 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q '^efa-preflight [0-9]' <<<"$out" && ! grep -q 'not found' <<<"$out" \
            && grep -q libmicrohttpd <<<"$out"; then
        pass "webhook image: version as 65532 on a read-only root, libmicrohttpd linked, no library missing"
    else bad "webhook image: version (rc=$rc)"; echo "$out" | tail -n 15 | sed 's/^/     /'; fi

    step "6. the webhook serves"
    rm -rf "$work/wh-tls"; mkdir -p "$work/wh-tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
        -subj /CN=efa-preflight-webhook -keyout "$work/wh-tls/tls.key" -out "$work/wh-tls/tls.crt" \
        >/dev/null 2>&1 && chmod 644 "$work/wh-tls/tls.key" || bad "test certificate (openssl)"
    # The webhook in the background, then a TCP connection to its port
    # through bash's /dev/tcp, in the one container (its own loopback).
    out=$(wrun -v "$work/wh-tls:/tls:ro" -e POD_NAMESPACE=efa-preflight \
              -e EFA_PREFLIGHT_AGENT_IMAGE=registry.invalid/efa-preflight:0.1.0-agent \
              --entrypoint bash "$wimg" -c '
        efa-preflight webhook --webhook-addr 127.0.0.1 --webhook-port 8443 \
            --tls-cert-file /tls/tls.crt --tls-key-file /tls/tls.key >/tmp/out 2>&1 &
        for i in $(seq 1 100); do
            grep -q "serving https" /tmp/out && (exec 3<>/dev/tcp/127.0.0.1/8443) 2>/dev/null \
                && { echo "connected after $i tries"; cat /tmp/out; kill $!; exit 0; }
            kill -0 $! 2>/dev/null || break
            sleep 0.1
        done
        cat /tmp/out; exit 1' 2>&1); rc=$?
    if [ $rc -eq 0 ] && grep -q 'serving https on port 8443' <<<"$out"; then
        pass "webhook image: efa-preflight webhook serves HTTPS on 8443 ($(head -n 1 <<<"$out"))"
    else bad "webhook image: the webhook did not serve (rc=$rc)"; echo "$out" | tail -n 15 | sed 's/^/     /'; fi
else
    bad "buildah bud --target webhook"; tail -n 30 "$work/build-webhook.log"
fi

echo "image: $failures failed checks, $(( $(date +%s) - t0 )) s"
[ $failures -eq 0 ]
