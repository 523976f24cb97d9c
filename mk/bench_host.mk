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

# The sum alone, 1/2/4/8 threads (bench/host_reduce.c; results in
# bench/results/host_allreduce.md, "Reduction alone").
$(BUILD)/bench/host_reduce: bench/host_reduce.c agent/collective/host/reduce.c agent/collective/host/reduce.h $(PF_FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(PF_CFLAGS) $(CFLAGS) $(PF_LDFLAGS) -o $@ bench/host_reduce.c agent/collective/host/reduce.c -lpthread

.PHONY: bench-host-reduce
bench-host-reduce: $(BUILD)/bench/host_reduce
	$(BUILD)/bench/host_reduce

# The engine over 1, 2, 4 and 8 loopback rails (bench/host_rails).
.PHONY: bench-host-rails
bench-host-rails: $(BIN)
	BUILD=$(BUILD) bench/host_rails
