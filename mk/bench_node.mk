# Node probe: its benchmark and the helpers its tests need.
#   make bench-node   wall time and peak RSS of `efa-preflight node` on the
#                     p5 fixture (bench/node_probe; results in
#                     bench/results/node_probe.md)

NODE_FAKE_FABRIC := $(BUILD)/test-helpers/libfabric-fake.so.1

.PHONY: bench bench-node
bench: bench-node

bench-node: $(BIN) $(NODE_FAKE_FABRIC)
	BUILD=$(BUILD) bench/node_probe

# A stand-in libfabric (fi_getinfo answers with $$PF_FAKE_FI_EFA_DOMAINS
# efa domains) so fixture runs can reach a passing verdict.
$(NODE_FAKE_FABRIC): tests/fakes/fake_libfabric.c
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<

test-helpers: $(NODE_FAKE_FABRIC)
# The probe's unit tests dlopen it too, so `make unit` builds it first.
$(BUILD)/unit_tests: | $(NODE_FAKE_FABRIC)
