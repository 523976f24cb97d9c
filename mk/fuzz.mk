# Fuzzing (libFuzzer, clang): one target per parser, tests/fuzz/fuzz_*.c.
#   make fuzz          each target for FUZZ_SECONDS (default 300)
#   make fuzz-smoke    each target briefly (CI), plus every kept regression input
# Crashes found are fixed and their inputs kept in tests/fuzz/regressions/<target>/.
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BUILD   := build/fuzz
FUZZ_SAN     := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 30

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-bins

fuzz-build: deps
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CFLAGS='-O1 -g' SANFLAGS='$(FUZZ_SAN)' fuzz-bins

fuzz-bins: $(addprefix $(BUILD)/,$(FUZZ_TARGETS))

# An archive, so each target links only the objects its parser needs.
$(BUILD)/libagent.a: $(AGENT_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libagent.a
	$(CC) $(filter-out -MMD -MP,$(PF_CFLAGS)) $(CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $@ $(filter %.c %.a,$^) $(PF_LIBS)

fuzz: fuzz-build
	BUILD=$(FUZZ_BUILD) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	BUILD=$(FUZZ_BUILD) tests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)
