# provider-postgresql
#
#   make dev        run the provider for real against a local control plane
#                   and a local TLS PostgreSQL (Ctrl-C or `make dev-down` stops it)
#   make test       unit + integration tests (real kube-apiserver/etcd, real PostgreSQL)
#   make generate   regenerate deepcopy, CRDs and managed-resource method sets
#   make lint       gofmt, go vet and golangci-lint
#   make help       every target

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Pinned tool versions. Each is built from the Go module proxy into the cache
# below, outside the repository, keyed by version.
CONTROLLER_GEN_VERSION := v0.20.0
GOLANGCI_LINT_VERSION  := v2.15.0

CACHE_DIR := $(or $(PROVIDER_POSTGRESQL_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/provider-postgresql)
export PROVIDER_POSTGRESQL_CACHE := $(CACHE_DIR)
TOOLS_BIN      := $(CACHE_DIR)/bin
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

OUTPUT_DIR := _output
# Test packages each start their own API server and PostgreSQL: two at a
# time fits the 2-core machines this project targets.
TEST_PARALLEL ?= 2
TEST_TIMEOUT  ?= 30m

# PostgreSQL: the whole suite runs on PG_VERSION (default: Debian's
# packaged server, 15 on bookworm, which hack/ensure-postgresql.sh installs);
# the packages that talk to PostgreSQL then run again on each of
# PG_VERSIONS, fetched once by hack/postgresql.sh. PG_VERSION=17 make test
# runs everything on 17 alone; PG_VERSION also serves make dev and bench.
# Those packages also run with a managed-service admin (a login role with
# CREATEDB and CREATEROLE and no SUPERUSER, as RDS, Cloud SQL and Azure
# give) on each of PG_MANAGED_VERSIONS.
PG_VERSION  ?=
PG_VERSIONS ?= $(if $(PG_VERSION),,16 17 18)
PG_MANAGED_VERSIONS ?= $(if $(PG_VERSION),$(PG_VERSION),debian 17)
PG_PACKAGES := ./internal/clients/postgres/ ./internal/controller/... ./internal/fixture/pgserver/ ./e2e/
PG_BIN       = $(if $(PG_VERSION),PG_BIN_DIR="$$(hack/postgresql.sh $(PG_VERSION))")

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: dev
dev: tools ## Start a local control plane, a TLS PostgreSQL and the provider; Ctrl-C stops everything.
	hack/ensure-postgresql.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" go run ./hack/devenv

.PHONY: dev-down
dev-down: ## Stop a `make dev` started in another terminal and remove what it left.
	go run ./hack/devenv -down

.PHONY: build
build: ## Build the provider binary into _output/bin.
	CGO_ENABLED=0 go build -trimpath -o $(OUTPUT_DIR)/bin/provider ./cmd/provider

.PHONY: xpkg
xpkg: ## Build the provider, tenant function and tenant Configuration packages into _output/xpkg, without Docker.
	hack/xpkg.sh

##@ Code generation

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate method sets, deepcopy and CRDs.
	go run ./hack/mrgen ./apis/database/v1alpha1
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	rm -rf package/crds
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./apis/... output:crd:artifacts:config=package/crds

.PHONY: check-generate
check-generate: generate ## Fail when generated files differ from what is committed.
	@if [[ -n "$$(git status --porcelain -- apis package)" ]]; then \
		echo "generated files are out of date; run 'make generate' and commit:"; \
		git status --porcelain -- apis package; git --no-pager diff --stat -- apis package; exit 1; \
	fi
	@echo "generated files are up to date"

##@ Checks

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run gofmt, go vet and golangci-lint, and refuse tracked binaries.
	hack/check-tracked-files.sh
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$bad" ]]; then echo "gofmt would change: $$bad"; exit 1; fi
	go vet ./...
	$(GOLANGCI_LINT) run ./...

.PHONY: tools
tools: ## Build (or reuse) etcd, kube-apiserver, kube-controller-manager, kubectl, Crossplane core and RBAC manager, its CLI and function-auto-ready.
	hack/controlplane-tools.sh
	hack/crossplane-tools.sh

.PHONY: test
test: tools ## Unit and integration tests against a real API server and PostgreSQL (every supported major).
	hack/ensure-postgresql.sh
	hack/ensure-jdbc.sh >/dev/null
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
		go test -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -count=1 ./...
	@for v in $(PG_VERSIONS); do \
		echo "== PostgreSQL $$v: the packages that talk to PostgreSQL"; \
		PG_BIN_DIR="$$(hack/postgresql.sh $$v)" KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
			go test -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -count=1 $(PG_PACKAGES) || exit 1; \
	done
	@for v in $(PG_MANAGED_VERSIONS); do \
		echo "== PostgreSQL $$v, managed-service admin (CREATEDB CREATEROLE, no SUPERUSER): the packages that talk to PostgreSQL"; \
		PROVIDERTEST_ADMIN=managed PG_BIN_DIR="$$(hack/postgresql.sh $$v)" KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
			go test -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -count=1 $(PG_PACKAGES) || exit 1; \
	done

.PHONY: bench
bench: tools ## Benchmarks (report ratios; see docs/performance.md), the comparison with provider-sql included.
	hack/ensure-postgresql.sh
	hack/peer-tools.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" PEER_PROVIDER_SQL_DIR="$$(hack/peer-tools.sh --dir)" \
		go test -v -run '^$$' -bench . -benchtime 1x -timeout 120m ./...

.PHONY: bench-peer
bench-peer: tools ## Issue 17's workload on this provider and on provider-sql (pinned in tools/provider-sql), side by side.
	hack/ensure-postgresql.sh
	hack/peer-tools.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" PEER_PROVIDER_SQL_DIR="$$(hack/peer-tools.sh --dir)" \
		go test -v -run '^$$' -bench BenchmarkPeer -benchtime 1x -timeout 60m ./internal/controller/

.PHONY: clean
clean: ## Remove build output (the tool cache outside the repo is kept).
	rm -rf $(OUTPUT_DIR)

$(CONTROLLER_GEN):
	@echo "building controller-gen $(CONTROLLER_GEN_VERSION) into $(TOOLS_BIN)"
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN)/.controller-gen go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(TOOLS_BIN)/.controller-gen/controller-gen $@

$(GOLANGCI_LINT):
	@echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(TOOLS_BIN) (takes a few minutes once)"
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN)/.golangci-lint go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS_BIN)/.golangci-lint/golangci-lint $@
