# nostr-outbox — the two commands a new user runs:
#   make demo   build the package and serve the demo page (local relay + page)
#   make test   install what is missing, then run every test tier
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
ENV := . scripts/env.sh &&
DEMO_PORT ?= 8080

.PHONY: all setup build test demo bench torture clean fmt lint

all: test

## setup: install the wasm toolchain, wasm-bindgen-cli, wasm-pack, wasm-opt, twiggy, Chromium, Firefox, WebKitGTK (idempotent)
setup:
	@bash scripts/setup.sh

## build: wasm-pack build into pkg/ (web target); print the .wasm size raw and gzipped and its largest crates
build: setup
	@bash scripts/build.sh

## test: run every tier; exit 0 only if all pass
test: setup
	@bash scripts/test.sh

## demo: build the package and serve www/ (prints the URL)
demo: build
	@bash scripts/demo.sh $(DEMO_PORT)

## bench: benchmarks (programs that print ratios measured side by side in one run)
bench: setup
	@bash scripts/bench.sh

## torture: the long reliability run (tabs + service worker, flapping relays, SIGKILLs)
torture: build
	@. scripts/env.sh && node tests/e2e/torture.mjs

fmt:
	cargo fmt

clean:
	rm -rf pkg target
