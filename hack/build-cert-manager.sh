#!/usr/bin/env bash
# Build the ACME parts the certificate tests run (isolane_testenv::Acme),
# once; cache them; print the cache folder on stdout:
#
#   hack/build-cert-manager.sh   # -> ~/.cache/isolane/acme-v1.21.2-v2.10.3/
#       cert-manager-controller  cert-manager's control loops (hack/cert-manager)
#       crds/*.yaml              its CustomResourceDefinitions, from the same module
#       pebble                   Pebble, the ACME test server
#       pebble-challtestsrv      its DNS server (and challenge test server)
#
# Why a small main for cert-manager: the release's controller main is a Go
# module of its own (cmd/controller) that the module proxy does not serve;
# hack/cert-manager/main.go runs the same control loops from the public
# packages of github.com/cert-manager/cert-manager, pinned by its go.mod.
# The CRDs are plain YAML in that module (deploy/crds), copied as they are.
# Pebble is `go install`ed from its module. Cold: about 8 minutes for
# cert-manager (mostly its cloud DNS providers' modules), 15 s for Pebble.
# The cache is ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}; a folder with
# every part whose controller says this version is reused.
set -euo pipefail

readonly CERT_MANAGER_VERSION="v1.21.2"
readonly PEBBLE_VERSION="v2.10.3"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly module_dir="${here}/cert-manager"
readonly cache_dir="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}"
readonly out="${cache_dir}/acme-${CERT_MANAGER_VERSION}-${PEBBLE_VERSION}"

log() { echo "build-cert-manager: $*" >&2; }

complete() {
    [[ -x "${out}/pebble" && -x "${out}/pebble-challtestsrv" && -s "${out}/crds/cert-manager.io_certificates.yaml" ]] &&
        "${out}/cert-manager-controller" --version 2>/dev/null | grep -q " ${CERT_MANAGER_VERSION}$" &&
        # A controller built before it had this flag is built again. Not
        # `grep -q`: it exits at the first match, the long help then dies of
        # SIGPIPE, and under pipefail a complete build read as incomplete
        # (one check in five here): rebuilt for nothing, ~8 minutes of CI.
        "${out}/cert-manager-controller" --help 2>&1 | grep -- "-enable-certificate-owner-ref" > /dev/null
}

if complete; then
    echo "${out}"
    exit 0
fi
command -v go >/dev/null || { log "go is not on PATH (need Go >= 1.26)"; exit 1; }
tmp="${out}.tmp.$$"
trap 'rm -rf "${tmp}"' EXIT
mkdir -p "${tmp}/crds"
# No checksum database is reachable here; the committed go.sum pins cert-manager.
export GOSUMDB=off CGO_ENABLED=0

start=${SECONDS}
GOBIN="${tmp}" GOFLAGS=-buildvcs=false go install -trimpath -ldflags "-s -w" \
    "github.com/letsencrypt/pebble/v2/cmd/pebble@${PEBBLE_VERSION}" \
    "github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@${PEBBLE_VERSION}"
log "pebble ${PEBBLE_VERSION} built in $((SECONDS - start)) s"

start=${SECONDS}
(
    cd "${module_dir}"
    GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags "-s -w" \
        -o "${tmp}/cert-manager-controller" .
    crds="$(GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)/deploy/crds"
    cp "${crds}"/*.yaml "${tmp}/crds/"
)
log "cert-manager ${CERT_MANAGER_VERSION} controller built in $((SECONDS - start)) s"

rm -rf "${out}"
mv "${tmp}" "${out}"
trap - EXIT
echo "${out}"
