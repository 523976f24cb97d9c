# Host engine benchmark against OpenMPI over TCP (bench/host_allreduce;
# results in bench/results/host_allreduce.md).
#   make bench-host
.PHONY: bench bench-host
bench: bench-host

$(BUILD)/bench/mpi_allreduce: bench/mpi_allreduce.c
	@mkdir -p $(dir $@)
	mpicc -O2 -Wall -Wextra -o $@ $<

bench-host: $(BIN) $(BUILD)/bench/mpi_allreduce
	BUILD=$(BUILD) bench/host_allreduce

# Host engine with 2 NICs per rank next to 1 (bench/host_nics; results in
# bench/results/host_allreduce.md, "2 NICs per rank").
.PHONY: bench-host-nics
bench-host-nics: $(BIN)
	BUILD=$(BUILD) bench/host_nics
