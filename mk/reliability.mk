# The reliability table of docs/internals/reliability.md (scripts/reliability_table.py), from the
# results the last `make test`, `make fuzz`/`fuzz-smoke` and `make asan`
# left in $(BUILD)/test-logs, build/fuzz/fuzz-results and build/asan.
# Criterion's JSON is refreshed here (about 20 s), the rest is only read.
#   make reliability   print the table and update that page between the
#                      <!-- reliability-table --> markers
.PHONY: reliability

$(BUILD)/test-logs/unit.json: $(BUILD)/unit_tests
	@mkdir -p $(dir $@)
	$(BUILD)/unit_tests --jobs 2 --json=$@ >$(BUILD)/test-logs/unit.out 2>&1 || true

reliability: $(BUILD)/test-logs/unit.json
	python3 scripts/reliability_table.py --build $(BUILD) --doc docs/internals/reliability.md
