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
PF_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
             -Wvla -Wformat=2 -Wno-unknown-warning-option -Wno-format-truncation -MMD -MP -Iagent $(SANFLAGS)
PF_LIBS := -lcurl -lcjson -lyaml -ldl -lpthread -lm

# agent/mpishim/ is built separately with mpicc (mk/mpi.mk), never linked in.
AGENT_SRCS := $(filter-out agent/main.c agent/mpishim/%,$(wildcard agent/*.c agent/*/*.c))
AGENT_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(AGENT_SRCS)) $(BUILD)/agent/catalog_blob.o
MAIN_OBJ   := $(BUILD)/agent/main.o
UNIT_SRCS  := $(wildcard tests/unit/*.c)
UNIT_OBJS  := $(patsubst %.c,$(BUILD)/%.o,$(UNIT_SRCS))
BIN        := $(BUILD)/efa-preflight

.PHONY: all deps test unit integration run asan clean

all: $(BIN)

deps:
	@scripts/deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) -c $< -o $@

# The catalog is embedded as bytes: no generated C, no runtime file.
$(BUILD)/agent/catalog_blob.o: agent/catalog_blob.S agent/catalog.yaml
	@mkdir -p $(dir $@)
	$(CC) -c -DCATALOG_FILE='"agent/catalog.yaml"' $< -o $@

$(BIN): $(MAIN_OBJ) $(AGENT_OBJS)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(PF_LIBS)

$(BUILD)/unit_tests: $(UNIT_OBJS) $(AGENT_OBJS)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(PF_LIBS) -lcriterion

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
