# What `efa-preflight monitor` costs a node (bench/monitor_cost; results in
# bench/results/monitor.md): 10 minutes at a 1 s interval on the p5 fixture,
# one NIC degrading then recovering. Not part of `make bench` (10 minutes).
#   make bench-monitor
.PHONY: bench-monitor
bench-monitor: $(BIN)
	BUILD=$(BUILD) bench/monitor_cost

# monitor with 300 hostile connections open (issue 37): latency of legitimate
# requests, RSS, SIGTERM exit (bench/http_hostile; results in
# bench/results/monitor.md).
.PHONY: bench-monitor-hostile
bench-monitor-hostile: $(BIN)
	PF_BIN=$(BIN) bench/http_hostile monitor
