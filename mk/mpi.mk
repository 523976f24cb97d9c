# The MPI shim, build/libpf-mpi.so: built with the site's mpicc whenever one
# exists (MPI=0 skips it), dlopened by the agent for --bootstrap mpi. The
# agent itself never links libmpi (agent/mpishim/pf_mpi_shim.h says why).
# Hardened like the agent (Makefile, PF_HARDEN_*), at its own -O2.
MPICC ?= mpicc
MPI ?= $(if $(shell command -v $(MPICC) 2>/dev/null),1,0)
MPI_SHIM := $(BUILD)/libpf-mpi.so

ifeq ($(MPI),1)
$(MPI_SHIM): agent/mpishim/pf_mpi_shim.c agent/mpishim/pf_mpi_shim.h $(PF_FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wvla -Wno-format-truncation -O2 -g \
	    -fstack-protector-strong $(PF_CET_CFLAGS) \
	    -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=$(PF_FORTIFY_LEVEL) \
	    -fPIC -shared $(PF_HARDEN_LDFLAGS) -o $@ $(filter %.c,$^)

.PHONY: mpi-shim
mpi-shim: $(MPI_SHIM)
all: $(MPI_SHIM)
test-helpers: $(MPI_SHIM)
endif
