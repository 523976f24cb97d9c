# syntax=docker/dockerfile:1
#
# efa-preflight images. Three targets:
#
#   agent  the glibc-only binary alone (+ busybox and glibc), for the copy-in
#          pattern: an initContainer copies /usr/local/bin/efa-preflight into
#          an emptyDir and a second one runs it inside the training image.
#   full   the binary plus NCCL, aws-ofi-nccl and the EFA libfabric on a CUDA
#          runtime base, for the pre-flight DaemonSet and the `full` pattern.
#
#   webhook  `efa-preflight webhook` (chart: webhook.enabled), the binary
#          linked dynamically with its HTTP(S) server (libmicrohttpd over
#          GnuTLS, which have no complete set of static archives).
#
#   docker build --target agent   -t REPO:0.1.0-agent   .
#   docker build --target full    -t REPO:0.1.0-full    .
#   docker build --target webhook -t REPO:0.1.0-webhook .
#
# glibc baseline: the binary is built on Debian 11 (glibc 2.31), so it runs
# on any image with glibc >= 2.31 (Ubuntu 20.04+, Debian 11+, Amazon Linux
# 2023, the CUDA and AWS Deep Learning Container images). libcurl (with
# OpenSSL and zlib only), cJSON and libyaml are linked statically by
# `make static`; NCCL, CUDA and libfabric are dlopen()ed at run time.
# Every download is pinned by version, and by sha256 where the checksum is
# published; change them with --build-arg.
#
# DEPS_FROM=upstream (default) builds the agent's libcurl, cJSON and
# libfabric headers from those pinned upstream tarballs. DEPS_FROM=debian
# takes them from the builder's own Debian archive instead, as
# `make static-debian` does (apt-get source curl cjson, verified by apt
# against the signed Release files; libfabric-dev for the headers): for
# builders that reach Debian's mirror but not curl.se or GitHub, such as CI.

# Base images.
ARG BUILDER_IMAGE=debian:bullseye-slim
# The glibc variant: the agent (glibc-only) runs in its own image too.
ARG AGENT_BASE_IMAGE=busybox:1.36.1-glibc
# CUDA and NCCL of the `full` image must drive every GPU of the chart's
# instanceTypes: A100 (p4d, p4de), H100/H200 (p5, p5e, p5en) and B200
# (p6-b200), which needs CUDA >= 12.8 and NCCL >= 2.25 (sm_100).
# tests/manifests/check_dockerfile.py enforces the pairing.
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu22.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:12.8.1-runtime-ubuntu22.04
# The webhook's build and run base: Debian 12's libmicrohttpd 0.9.75, the
# version its tests run against.
ARG WEBHOOK_BASE_IMAGE=debian:bookworm-slim

# Third-party sources of the agent binary: upstream | debian (see above).
ARG DEPS_FROM=upstream
# DEPS_FROM=debian: the suite whose sources to build ("" = the builder's).
ARG DEBIAN_SOURCES_SUITE=
ARG CURL_VERSION=8.10.1
ARG CURL_SHA256=73a4b0e99596a09fa5924a4fb7e4b995a85fda0d18a2c02ab9cf134bebce04ee
ARG CJSON_VERSION=1.7.18
ARG CJSON_SHA256=cc6d93cc3b659037c34193ecc7be5a874a18c2ac67b24efe82db6a759b486b5d
# Headers only: the agent builds against libfabric's API and dlopens the
# library it finds at run time.
ARG LIBFABRIC_VERSION=1.22.0
ARG LIBFABRIC_SHA256=485e6cafa66c9e4f6aa688d2c9526e274c47fda3a783cf1dd8f7c69a07e2d5fe

# The GPU/fabric stack of the `full` image. Empty *_SHA256 = not checked.
ARG EFA_INSTALLER_VERSION=1.38.1
ARG EFA_INSTALLER_SHA256=
ARG AWS_OFI_NCCL_VERSION=1.13.0
ARG AWS_OFI_NCCL_SHA256=
# libnccl2 package version from the CUDA image's NVIDIA apt repository; the
# +cudaX.Y suffix is taken from the image's CUDA_VERSION.
ARG NCCL_VERSION=2.26.5-1

########################################################################
# builder: the glibc-only agent binary.
FROM ${BUILDER_IMAGE} AS builder
ARG DEPS_FROM
ARG DEBIAN_SOURCES_SUITE
ARG CURL_VERSION
ARG CURL_SHA256
ARG CJSON_VERSION
ARG CJSON_SHA256
ARG LIBFABRIC_VERSION
ARG LIBFABRIC_SHA256
RUN case "${DEPS_FROM}" in upstream|debian) ;; \
        *) echo "DEPS_FROM=${DEPS_FROM}: want upstream or debian" >&2; exit 1 ;; esac \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config ca-certificates curl xz-utils bzip2 unzip \
        binutils libssl-dev zlib1g-dev libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /deps

# DEPS_FROM=debian: the distribution's curl and cJSON sources, built by
# the same script as `make static-debian` (the same libcurl ./configure
# flags as below; test_dockerfile checks they agree), and Debian's
# libfabric headers. Nothing else is downloaded.
COPY mk/static-sources.sh /deps/static-sources.sh
RUN if [ "${DEPS_FROM}" = debian ]; then \
        apt-get update \
     && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            dpkg-dev make libfabric-dev \
     && STATIC_SOURCES_SUITE="${DEBIAN_SOURCES_SUITE}" /deps/static-sources.sh /deps/debian \
     && rm -rf /var/lib/apt/lists/*; \
    fi

# libcurl with only what the agent uses: HTTP(S) over OpenSSL, zlib. It is
# linked into the agent, so it gets the agent's hardening (the Makefile's
# PF_HARDEN_*; Debian 11's gcc 10 has FORTIFY_SOURCE up to 2); the agent's
# own objects get theirs from `make static`.
ARG HARDEN_CFLAGS="-O2 -fstack-protector-strong -fcf-protection=full -D_FORTIFY_SOURCE=2"
RUN [ "${DEPS_FROM}" = debian ] || { curl -fsSL -o curl.tar.xz "https://curl.se/download/curl-${CURL_VERSION}.tar.xz" \
 && echo "${CURL_SHA256}  curl.tar.xz" | sha256sum -c - \
 && tar -xf curl.tar.xz \
 && cd "curl-${CURL_VERSION}" \
 && ./configure CFLAGS="${HARDEN_CFLAGS}" \
        --prefix=/opt/curl --disable-shared --enable-static --with-pic \
        --with-openssl --with-zlib \
        --without-libpsl --without-libidn2 --without-nghttp2 --without-nghttp3 \
        --without-ngtcp2 --without-brotli --without-zstd --without-libssh2 \
        --without-libssh --without-librtmp --without-libgsasl --without-gssapi \
        --disable-ldap --disable-ldaps --disable-rtsp --disable-dict \
        --disable-telnet --disable-tftp --disable-pop3 --disable-imap \
        --disable-smb --disable-smtp --disable-gopher --disable-mqtt \
        --disable-ftp --disable-file --disable-manual --disable-docs \
        --without-ca-bundle --without-ca-path \
 && make -j"$(nproc)" \
 && make install; }

RUN [ "${DEPS_FROM}" = debian ] || { curl -fsSL -o cjson.zip "https://github.com/DaveGamble/cJSON/archive/refs/tags/v${CJSON_VERSION}.zip" \
 && echo "${CJSON_SHA256}  cjson.zip" | sha256sum -c - \
 && unzip -q cjson.zip \
 && test -f "cJSON-${CJSON_VERSION}/cJSON.c"; }

RUN [ "${DEPS_FROM}" = debian ] || { curl -fsSL -o libfabric.tar.bz2 \
        "https://github.com/ofiwg/libfabric/releases/download/v${LIBFABRIC_VERSION}/libfabric-${LIBFABRIC_VERSION}.tar.bz2" \
 && echo "${LIBFABRIC_SHA256}  libfabric.tar.bz2" | sha256sum -c - \
 && tar -xf libfabric.tar.bz2 "libfabric-${LIBFABRIC_VERSION}/include" \
 && test -f "libfabric-${LIBFABRIC_VERSION}/include/rdma/fabric.h"; }

WORKDIR /src/efa-preflight
COPY Makefile ./
COPY mk/ mk/
COPY agent/ agent/
# make static links the archives, then fails unless readelf shows nothing
# but glibc in NEEDED; it prints the glibc baseline.
# The Makefile adds the hardening flags (stack protector, FORTIFY_SOURCE,
# CET, PIE, full RELRO) to every object and the link; readelf shows them.
RUN if [ "${DEPS_FROM}" = debian ]; then \
        make static CURL_PREFIX=/deps/debian/curl CJSON_SRC=/deps/debian/cjson; \
    else \
        make static CURL_PREFIX=/opt/curl CJSON_SRC="/deps/cJSON-${CJSON_VERSION}" \
            STATIC_CFLAGS="-I/deps/libfabric-${LIBFABRIC_VERSION}/include"; \
    fi \
 && build/static/efa-preflight version \
 && readelf -d build/static/efa-preflight | grep -q BIND_NOW \
 && readelf -lW build/static/efa-preflight | grep -q GNU_RELRO

########################################################################
# agent: the binary alone, for the copy-in pattern.
FROM ${AGENT_BASE_IMAGE} AS agent
COPY --from=builder /src/efa-preflight/build/static/efa-preflight /usr/local/bin/efa-preflight
LABEL org.opencontainers.image.title="efa-preflight (agent binary)" \
      org.opencontainers.image.description="glibc-only efa-preflight binary to copy into a training image"
CMD ["cp", "/usr/local/bin/efa-preflight", "/preflight/efa-preflight"]

########################################################################
# ofi-build: aws-ofi-nccl against the EFA installer's libfabric.
FROM ${CUDA_DEVEL_IMAGE} AS ofi-build
ARG EFA_INSTALLER_VERSION
ARG EFA_INSTALLER_SHA256
ARG AWS_OFI_NCCL_VERSION
ARG AWS_OFI_NCCL_SHA256
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        curl ca-certificates libhwloc-dev make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /deps
# The EFA installer (libfabric under /opt/amazon/efa, rdma-core); no kernel
# module or limits: those belong to the host.
RUN curl -fsSL -o efa.tar.gz "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
 && if [ -n "${EFA_INSTALLER_SHA256}" ]; then echo "${EFA_INSTALLER_SHA256}  efa.tar.gz" | sha256sum -c -; fi \
 && tar -xf efa.tar.gz \
 && cd aws-efa-installer \
 && apt-get update \
 && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \
 && cd .. \
 && rm -rf aws-efa-installer efa.tar.gz /var/lib/apt/lists/*
RUN curl -fsSL -o ofi.tar.gz \
        "https://github.com/aws/aws-ofi-nccl/releases/download/v${AWS_OFI_NCCL_VERSION}-aws/aws-ofi-nccl-${AWS_OFI_NCCL_VERSION}.tar.gz" \
 && if [ -n "${AWS_OFI_NCCL_SHA256}" ]; then echo "${AWS_OFI_NCCL_SHA256}  ofi.tar.gz" | sha256sum -c -; fi \
 && tar -xf ofi.tar.gz \
 && cd "aws-ofi-nccl-${AWS_OFI_NCCL_VERSION}" \
 && ./configure --prefix=/opt/aws-ofi-nccl --with-libfabric=/opt/amazon/efa \
        --with-cuda=/usr/local/cuda --enable-platform-aws --disable-tests \
 && make -j"$(nproc)" \
 && make install
# The MPI shim for --bootstrap mpi, built with the installer's Open MPI (the
# same one the full image carries); the agent finds it next to itself.
COPY agent/mpishim/ /src/mpishim/
RUN mkdir -p /opt/efa-preflight \
 && /opt/amazon/openmpi/bin/mpicc -std=c11 -D_GNU_SOURCE -O2 -fPIC -shared \
        -o /opt/efa-preflight/libpf-mpi.so /src/mpishim/pf_mpi_shim.c

########################################################################
# full: binary + NCCL + aws-ofi-nccl + EFA libfabric on a CUDA runtime.
FROM ${CUDA_RUNTIME_IMAGE} AS full
ARG EFA_INSTALLER_VERSION
ARG EFA_INSTALLER_SHA256
ARG NCCL_VERSION
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        curl ca-certificates libhwloc15 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /deps
# The EFA installer (libfabric under /opt/amazon/efa, rdma-core); no kernel
# module or limits: those belong to the host.
RUN curl -fsSL -o efa.tar.gz "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
 && if [ -n "${EFA_INSTALLER_SHA256}" ]; then echo "${EFA_INSTALLER_SHA256}  efa.tar.gz" | sha256sum -c -; fi \
 && tar -xf efa.tar.gz \
 && cd aws-efa-installer \
 && apt-get update \
 && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \
 && cd .. \
 && rm -rf aws-efa-installer efa.tar.gz /var/lib/apt/lists/*
WORKDIR /
# The NCCL the DaemonSet tests with, pinned (the CUDA images hold libnccl2).
RUN cuda_mm=$(echo "${CUDA_VERSION}" | cut -d. -f1,2) \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        --allow-change-held-packages --allow-downgrades "libnccl2=${NCCL_VERSION}+cuda${cuda_mm}" \
 && apt-mark hold libnccl2 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=ofi-build /opt/aws-ofi-nccl /opt/aws-ofi-nccl
COPY --from=builder /src/efa-preflight/build/static/efa-preflight /usr/local/bin/efa-preflight
COPY --from=ofi-build /opt/efa-preflight/libpf-mpi.so /usr/local/bin/libpf-mpi.so
ENV LD_LIBRARY_PATH=/opt/aws-ofi-nccl/lib:/opt/amazon/efa/lib:/opt/amazon/openmpi/lib:${LD_LIBRARY_PATH}
LABEL org.opencontainers.image.title="efa-preflight (full)" \
      org.opencontainers.image.description="efa-preflight with NCCL, aws-ofi-nccl and the EFA libfabric"
CMD ["efa-preflight", "version"]

########################################################################
# webhook-build: the binary with the HTTP(S) server, against the base's own
# libraries (the static build leaves the server out: PF_HTTPD=0).
FROM ${WEBHOOK_BASE_IMAGE} AS webhook-build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config libcurl4-openssl-dev libssl-dev libcjson-dev libyaml-dev \
        libmicrohttpd-dev libgnutls28-dev libfabric-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src/efa-preflight
COPY Makefile ./
COPY mk/ mk/
COPY agent/ agent/
RUN make -j"$(nproc)" \
 && build/efa-preflight version \
 && readelf -d build/efa-preflight | grep -q 'libmicrohttpd'

########################################################################
# webhook: what the chart's webhook Deployment runs (no shell needed, no
# root: the chart runs it as 65532 on a read-only root filesystem).
FROM ${WEBHOOK_BASE_IMAGE} AS webhook
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libcurl4 libssl3 libcjson1 libyaml-0-2 libmicrohttpd12 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=webhook-build /src/efa-preflight/build/efa-preflight /usr/local/bin/efa-preflight
LABEL org.opencontainers.image.title="efa-preflight (webhook)" \
      org.opencontainers.image.description="efa-preflight admission webhook: injects the gate into Pods that request EFA"
USER 65532:65532
ENTRYPOINT ["efa-preflight"]
CMD ["webhook"]
