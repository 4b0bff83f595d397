# The single entry point for building and testing Isolane; CI runs `make test`.
#
#   make dev      build and serve examples/hello.js on http://127.0.0.1:8787
#   make test     install what the tests need, then fmt, clippy, cargo-deny and every test
#   make images   the images as OCI archives in target/images (no Docker daemon)
#   make chart    the Helm chart as an archive in target/chart, for an OCI registry
#
# The `v8` crate builds offline against ../shared/v8 when that folder exists
# (see hack/cargo.sh); elsewhere it downloads its prebuilt library as usual.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
CARGO := hack/cargo.sh
WORKER ?= examples/hello.js
PORT ?= 8787

.PHONY: dev deps build images chart fmt-check clippy deny crds deploy-render test test-only bench bench-operator bench-fleet bench-bundles bench-assets bench-assets-cluster wpt sweep node-tests

dev:
	$(CARGO) run --release -p isolane -- dev $(WORKER) --port $(PORT)

deps:
	hack/install-deps.sh

build:
	$(CARGO) build --workspace --all-targets

# The operator, node and router images (and the tests' pause image) as OCI image
# archives from the release binaries, without a container daemon; docs/deploy.md
# says how to push them.
images:
	$(CARGO) build --release --locked -p isolane-operator -p isolane-node -p isolane-router
	hack/build-images.sh

# The Helm chart as an archive for an OCI registry: target/chart/isolane-<version>.tgz
# (`helm push` it; docs/deploy.md installs it by digest).
chart:
	hack/package-chart.sh

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The dependency policy (deny.toml): licenses, crates.io only, no wildcards.
deny:
	cargo deny check licenses bans sources

# Regenerate the CRD YAML from the Rust types (a test fails when it is stale).
crds:
	$(CARGO) run -q -p isolane-crds --bin crdgen -- --write

# Regenerate deploy/ (manifests, dashboards, alert rules) from the Helm chart
# (a test fails when it is stale).
deploy-render:
	deploy/render.sh

test: deps fmt-check clippy deny test-only

# The e2e tests run the binaries built here (they would otherwise build each
# one with `-p`, whose feature set differs from the workspace build's).
BIN_DIR = $(or $(CARGO_TARGET_DIR),target)/debug
test-only:
	$(CARGO) build --workspace --bins
	ISOLANE_OPERATOR_BIN=$(abspath $(BIN_DIR)/isolane-operator) \
	ISOLANE_NODE_BIN=$(abspath $(BIN_DIR)/isolane-node) \
	ISOLANE_ROUTER_BIN=$(abspath $(BIN_DIR)/isolane-router) \
	ISOLANE_BIN=$(abspath $(BIN_DIR)/isolane) \
	$(CARGO) test --workspace --no-fail-fast

bench:
	bench/run.sh

# Section 7 alone: the release operator making 1,000, 5,000 and 10,000 Workers
# Ready (each on a fresh etcd + kube-apiserver), then restarted over them;
# prints the section with the apiserver's writes and each process's CPU
# seconds. COUNTS=1000,5000,10000 by default.
COUNTS ?= 1000,5000,10000
bench-operator:
	$(CARGO) build --release -q -p isolane-bench -p isolane-operator
	$(or $(CARGO_TARGET_DIR),target)/release/isolane-bench operator --results target/bench-operator \
	  --work target/bench-operator/work --bin-dir $(or $(CARGO_TARGET_DIR),target)/release \
	  --counts $(COUNTS) --deadline 300

# Issue 35's fleet simulation alone (1 M Workers, 16 nodes, Zipf 1.1, 5 M
# requests counted after 20 M, with the router's rule and with every request
# bounded; about 2 minutes in release on 2 shared cores): prints section 10
# of docs/benchmarks.md.
bench-fleet:
	$(CARGO) run --release -q -p isolane-bench -- fleet

# Issue 31's never-seen 8 and 64 MiB bundles alone (section 12 of
# docs/benchmarks.md, which `make bench` runs too): a local registry, the
# release operator, node and router, and workerd (bench/run.sh installs it
# into ~/.cache/isolane/bench; compat/node_modules's serves too). Prints the
# section; SAMPLES per size and case (default 5; a few minutes).
SAMPLES ?= 5
WORKERD ?= $(firstword $(wildcard $(HOME)/.cache/isolane/bench/workerd/node_modules/@cloudflare/workerd-linux-64/bin/workerd compat/node_modules/@cloudflare/workerd-linux-64/bin/workerd))
bench-bundles:
	$(CARGO) build --release -q -p isolane -p isolane-bench -p isolane-node -p isolane-router -p isolane-operator
	target/release/isolane-bench bundles --results target/bench-bundles --work target/bench-bundles/work \
	  --isolane target/release/isolane --bin-dir target/release --samples $(SAMPLES) \
	  $(if $(WORKERD),--workerd $(WORKERD))

# Static assets (section 13): isolane dev vs wrangler dev (workerd) on one
# wrangler project folder; wrangler runs on Node.js 22 (bench/node22.sh
# installs it from npm). Prints the section.
bench-assets:
	$(CARGO) build --release -q -p isolane -p isolane-bench
	target/release/isolane-bench assets --results target/bench-assets --work target/bench-assets/work \
	  --isolane target/release/isolane --node "$$(bench/node22.sh)"
	cat target/bench-assets/13-assets.md

# Static assets (section 15): the same project through router + node (the
# release operator, node and router, deployed with isolane deploy to a local
# registry) vs workerd's disk service on its folder, and a 20 MiB assets
# deploy to its first answer. Prints the section.
bench-assets-cluster:
	$(CARGO) build --release -q -p isolane -p isolane-bench -p isolane-node -p isolane-router -p isolane-operator
	target/release/isolane-bench assets-cluster --results target/bench-assets --work target/bench-assets/work \
	  --isolane target/release/isolane --bin-dir target/release $(if $(WORKERD),--workerd $(WORKERD))
	cat target/bench-assets/15-assets-cluster.md

# Web Platform Tests on Isolane vs workerd into bench/wpt/results.md; needs a
# local WPT checkout (WPT_DIR=…), so it is not part of `make test`.
wpt:
	bench/wpt/run.sh

# Issue 30's import sweep: the 300 most depended-upon npm packages, each
# bundled as wrangler would and imported by a Worker on isolane dev and on
# workerd. Downloads every package from the npm registry (hundreds of MB into
# compat/sweep/.cache), so it is not part of `make test`.
sweep:
	$(CARGO) build -p isolane
	node compat/sweep/run.mjs --markdown compat/sweep/.cache/results.md

# Node's own tests run as Workers on isolane dev and workerd: with
# NODE_SRC=/path/to/node (a nodejs/node checkout) its test/parallel files of
# buffer, string_decoder, events, path, querystring, url and util; without
# it, the npm ports of those modules that ship Node's tests (downloaded).
node-tests:
	$(CARGO) build -p isolane
	node compat/nodetests/run.mjs $(if $(NODE_SRC),--node-src $(NODE_SRC))
