# NVML test double and the nvmllib declaration check.
#   tests/fakes/nvml/nvml_double.c -> $(BUILD)/double/libnvml-double.so
# The GPU health probe loads it through EFA_PREFLIGHT_NVML; a fixture file
# (PF_NVML_FIXTURE) describes the GPUs and their faults.

NVML_INCLUDE ?= /usr/local/cuda/include

# Compare nvmllib's declarations with the real nvml.h where it exists.
ifneq ($(wildcard $(NVML_INCLUDE)/nvml.h),)
$(BUILD)/tests/unit/util/test_nvmllib_decls.o: PF_CFLAGS += -isystem $(NVML_INCLUDE)
endif

NVML_DOUBLE := $(BUILD)/double/libnvml-double.so

$(NVML_DOUBLE): tests/fakes/nvml/nvml_double.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wvla \
	    -Wno-format-truncation $(CFLAGS) $(SANFLAGS) -fPIC -shared -o $@ $<

test-helpers: $(NVML_DOUBLE)

# The GPU health unit tests load the double from next to build/unit_tests.
$(BUILD)/unit_tests: | $(NVML_DOUBLE)
