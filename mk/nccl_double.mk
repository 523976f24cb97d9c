# NCCL/CUDA test double and the gpulib declaration check.
#   tests/double/*.c -> $(BUILD)/double/libnccl-double.so, libcudart-double.so
# The double is a host-memory stand-in for libnccl.so.2 and libcudart.so that
# the engine loads through EFA_PREFLIGHT_NCCL / EFA_PREFLIGHT_CUDART.

CUDA_INCLUDE ?= /usr/local/cuda/include

# Compare gpulib's declarations with the real headers where they exist.
ifneq ($(wildcard $(CUDA_INCLUDE)/nccl.h),)
$(BUILD)/tests/unit/test_gpulib_decls.o: PF_CFLAGS += -isystem $(CUDA_INCLUDE)
endif
