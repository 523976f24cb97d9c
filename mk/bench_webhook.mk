# Admission webhook: its benchmark.
#   make bench-webhook   admission latency p50/p99 and RSS of `efa-preflight
#                        webhook` at 50 concurrent reviews over HTTPS
#                        (bench/webhook_latency; results in
#                        bench/results/webhook.md)

.PHONY: bench-webhook
bench: bench-webhook

bench-webhook: $(BIN)
	PF_BIN=$(BIN) bench/webhook_latency

# webhook with 300 hostile connections open (issue 37): latency of legitimate
# requests, RSS, SIGTERM exit (bench/http_hostile; results in
# bench/results/webhook.md).
.PHONY: bench-webhook-hostile
bench-webhook-hostile: $(BIN)
	PF_BIN=$(BIN) bench/http_hostile webhook
