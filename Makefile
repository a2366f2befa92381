# Paprika — make help lists the targets.
GO       ?= go
BIN      ?= bin/paprika
PKGS     ?= ./...
PROTOC_GEN_GO_VERSION ?= v1.36.12

.PHONY: help build run test test-short test-rolling bench bench-compare bench-cdp bench-tls chaos security lint fuzz generate verify services clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/paprika
	$(GO) build -o $(BIN) ./cmd/paprika

run: build ## a hub plus two local workers on embedded defaults
	./$(BIN) up

test: services ## the full suite: services up, vet, race tests, then multi-member tests (what CI runs)
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	@# Several cluster members in one process trip an upstream data race in
	@# protoactor (remote.Start swaps gRPC's global logger), so those tests
	@# build without -race and run here; see membership/redis_multi_test.go.
	@# TestSecurityCluster* start several remotes too (membership/remoting_tls_test.go).
	$(GO) test -count=1 -timeout 10m -run '^(TestMultiMember|TestRemoting|TestSecurityCluster)' $(PKGS)
	@# The bench/ module's own rules (its gap measures); its benchmark runs by hand.
	cd bench && $(GO) test -count=1 ./...

services: ## install (if missing) and start Redis, MariaDB, MinIO for the store tests
	scripts/services.sh

test-short: ## unit tests only, fast
	$(GO) test -short -count=1 $(PKGS)

bench: ## benchmarks (pick_worker, log path, ...)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

bench-compare: services ## no-op jobs side by side: Asynq (Redis), River (PostgreSQL), Paprika embedded, on MariaDB, 3 hubs (bench/, its own module; BENCH_FLAGS=-jobs 20000 ...)
	cd bench && $(GO) run . $(BENCH_FLAGS)

bench-cdp: services ## the browser gateway's benchmarks alone (two hubs, Chromium; a few minutes)
	$(GO) test -run '^$$' -bench '^BenchmarkCDP' -timeout 20m ./hub/

bench-tls: services ## the cost of TLS with real processes: cluster mTLS vs insecure (jobs/s), WSS vs WS (log lines/s), remoting round trip
	$(GO) run ./loadgen/tlscost $(TLSCOST_FLAGS)
	$(GO) test -run '^$$' -bench RemotingTLS -benchmem ./membership/

chaos: services ## the fault-injection suite alone (real processes; also part of make test)
	CI=$${CI:-true} $(GO) test -count=1 -timeout 20m -v -run '^TestChaos' ./e2e/ | grep -E '^(---|ok|FAIL)|CHAOS'

test-rolling: services ## the multi-hub rolling-restart test alone (also part of make test)
	CI=$${CI:-true} $(GO) test -count=1 -timeout 20m -v -run '^TestClusterRollingRestart' ./e2e/

fuzz: ## fuzz the worker-link frame decoder for 30 s
	$(GO) test -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 30s ./messages/

security: ## the trust-boundary tests alone (TestSecurity*; without -race, since some start several remotes)
	$(GO) test -count=1 -timeout 10m -run '^TestSecurity' $(PKGS)

lint: ## go vet + gofmt check (also vets, so builds, the bench/ module), and no protoactor receive timeout
	$(GO) vet $(PKGS)
	cd bench && $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt wants:"; echo "$$out"; exit 1; fi
	@# protoactor's receive timeout races the actor's turn: supervise.Idle instead.
	@out=$$(git grep -n -e 'SetReceiveTimeout(' -e 'CancelReceiveTimeout(' -- '*.go' ':!*_test.go'); if [ -n "$$out" ]; then echo "use supervise.Idle, not protoactor's receive timeout:"; echo "$$out"; exit 1; fi

generate: ## regenerate protobuf code (needs protoc and protoc-gen-go)
	protoc -I messages --go_out=messages --go_opt=paths=source_relative messages/*.proto

verify: generate ## regenerate and fail on a diff
	git diff --exit-code -- messages/

clean: ## remove build output and embedded data
	rm -rf bin data
