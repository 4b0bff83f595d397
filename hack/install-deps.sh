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
deps_base() {
    install_packages ca-certificates util-linux openssl
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

# kubectl: the machine's own if it has one, else v1.33.13 built from the same
# module and linked into /usr/local/bin.
deps_kubectl() {
    if ! command -v kubectl >/dev/null; then
        ln -sf "$("${here}/build-apiserver.sh" kubectl)" /usr/local/bin/kubectl
    fi
    log "kubectl: $(kubectl version --client 2>/dev/null | head -n1)"
}

main() {
    [[ "$(id -u)" == 0 ]] || { log "run as root"; exit 1; }
    deps_base
    deps_etcd
    deps_go
    deps_kube_apiserver
    deps_kubectl
    log "done"
}

main "$@"
