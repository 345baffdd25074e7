# provider-postgresql
#
#   make dev        run the provider for real against a local control plane
#                   and a local TLS PostgreSQL (Ctrl-C or `make dev-down` stops it)
#   make test       every test once: real kube-apiserver/etcd and PostgreSQL (the default major, superuser admin)
#   make test-unit  the server-free tests alone, in under a minute
#   make test-matrix  the version- and admin-dependent tests on PostgreSQL 15-18 x superuser/managed admin
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
# Test packages each start their own API server and PostgreSQL, and spend
# much of their time waiting on them: three at a time keeps the 2 cores
# this project targets busy (two left a third of the CPU idle).
TEST_PARALLEL ?= 3
TEST_TIMEOUT  ?= 30m
# The slowest packages (make test's summary lists them) start first, so
# that the two slots end together instead of one running the longest alone.
TEST_FIRST := ./internal/controller/ ./internal/controller/role/ ./e2e/install/ ./e2e/ ./internal/controller/boundary/
TEST_ALL    = $(TEST_FIRST) $$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}./{{.ImportPath}}/{{end}}' ./... | sed 's|^./github.com/ayatori/provider-postgresql/|./|' | grep -vxF $(patsubst %,-e %,$(TEST_FIRST)))
# -json feeds hack/testreport, which prints the output as go test would
# and ends with the slowest tests and packages.
GO_TEST = go test -json -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT)
REPORT  = go run ./hack/testreport

# PostgreSQL: make test runs on PG_VERSION (default: Debian's packaged
# server, 15 on bookworm, which hack/ensure-postgresql.sh installs; 16, 17
# and 18 are fetched once by hack/postgresql.sh); PG_VERSION also serves
# make dev and bench. make test-matrix runs the tests that declare
# tier.Versions or tier.Matrix (internal/fixture/tier) once per cell of
# MATRIX_CELLS, <major>/<admin>: a superuser admin, or a managed-service
# one (a login role with CREATEDB and CREATEROLE and no SUPERUSER, as RDS,
# Cloud SQL and Azure give).
# How make dev's tenants get their credentials: secret or openbao.
DELIVERY     ?= secret
PG_VERSION   ?=
MATRIX_CELLS ?= debian/superuser debian/managed 16/superuser 16/managed 17/superuser 17/managed 18/superuser 18/managed
PG_BIN        = $(if $(PG_VERSION),PG_BIN_DIR="$$(hack/postgresql.sh $(PG_VERSION))")

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: dev
dev: ## Start a local control plane, a TLS PostgreSQL and the provider (DELIVERY=openbao: tenants' credentials through a KV v2 server); Ctrl-C stops everything.
	hack/controlplane-tools.sh
	hack/crossplane-tools.sh --core
	@if [[ "$(DELIVERY)" == openbao ]]; then hack/openbao-tools.sh; fi
	hack/ensure-postgresql.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" go run ./hack/devenv -delivery=$(DELIVERY)

.PHONY: dev-down
dev-down: ## Stop a `make dev` started in another terminal and remove what it left.
	go run ./hack/devenv -down

.PHONY: build
build: ## Build the provider binary into _output/bin.
	CGO_ENABLED=0 go build -trimpath -o $(OUTPUT_DIR)/bin/provider ./cmd/provider

.PHONY: plugin
plugin: ## Build the kubectl pg plugin into _output/bin (put it on PATH: kubectl finds kubectl-pg).
	CGO_ENABLED=0 go build -trimpath -o $(OUTPUT_DIR)/bin/kubectl-pg ./cmd/kubectl-pg

.PHONY: krew
krew: ## Build the kubectl pg plugin's release archives and render its krew manifest (.krew.yaml) into _output/krew; VERSION=v0.1.0.
	go run ./hack/krew -version "$(or $(VERSION),$$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev))" -out $(OUTPUT_DIR)/krew

.PHONY: xpkg
xpkg: ## Build the provider, tenant function and tenant Configuration packages into _output/xpkg, without Docker.
	hack/xpkg.sh

##@ Code generation

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate method sets, deepcopy and CRDs.
	go run ./hack/mrgen ./apis/database/v1alpha1
	go run ./hack/promrule cluster/monitoring
	go run ./hack/tenantxrd configuration
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...
	rm -rf package/crds cmd/function-tenant/package/input
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./apis/database/... output:crd:artifacts:config=package/crds
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./apis/tenant/... output:crd:artifacts:config=cmd/function-tenant/package/input

.PHONY: check-generate
check-generate: generate ## Fail when generated files differ from what is committed.
	@if [[ -n "$$(git status --porcelain -- apis package cmd/function-tenant/package cluster/monitoring configuration)" ]]; then \
		echo "generated files are out of date; run 'make generate' and commit:"; \
		git status --porcelain -- apis package cmd/function-tenant/package cluster/monitoring configuration; git --no-pager diff --stat -- apis package cmd/function-tenant/package cluster/monitoring configuration; exit 1; \
	fi
	@echo "generated files are up to date"

##@ Checks

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run gofmt, go vet, the package layering check and golangci-lint, and refuse tracked binaries.
	hack/check-tracked-files.sh
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$bad" ]]; then echo "gofmt would change: $$bad"; exit 1; fi
	go vet ./...
	go test -count=1 -run '^TestLayering' ./internal/controller/
	$(GOLANGCI_LINT) run ./...

.PHONY: tools
tools: ## Build (or reuse) etcd, kube-apiserver (this version's and the oldest supported), kube-controller-manager, kubectl, Crossplane core and RBAC manager, its CLI, function-auto-ready, the KV v2 server (Vault dev mode), the External Secrets Operator and krew.
	hack/controlplane-tools.sh
	hack/controlplane-tools.sh --floor
	hack/crossplane-tools.sh
	hack/openbao-tools.sh
	hack/krew-tools.sh

.PHONY: test
test: tools ## Every test once, against a real API server and PostgreSQL (PG_VERSION, superuser admin); ends with the slowest.
	hack/ensure-postgresql.sh
	hack/ensure-jdbc.sh >/dev/null
	hack/ensure-promtool.sh >/dev/null
	hack/ensure-jq.sh
	go run ./hack/tiers check
	@mkdir -p $(OUTPUT_DIR)
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
		$(GO_TEST) $(TEST_ALL) | $(REPORT) -title "make test" -json $(OUTPUT_DIR)/test.json

# The admission-facing tests (CRD validation and defaults, the shipped
# admission policies, claim validation) on the oldest Kubernetes the
# provider supports (tools/kubernetes-floor).
FLOOR_PACKAGES := ./apis/database/v1alpha1/ ./configuration/ ./cluster/ ./internal/controller/lock/
FLOOR_IN_USE   := TestBoundDatabaseDeletionRefused|TestInstanceInUseRefused

.PHONY: test-floor
test-floor: tools ## The admission-facing tests on the oldest supported kube-apiserver (tools/kubernetes-floor).
	hack/ensure-postgresql.sh
	@mkdir -p $(OUTPUT_DIR)
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --floor --dir)" \
		PROVIDERTEST_KUBE_VERSION="$$(hack/tool-version.sh kubernetes-floor k8s.io/kubernetes)" \
		$(GO_TEST) $(FLOOR_PACKAGES) | $(REPORT) -title "make test-floor: policies and CRDs" -json $(OUTPUT_DIR)/test-floor.json
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --floor --dir)" \
		PROVIDERTEST_KUBE_VERSION="$$(hack/tool-version.sh kubernetes-floor k8s.io/kubernetes)" \
		$(GO_TEST) -run '^($(FLOOR_IN_USE))$$' ./internal/controller/binding/ ./internal/controller/instance/ | $(REPORT) -title "make test-floor: in use" -json $(OUTPUT_DIR)/test-floor-in-use.json

.PHONY: test-unit
test-unit: ## The server-free tests alone: no PostgreSQL, no API server, nothing to install.
	go run ./hack/tiers check
	@mkdir -p $(OUTPUT_DIR)
	PROVIDERTEST_TIER=unit $(GO_TEST) $$(go run ./hack/tiers unit-packages) | $(REPORT) -title "make test-unit" -json $(OUTPUT_DIR)/test-unit.json

.PHONY: test-matrix
test-matrix: tools ## The version- and admin-dependent tests on each MATRIX_CELLS (PostgreSQL 15-18 x superuser/managed admin).
	hack/ensure-postgresql.sh
	go run ./hack/tiers check
	@mkdir -p $(OUTPUT_DIR)
	@run="$$(go run ./hack/tiers matrix-run)"; \
	for cell in $(MATRIX_CELLS); do \
		v=$${cell%/*} admin=$${cell#*/}; \
		case $$admin in \
			superuser) pkgs="$$(go run ./hack/tiers matrix-packages)" ;; \
			managed) pkgs="$$(go run ./hack/tiers matrix-packages managed)" ;; \
			*) echo "MATRIX_CELLS: $$cell: the admin is superuser or managed" >&2; exit 2 ;; \
		esac; \
		echo "== PostgreSQL $$v, $$admin admin"; \
		PROVIDERTEST_TIER=matrix PROVIDERTEST_ADMIN=$$admin PG_BIN_DIR="$$(hack/postgresql.sh $$v)" \
			KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
			$(GO_TEST) -run "$$run" $$pkgs | $(REPORT) -title "PostgreSQL $$v, $$admin admin" -json $(OUTPUT_DIR)/test-matrix-$${v}-$${admin}.json || exit 1; \
	done

.PHONY: bench
bench: tools ## Benchmarks (report ratios; see docs/performance.md), the comparison with provider-sql included.
	hack/ensure-postgresql.sh
	hack/peer-tools.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" PEER_PROVIDER_SQL_DIR="$$(hack/peer-tools.sh --dir)" \
		go test -v -run '^$$' -bench . -benchtime 1x -timeout 120m ./...

.PHONY: bench-peer
bench-peer: tools ## The role-and-database workload (100 login roles, 100 databases each owned by its role) on this provider and on provider-sql (pinned in tools/provider-sql), side by side.
	hack/ensure-postgresql.sh
	hack/peer-tools.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" PEER_PROVIDER_SQL_DIR="$$(hack/peer-tools.sh --dir)" \
		go test -v -run '^$$' -bench BenchmarkPeer -benchtime 1x -timeout 60m ./internal/controller/

.PHONY: bench-instances
bench-instances: tools ## A fleet of BENCH_INSTANCES (100) PostgreSQL servers with BENCH_INSTANCE_PAIRS (10) login roles and databases each, on one provider; then one server frozen during a second wave.
	hack/ensure-postgresql.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
		go test -v -run '^$$' -bench BenchmarkInstances -benchtime 1x -timeout 90m ./internal/controller/

# The sizes and flags of bench-scale: the sizing table's setting for
# 10,000 objects (docs/performance.md); BENCH_SCALE_ARGS= runs the shipped
# flags.
BENCH_SCALE_SIZES ?= 1000,2000,5000,10000
BENCH_SCALE_ARGS  ?= --max-reconcile-rate=200 --max-conns=30

.PHONY: bench-scale
bench-scale: tools ## The mixed workload at BENCH_SCALE_SIZES objects on one server, at BENCH_SCALE_ARGS; about 40 minutes on 2 cores for the default sizes.
	hack/ensure-postgresql.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
		BENCH_SCALE_SIZES="$(BENCH_SCALE_SIZES)" BENCH_PROVIDER_ARGS="$(BENCH_SCALE_ARGS)" \
		go test -v -run '^$$' -bench 'BenchmarkScale$$' -benchtime 1x -timeout 120m ./internal/controller/

.PHONY: bench-admin
bench-admin: tools ## A managed-service admin's login, a role's observation and a database's create at 100, 2,000 and 5,000 roles it created, on PostgreSQL 16 and 17.
	@set -e; for v in 16 17; do \
		echo "== PostgreSQL $$v"; \
		PG_BIN_DIR="$$(hack/postgresql.sh $$v)" KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
			go test -v -run '^$$' -bench 'BenchmarkAdminMemberships$$' -benchtime 1x -timeout 30m ./internal/clients/postgres/; \
	done

.PHONY: bench-failover
bench-failover: tools ## Two replicas with leader election; the leader killed (SIGKILL) in a wave of BENCH_FAILOVER_PAIRS (500) login roles and databases, at the default lease and at 15 s; then a graceful stop.
	hack/ensure-postgresql.sh
	$(PG_BIN) KUBEBUILDER_ASSETS="$$(hack/controlplane-tools.sh --dir)" \
		go test -v -run '^$$' -bench BenchmarkFailover -benchtime 1x -timeout 60m ./internal/controller/

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
