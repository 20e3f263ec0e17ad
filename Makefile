# wirebench: build, test, benchmark and demo. `make test` is what CI runs (.ci/run).
GO       ?= go
BIN      := bin/wirebench
# Packages cheap enough to test under the race detector; the end-to-end tests in cmd/ start the
# real binary and many processes, so they run without it.
RACE_PKGS := $(shell $(GO) list ./... | grep -v '/cmd/' | grep -v '/examples' | grep -v '/sim$$')
E2E_PKGS  := $(shell $(GO) list ./cmd/... ./examples/... 2>/dev/null)

.PHONY: build install test test-duckdb bench bench-vegeta bench-scale bench-intervals demo lint clean

# CGO_ENABLED=0: a static binary, the one the container image holds (Dockerfile); wirebench's
# only cgo is the standard library's optional DNS and user lookups, which have pure-Go versions.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/wirebench

# Puts wirebench on PATH: PREFIX/bin, by default $(go env GOPATH)/bin (PREFIX=/usr/local: system-wide).
PREFIX ?= $(shell $(GO) env GOPATH)
install: build
	install -d $(PREFIX)/bin
	install -m 0755 $(BIN) $(PREFIX)/bin/wirebench
	@echo "installed $(PREFIX)/bin/wirebench"

# The race run's -timeout is per package: aggregate's tests take 77 s of CPU under -race, and
# 7.7 min alone on a 2-CPU machine at load 25, over 10 min (go test's default limit) beside the
# other packages; at 15 min a hang still fails (with its goroutines) inside CI's 25-min limit.
test: lint build
	$(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)
	# The simulator's timing-accuracy tests run alone: next to the other packages' tests (the
	# browser's above all) on 2 CPUs they measured the machine, not the simulator.
	$(GO) test -race -count=1 ./sim
	# The wire client's load tests (500 streams, starved client) skip under -race: run them plain.
	$(GO) test -count=1 ./capture/wire
	# The intervals' coverage over 1,000 draws skips under -race: run it plain.
	$(GO) test -count=1 -run TestCoverage ./internal/interval
	# So does compare's over 100 sets of runs.
	$(GO) test -count=1 -run TestCompareSetsCoverRunDrift ./compare
	# Static like bin/wirebench, so that the end-to-end tests reuse its build (TestImageFromScratch
	# puts the binary they build in an image). -parallel 5: compare's and search's five tests,
	# light loads that wait on their simulators, run at once after the others (lightLoad).
	CGO_ENABLED=0 $(GO) test -count=1 -parallel 5 -timeout 20m $(E2E_PKGS)
	# The Kubernetes manifests of `wirebench k8s`, parsed with the Kubernetes API types: a module of
	# its own (k8s.io stays out of go.mod), so `go list ./...` above does not see it.
	cd examples/k8s/validate && $(GO) vet ./... && WIREBENCH=$(CURDIR)/$(BIN) $(GO) test -count=1 ./...
	# The vegeta side-by-side bench's own unit tests (its module keeps vegeta out of go.mod).
	cd bench/vegeta && $(GO) vet ./... && $(GO) test -count=1 ./...

# Cross-checks with DuckDB (cgo; the library comes with github.com/duckdb/duckdb-go/v2); in
# cmd/wirebench, DuckDB reads a run written to the local S3 server (skips without versitygw).
test-duckdb:
	$(GO) test -count=1 -tags duckdb -run DuckDB ./schemas ./aggregate ./cmd/wirebench

# Speed and memory targets live here, not in timed unit tests. Figures in docs/measurements.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./capture/wire ./tokenizer ./schemas
	$(GO) test -run '^$$' -bench Tap -benchtime 200000x ./capture/tap
	$(GO) test -run '^$$' -bench 'ServerCPU|AppendChunk' -benchtime 20000x ./sim
	$(GO) test -run '^$$' -bench 'Plan3M|TextGen' -benchtime 1x ./replay
	$(GO) test -run '^$$' -bench Aggregate -benchtime 1x ./aggregate
	$(GO) test -run '^$$' -bench 'Capture|HTTPSNginx' -benchtime 1x ./cmd/wirebench
	$(MAKE) bench-vegeta

# Side by side with vegeta (as a library, in its own module so that it stays out of go.mod),
# judged by the server: both drive a fresh simulator (no CPU cost, and 100 us of CPU per request)
# at 1,000, 2,000 and 5,000 req/s with 4 and 64 output tokens, and the simulator's own /metrics
# give the latencies it served, the requests and the connections; prints a Markdown table with
# each client's CPU per request, and a second one with wirebench sending at the send times of
# each vegeta run (figures in docs/measurements.md). About 15 minutes on 2 CPUs.
bench-vegeta: build
	cd bench/vegeta && $(GO) run . -wirebench ../../$(BIN)

# Aggregate at scale: synthetic runs of 5, 10 and 20 hosts sending 5,000 req/s each for 60 s (up
# to 6 M requests and 100 M chunk rows, written by internal/synthrun), each aggregated by a child
# `wirebench aggregate`: wall time, CPU, rows/s and peak RSS as a Markdown table (figures in
# docs/measurements.md). About 4 minutes on 2 CPUs; at most 2 GB under SCALE_DIR at a time.
SCALE_DIR ?= /tmp/wirebench-scale
bench-scale: build
	$(GO) run ./bench/scale -wirebench $(BIN) -hosts 5,10,20 -dir $(SCALE_DIR)

# The percentile intervals proved: the same config run 20 times (seeds 1-20) against a fresh
# `wirebench sim` (bench/intervals/engine.yaml, 32 output tokens, capacity about 234 requests/s)
# at 140 and 190 requests/s (light, near its saturation), 120 s each, one at a time (runs side by
# side compete for the CPUs and are no longer alike); for p50 and p99 of TTFT and ITL, the share
# of runs whose 95% interval holds the pooled percentile (with that share's exact interval) and
# the median width, as a Markdown table (figures in docs/measurements.md). About 100 minutes on a
# quiet machine; a cut-down check: go run ./bench/intervals -runs 3 -loads 140:5s.
bench-intervals: build
	$(GO) run ./bench/intervals -wirebench $(BIN)

# The main job on the built-in simulator: a sweep across its saturation knee, with a report.
demo: build
	BIN=$(BIN) bash examples/demo.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	 if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin
