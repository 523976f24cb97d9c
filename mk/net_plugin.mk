# NCCL net plugin stand-ins for the probe's tests (tests/fakes/fake_net_plugin.c):
#   libnccl-net-fake.so     exports ncclNetPlugin_v9
#   libnccl-net-broken.so   needs libpf-plugin-dep.so, which sits in deps/,
#                           off every search path, so dlopen fails on it

NET_PLUGIN_DIR := $(BUILD)/test-helpers
NET_PLUGIN_FAKE := $(NET_PLUGIN_DIR)/libnccl-net-fake.so
NET_PLUGIN_BROKEN := $(NET_PLUGIN_DIR)/libnccl-net-broken.so
NET_PLUGIN_DEP := $(NET_PLUGIN_DIR)/deps/libpf-plugin-dep.so

$(NET_PLUGIN_FAKE): tests/fakes/fake_net_plugin.c
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<

$(NET_PLUGIN_DEP): tests/fakes/fake_plugin_dep.c
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) -fPIC -shared -o $@ $<

$(NET_PLUGIN_BROKEN): tests/fakes/fake_net_plugin.c $(NET_PLUGIN_DEP)
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) -DNEEDS_DEP -fPIC -shared -o $@ $< \
	    -L$(dir $(NET_PLUGIN_DEP)) -lpf-plugin-dep

test-helpers: $(NET_PLUGIN_FAKE) $(NET_PLUGIN_BROKEN)
$(BUILD)/unit_tests: | $(NET_PLUGIN_FAKE) $(NET_PLUGIN_BROKEN)
