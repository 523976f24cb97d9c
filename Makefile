# efa-preflight — build, test, run.
#   make            build/efa-preflight
#   make run        the main job on the embedded default (local ranks)
#   make test       unit (Criterion) + integration tests
#   make asan       the same tests under ASan + UBSan
# Fragments in mk/*.mk add targets (bench, static, fuzz, ...).

CC      ?= cc
BUILD   ?= build
PKGS    := libcurl libcjson yaml-0.1
CFLAGS  ?= -O2 -g
SANFLAGS ?=

# Hardening, in every build of the agent, its tests, the MPI shim and the
# static binary (tests/integration/test_hardening.sh reads it back from the
# binaries): stack protector, FORTIFY_SOURCE, CET (IBT and shadow stack on
# x86), PIE, full RELRO, no executable stack.
#   FORTIFY_SOURCE=3 where the compiler has __builtin_dynamic_object_size
#   (gcc >= 12, clang >= 9), else 2. It needs optimisation (glibc warns, and
#   -Werror fails, at -O0), and sanitizer builds leave it out: their
#   interceptors would not see the __*_chk variants.
#   CET: the compiler emits ENDBR64 and marks each object, but the linker
#   drops the mark when any input lacks it, and Debian's crt1.o does: -z ibt
#   -z shstk mark the output anyway. aarch64 gets branch protection instead.
comma := ,
pf_cc_ok = $(shell printf 'int main(void){return 0;}\n' | $(CC) -x c -Werror $(1) -o /dev/null - 2>/dev/null && echo y)
PF_FORTIFY_LEVEL := $(if $(call pf_cc_ok,-O2 -include string.h -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3),3,2)
PF_OPTIMIZED = $(filter -O1 -O2 -O3 -Os -Og -Ofast -O,$(CFLAGS))
PF_FORTIFY = $(if $(SANFLAGS),,$(if $(PF_OPTIMIZED),-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=$(PF_FORTIFY_LEVEL)))
PF_CET_CFLAGS := $(if $(call pf_cc_ok,-fcf-protection=full),-fcf-protection=full,$(if $(call pf_cc_ok,-mbranch-protection=standard),-mbranch-protection=standard))
PF_CET_LDFLAGS := $(if $(filter -fcf-protection=full,$(PF_CET_CFLAGS)),-Wl$(comma)-z$(comma)ibt -Wl$(comma)-z$(comma)shstk)
PF_HARDEN_CFLAGS = -fstack-protector-strong $(PF_CET_CFLAGS) $(PF_FORTIFY)
PF_HARDEN_LDFLAGS = -Wl,-z,relro,-z,now -Wl,-z,noexecstack $(PF_CET_LDFLAGS)

PF_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
             -Wvla -Wformat=2 -Wno-unknown-warning-option -Wno-format-truncation -MMD -MP -Iagent $(SANFLAGS)
PF_CFLAGS += $(PF_HARDEN_CFLAGS) -fPIE
PF_LDFLAGS = -pie $(PF_HARDEN_LDFLAGS)
# The embedded HTTP(S) server (util/httpd.c: webhook, monitor endpoints)
# needs libmicrohttpd and GnuTLS; PF_HTTPD=0 builds a stub instead (the
# glibc-only static binary: GnuTLS has no complete set of static archives).
PF_HTTPD ?= 1
PF_HTTPD_LIBS := $(if $(filter 1,$(PF_HTTPD)),-lmicrohttpd -lgnutls)
PF_LIBS := -lcurl -lcrypto -lcjson -lyaml $(PF_HTTPD_LIBS) -ldl -lpthread -lm

# agent/mpishim/ is built separately with mpicc (mk/mpi.mk), never linked in.
PF_HTTPD_SKIP := $(if $(filter 1,$(PF_HTTPD)),agent/util/httpd_none.c,agent/util/httpd.c)
AGENT_SRCS := $(filter-out agent/main.c agent/mpishim/% $(PF_HTTPD_SKIP),$(wildcard agent/*.c agent/*/*.c agent/*/*/*.c))
AGENT_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(AGENT_SRCS)) $(BUILD)/agent/catalog_blob.o
MAIN_OBJ   := $(BUILD)/agent/main.o
# Unit tests mirror agent/ (tests/unit/<folder>/test_<source>.c); the fakes
# they share live in tests/fakes/.
UNIT_SRCS  := $(wildcard tests/unit/*.c tests/unit/*/*.c tests/unit/*/*/*.c) \
              tests/fakes/fork_boot.c tests/fakes/free_port.c \
              tests/fakes/nic_fixture.c tests/fakes/run_fixture.c \
              tests/fakes/unit_files.c
UNIT_OBJS  := $(patsubst %.c,$(BUILD)/%.o,$(UNIT_SRCS))
BIN        := $(BUILD)/efa-preflight

.PHONY: all deps test unit integration run asan clean

all: $(BIN)

deps:
	@scripts/deps.sh

# Objects depend on the flags they were compiled with: a changed set
# (hardening, sanitizers, CFLAGS) rebuilds them instead of linking stale,
# unhardened objects.
PF_FLAGS_STAMP := $(BUILD)/.cflags
PF_FLAGS_NOW = $(CC) $(PF_CFLAGS) $(CFLAGS)
$(shell mkdir -p $(BUILD) && echo '$(PF_FLAGS_NOW)' | cmp -s - $(PF_FLAGS_STAMP) || \
        echo '$(PF_FLAGS_NOW)' > $(PF_FLAGS_STAMP))

$(BUILD)/%.o: %.c $(PF_FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) -c $< -o $@

# The catalog is embedded as bytes: no generated C, no runtime file.
$(BUILD)/agent/catalog_blob.o: agent/catalog_blob.S agent/catalog.yaml
	@mkdir -p $(dir $@)
	$(CC) -c -DCATALOG_FILE='"agent/catalog.yaml"' $< -o $@

$(BIN): $(MAIN_OBJ) $(AGENT_OBJS)
	$(CC) $(CFLAGS) $(SANFLAGS) $(PF_LDFLAGS) -o $@ $^ $(PF_LIBS)

$(UNIT_OBJS): PF_CFLAGS += -Itests/fakes

$(BUILD)/unit_tests: $(UNIT_OBJS) $(AGENT_OBJS)
	$(CC) $(CFLAGS) $(SANFLAGS) $(PF_LDFLAGS) -o $@ $^ $(PF_LIBS) -lcriterion

unit: deps $(BUILD)/unit_tests
	$(BUILD)/unit_tests --jobs 2

integration: deps $(BIN) test-helpers
	BUILD=$(BUILD) tests/integration/run.sh

test: deps $(BIN) $(BUILD)/unit_tests test-helpers
	$(BUILD)/unit_tests --jobs 2
	BUILD=$(BUILD) tests/integration/run.sh

# Helpers the tests need (test doubles, MPI shim...); fragments append.
.PHONY: test-helpers
test-helpers: $(BIN)

run: deps $(BIN)
	$(BIN) local --fabric-provider tcp --no-imds

asan:
	$(MAKE) BUILD=build/asan SANFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer' \
	    CFLAGS='-O1 -g' test

clean:
	rm -rf $(BUILD) build

-include mk/*.mk
-include $(shell find $(BUILD)/agent $(BUILD)/tests -name '*.d' 2>/dev/null)
