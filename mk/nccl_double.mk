# NCCL/CUDA test double and the gpulib declaration check.
#   tests/fakes/gpu/*.c -> $(BUILD)/double/libgpu-double.so (both libraries)
# The double is a host-memory stand-in for libnccl.so.2 and libcudart.so that
# the engine loads through EFA_PREFLIGHT_NCCL / EFA_PREFLIGHT_CUDART.

CUDA_INCLUDE ?= /usr/local/cuda/include

# Compare gpulib's declarations with the real headers where they exist.
ifneq ($(wildcard $(CUDA_INCLUDE)/nccl.h),)
$(BUILD)/tests/unit/util/test_gpulib_decls.o: PF_CFLAGS += -isystem $(CUDA_INCLUDE)
endif

GPU_DOUBLE := $(BUILD)/double/libgpu-double.so

$(GPU_DOUBLE): tests/fakes/gpu/gpu_double.c tests/fakes/gpu/meet.c tests/fakes/gpu/meet.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wvla \
	    $(CFLAGS) $(SANFLAGS) -fPIC -shared -o $@ $(filter %.c,$^)

test-helpers: $(GPU_DOUBLE)

# The engine's unit tests load the double from next to build/unit_tests.
$(BUILD)/unit_tests: | $(GPU_DOUBLE)
