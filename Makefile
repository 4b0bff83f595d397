# The single entry point for building and testing Isolane; CI runs `make test`.
#
#   make dev      build and serve examples/hello.js on http://127.0.0.1:8787
#   make test     install what the tests need, then fmt, clippy and every test
#
# The `v8` crate builds offline against ../shared/v8 when that folder exists
# (see hack/cargo.sh); elsewhere it downloads its prebuilt library as usual.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
CARGO := hack/cargo.sh
WORKER ?= examples/hello.js
PORT ?= 8787

.PHONY: dev deps build fmt-check clippy crds deploy-render test test-only bench

dev:
	$(CARGO) run --release -p isolane -- dev $(WORKER) --port $(PORT)

deps:
	hack/install-deps.sh

build:
	$(CARGO) build --workspace --all-targets

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Regenerate the CRD YAML from the Rust types (a test fails when it is stale).
crds:
	$(CARGO) run -q -p isolane-crds --bin crdgen -- --write

# Regenerate deploy/ (manifests, dashboards, alert rules) from the Helm chart
# (a test fails when it is stale).
deploy-render:
	deploy/render.sh

test: deps fmt-check clippy test-only

test-only:
	$(CARGO) build --workspace --bins
	$(CARGO) test --workspace --no-fail-fast

bench:
	bench/run.sh
