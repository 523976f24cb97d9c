# The Helm chart as a team hosts it: `make chart-package` writes
# build/chart/efa-preflight-<version>.tgz and its repository index.yaml
# (helm package + helm repo index), with the project's renderer
# (tests/helm_render, built from Debian's Go packages: make deps).
HELM_RENDER := $(BUILD)/helm-render
CHART_DIR   := charts/efa-preflight

$(HELM_RENDER): tests/helm_render/main.go
	@mkdir -p $(dir $@)
	GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= go build -o $@ ./tests/helm_render

.PHONY: chart-package
chart-package: $(HELM_RENDER)
	$(HELM_RENDER) package $(CHART_DIR) -d $(BUILD)/chart
