#!/usr/bin/env bash
# Build kube-apiserver (or another Kubernetes binary) from hack/kube-apiserver, the
# k8s.io/kubernetes module pinned in go.mod, once; cache it; print the binary's
# path on stdout.
#
#   hack/build-apiserver.sh            # -> ~/.cache/isolane/kube-apiserver-v1.33.13
#   hack/build-apiserver.sh kubectl    # -> ~/.cache/isolane/kubectl-v1.33.13
#   hack/build-apiserver.sh kubelet    # also kube-proxy, kube-scheduler and
#                                      # kube-controller-manager (the test node)
#
# The cache is ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}, where isolane-testenv
# looks for the apiserver. A binary already there whose `--version` reports
# v1.33.13 is reused, so a second run takes a fraction of a second. A cold build
# takes a few minutes (compiling k8s.io/kubernetes). Progress goes to stderr.
set -euo pipefail

readonly KUBE_VERSION="v1.33.13"
# The module proxy does not tell the upstream tag's commit; name the source
# instead. The build date is the module's release time, so builds are reproducible.
readonly KUBE_GIT_COMMIT="k8s.io/kubernetes@${KUBE_VERSION}"
readonly KUBE_BUILD_DATE="2026-06-11T16:59:07Z"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly module_dir="${here}/kube-apiserver"
readonly cache_dir="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}"

log() { echo "build-apiserver: $*" >&2; }

# The expected first line of `<binary> --version` (kubectl says it differently).
version_line() {
    case "$1" in
        kube-apiserver | kubelet | kube-proxy | kube-scheduler | kube-controller-manager)
            echo "Kubernetes ${KUBE_VERSION}" ;;
        kubectl) echo "Client Version: ${KUBE_VERSION}" ;;
    esac
}

is_cached() { # name binary
    local name="$1" binary="$2" version_flag="--version"
    [[ "${name}" == kubectl ]] && version_flag="version --client"
    [[ -x "${binary}" ]] &&
        # shellcheck disable=SC2086 # version_flag is two words for kubectl
        "${binary}" ${version_flag} 2>/dev/null | grep -qx "$(version_line "${name}")"
}

# The version variables that upstream's hack/lib/version.sh sets, for both the
# server (component-base) and the client (client-go) version packages.
ldflags() {
    local major minor flags="-s -w" pkg
    major="${KUBE_VERSION#v}"; major="${major%%.*}"
    minor="${KUBE_VERSION#v*.}"; minor="${minor%%.*}"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
        flags+=" -X ${pkg}.gitMajor=${major}"
        flags+=" -X ${pkg}.gitMinor=${minor}"
        flags+=" -X ${pkg}.gitCommit=${KUBE_GIT_COMMIT}"
        flags+=" -X ${pkg}.gitTreeState=clean"
        flags+=" -X ${pkg}.buildDate=${KUBE_BUILD_DATE}"
    done
    echo "${flags}"
}

build() { # package binary
    local package="$1" binary="$2" tmp start=${SECONDS}
    command -v go >/dev/null || { log "go is not on PATH (need Go >= 1.24)"; exit 1; }
    tmp="${binary}.tmp.$$"
    # shellcheck disable=SC2064 # expand now: tmp is local to this function
    trap "rm -f '${tmp}'" EXIT
    log "building ${binary} (takes a few minutes)"
    (
        cd "${module_dir}"
        # No checksum database is reachable here; the committed go.sum pins the content.
        GOSUMDB=off GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
            go build -trimpath -ldflags "$(ldflags)" -o "${tmp}" "${package}"
    )
    mv -f "${tmp}" "${binary}"
    trap - EXIT
    log "built in $((SECONDS - start)) s"
}

main() {
    local name="${1:-kube-apiserver}" package
    case "${name}" in
        kube-apiserver) package=. ;;
        kubectl | kubelet | kube-proxy | kube-scheduler | kube-controller-manager) package="./${name}" ;;
        *) log "usage: $0 [kube-apiserver|kubectl|kubelet|kube-proxy|kube-scheduler|kube-controller-manager]"; exit 64 ;;
    esac
    local binary="${cache_dir}/${name}-${KUBE_VERSION}"
    if ! is_cached "${name}" "${binary}"; then
        mkdir -p "${cache_dir}"
        # One build at a time: a second caller waits, then finds the binary cached.
        exec 9>"${binary}.lock"
        flock 9
        is_cached "${name}" "${binary}" || build "${package}" "${binary}"
        is_cached "${name}" "${binary}" || { log "${binary} does not report ${KUBE_VERSION}"; exit 1; }
    fi
    echo "${binary}"
}

main "$@"
