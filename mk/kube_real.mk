# The agent against a real kube-apiserver (tests/kube_real/lib.sh, the
# "real" side of tests/integration/kube/scenarios, run as test_kreal_NAME):
# etcd and kube-apiserver v1.20.2 started
# per test on this host, the chart's RBAC applied, TokenRequest tokens.
#   make kube-apiserver   build/kube/kube-apiserver, built from Debian 12's
#                         `kubernetes` source package when missing (about
#                         17 min on 2 busy cores; scripts/kube_real_build.sh)
#   make kube-real        that, then every scenario's real side (test_kreal_*)
# The binary is cached in PF_KUBE_CACHE (default /var/cache/pf-kube) and
# hard-linked here, so other clones on the machine reuse it; PF_KUBE_APISERVER
# names a binary built elsewhere. Without build/kube/kube-apiserver (and
# PF_KUBE_APISERVER) `make test` skips the real sides (exit 77).
# Needs: golang-1.19-go dpkg-dev (a deb-src line for bookworm) to build;
# etcd-server python3-yaml iproute2 openssl to run.
KUBE_APISERVER := build/kube/kube-apiserver
PF_KUBE_CACHE ?= /var/cache/pf-kube

.PHONY: kube-apiserver kube-real deps-kube

kube-apiserver: $(KUBE_APISERVER)

# The "kube" group of scripts/packages.txt (etcd-server, golang-1.19-go,
# dpkg-dev) on top of the test group.
deps-kube:
	@scripts/deps.sh --kube

$(KUBE_APISERVER): | deps-kube
	PF_KUBE_CACHE=$(PF_KUBE_CACHE) scripts/kube_real_build.sh $@

# PF_NO_SKIP: a scenario that skips (no etcd, no binary) fails the target.
kube-real: deps-kube $(BIN) test-helpers $(KUBE_APISERVER)
	BUILD=$(BUILD) PF_NO_SKIP=1 PF_KUBE_APISERVER=$(CURDIR)/$(KUBE_APISERVER) tests/integration/run.sh kreal_
