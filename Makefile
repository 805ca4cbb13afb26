# Seahaven — make targets. CI calls these only.
GO      ?= go
ADDR    ?= 127.0.0.1:8000
WORLD   ?= company

.PHONY: run test check bench build fuzz

## run: serve the examples' company world (fixture acme) on $(ADDR)
run:
	$(GO) run ./cmd/seahaven serve --world $(WORLD) --addr $(ADDR)

## build: build the seahaven binary into ./bin
build:
	$(GO) build -o bin/seahaven ./cmd/seahaven

## test: every test, with the race detector and every change capture verified
## (a package may take 20 minutes: cli runs replicas behind a proxy on 2 cores)
test:
	$(GO) test -race -count=1 -timeout 20m -tags capturecheck ./...

## check: formatting, tidy and verified modules, vet, staticcheck, the
## import-direction rule, and builds for darwin and windows
check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@cp go.mod /tmp/seahaven.go.mod.bak && cp go.sum /tmp/seahaven.go.sum.bak && $(GO) mod tidy && \
	  if ! diff -q go.mod /tmp/seahaven.go.mod.bak >/dev/null || ! diff -q go.sum /tmp/seahaven.go.sum.bak >/dev/null; then \
	    cp /tmp/seahaven.go.mod.bak go.mod; cp /tmp/seahaven.go.sum.bak go.sum; echo "go mod tidy changes go.mod/go.sum"; exit 1; fi
	$(GO) mod verify
	$(GO) vet ./...
	$(GO) vet -tags capturecheck ./sqlitestore
	$(GO) tool staticcheck ./...
	$(GO) run ./internal/importcheck
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) build ./...

## bench: Go benchmarks of the engine, then a short load benchmark (docs/scale.md)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./sqlitestore ./composition ./examples/...
	$(GO) build -o bin/seahaven ./cmd/seahaven
	./bin/seahaven bench --sessions 64 --duration 10s --json bin/bench.json

## fuzz: a short run of every fuzz target
fuzz:
	GOFLAGS=-tags=capturecheck ./.ci/fuzz
