# The rendezvous's own helpers, linked against the agent's objects:
#   $(BUILD)/test-helpers/rdv_stranger  bad HELLOs of every kind, for the
#                                       integration tests
#   $(BUILD)/bench/rdv_sim              rank 0 and thousands of simulated
#                                       peers (bench/scale_rendezvous.sh)
#   make bench-rdv                      the table in bench/results/scale.md

RDV_STRANGER := $(BUILD)/test-helpers/rdv_stranger
RDV_SIM      := $(BUILD)/bench/rdv_sim

$(RDV_STRANGER): tests/fakes/rdv_stranger.c $(BUILD)/libagent.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(PF_CFLAGS)) $(CFLAGS) -o $@ $< $(BUILD)/libagent.a $(PF_LIBS)

$(RDV_SIM): bench/rdv_sim.c $(BUILD)/libagent.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(PF_CFLAGS)) $(CFLAGS) -o $@ $< $(BUILD)/libagent.a $(PF_LIBS)

test-helpers: $(RDV_STRANGER)

.PHONY: bench bench-rdv
bench: bench-rdv

bench-rdv: $(RDV_SIM)
	BUILD=$(BUILD) bench/scale_rendezvous.sh
