#!/usr/bin/env bash
# Fetch the Gateway API's standard-channel CRDs the chart tests install
# (e2e/tests/chart_gateway.rs), once; cache them; print the folder on stdout:
#
#   hack/fetch-gateway-api.sh   # -> ~/.cache/isolane/gateway-api-v1.6.3/
#       crds/*.yaml              config/crd/standard of sigs.k8s.io/gateway-api
#
# The CRDs are plain YAML in the Go module sigs.k8s.io/gateway-api, which the
# Go module proxy serves; `go mod download` puts the module in the module
# cache and the standard channel's files are copied as they are. Nothing is
# built. The cache is ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}; a folder
# with the HTTPRoute CRD is reused.
set -euo pipefail

readonly GATEWAY_API_VERSION="v1.6.3"
readonly module="sigs.k8s.io/gateway-api"
readonly cache_dir="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}"
readonly out="${cache_dir}/gateway-api-${GATEWAY_API_VERSION}"

log() { echo "fetch-gateway-api: $*" >&2; }

complete() {
    [[ -s "${out}/crds/gateway.networking.k8s.io_httproutes.yaml" &&
        -s "${out}/crds/gateway.networking.k8s.io_gateways.yaml" ]]
}

if complete; then
    echo "${out}"
    exit 0
fi
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
tmp="${out}.tmp.$$"
trap 'rm -rf "${tmp}"' EXIT
mkdir -p "${tmp}/crds"

# No checksum database is reachable here; the version is pinned above.
# Outside any module, -mod=mod lets `go mod download` take a module@version.
dir="$(cd "${tmp}" && GOFLAGS=-mod=mod GOSUMDB=off \
    go mod download -json "${module}@${GATEWAY_API_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "${dir}/config/crd/standard" ]] || { log "no config/crd/standard in '${dir}'"; exit 1; }
cp "${dir}"/config/crd/standard/*.yaml "${tmp}/crds/"
log "${module} ${GATEWAY_API_VERSION}: $(ls "${tmp}/crds" | wc -l) CRDs"

rm -rf "${out}"
mv "${tmp}" "${out}"
trap - EXIT
echo "${out}"
