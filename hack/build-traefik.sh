#!/usr/bin/env bash
# Build Traefik, the Gateway API implementation the Gateway tests send
# traffic through (e2e/tests/chart/gateway_traffic.rs), once; cache it;
# print the binary's path on stdout:
#
#   hack/build-traefik.sh    # -> ~/.cache/isolane/traefik-v3.7.13
#
# Traefik v3.7 implements Gateway API v1.6 (its go.mod requires
# sigs.k8s.io/gateway-api v1.6.1), so the standard-channel CRDs of
# hack/fetch-gateway-api.sh (v1.6.3) serve it; it runs as one process with a
# kubeconfig (`--providers.kubernetesgateway`). Why not `go install
# …@version`: its go.mod has `replace` directives, which `go install` refuses.
# So the module is downloaded with `go mod download` and built in a writable
# copy, with its go.sum; the web UI's embedded `webui/static` is kept empty
# (the tests use no dashboard). The cache is
# ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}, where isolane-testenv looks. A
# cold build takes about 10 minutes on 2 cores; a cached binary whose
# `version` says this version is reused.
set -euo pipefail

readonly TRAEFIK_VERSION="v3.7.13"
readonly module="github.com/traefik/traefik/v3"
readonly HTTP_AUTH_FORK="v0.4.1-0.20200324110947-a37a7636d23e"
readonly cache_dir="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}"
readonly binary="${cache_dir}/traefik-${TRAEFIK_VERSION}"

log() { echo "build-traefik: $*" >&2; }

# What the module as the proxy serves it lacks, or needs that the proxy here
# does not serve, made up in the writable copy `$1`:
# - `webui/static`, the dashboard's embedded files (built by npm upstream):
#   left empty, the tests use no dashboard;
# - `pkg/config/dynamic/ext`, a nested module the `replace` points at, which
#   a module's zip never holds: its two extension points are empty structs;
# - the `replace` of github.com/abbot/go-http-auth names a fork's commit the
#   proxy refuses (403): the fork's 2020 commit, which older Traefik 3
#   releases used, has the same API (basic and digest auth, unused here);
# - the ACME resolver's DNS-01 providers (lego's providers/dns) import cloud
#   SDKs the proxy refuses: that one import is cut, so a DNS-01 resolver
#   fails at start-up; HTTP-01 and TLS-ALPN-01 stay (unused here too).
patch_module() { # module_dir
    local module_dir=$1
    mkdir -p "${module_dir}/webui/static" "${module_dir}/pkg/config/dynamic/ext"
    printf 'module github.com/traefik/traefik/dynamic/ext\n\ngo 1.24\n' \
        >"${module_dir}/pkg/config/dynamic/ext/go.mod"
    printf 'package ext\n\ntype HTTP struct{}\n\ntype Router struct{}\n' \
        >"${module_dir}/pkg/config/dynamic/ext/ext.go"
    (cd "${module_dir}" && go mod edit -replace \
        "github.com/abbot/go-http-auth=github.com/containous/go-http-auth@${HTTP_AUTH_FORK}")
    local acme="${module_dir}/pkg/provider/acme/provider.go"
    grep -q '"github.com/go-acme/lego/v5/providers/dns"' "${acme}" ||
        { log "no DNS-01 providers' import in ${acme}"; exit 1; }
    sed -i -e '\#"github.com/go-acme/lego/v5/providers/dns"#d' \
        -e 's#dns\.NewDNSChallengeProviderByName(p\.DNSChallenge\.Provider)#nil, fmt.Errorf("DNS-01 provider %q: not in this build", p.DNSChallenge.Provider)#' \
        "${acme}"
}

if [[ -x "${binary}" ]] && "${binary}" version 2>/dev/null | grep -q "${TRAEFIK_VERSION#v}"; then
    echo "${binary}"
    exit 0
fi
command -v go >/dev/null || { log "go is not on PATH (need Go >= 1.26)"; exit 1; }
mkdir -p "${cache_dir}"
tmp="${binary}.tmp.$$"
trap 'rm -rf "${tmp}" "${tmp}.src"' EXIT
mkdir -p "${tmp}.src"

# No checksum database is reachable here; the version is pinned above and the
# module's own go.sum pins its dependencies.
dir="$(cd "${tmp}.src" && GOFLAGS=-mod=mod GOSUMDB=off \
    go mod download -json "${module}@${TRAEFIK_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -f "${dir}/go.mod" ]] || { log "no go.mod in '${dir}'"; exit 1; }
cp -r "${dir}/." "${tmp}.src/module"
chmod -R u+w "${tmp}.src/module"
patch_module "${tmp}.src/module"

log "building ${binary} (takes about 10 minutes)"
start=${SECONDS}
(
    cd "${tmp}.src/module"
    GOSUMDB=off GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 \
        go build -trimpath \
        -ldflags "-s -w -X ${module}/pkg/version.Version=${TRAEFIK_VERSION}" \
        -o "${tmp}" ./cmd/traefik
)
mv -f "${tmp}" "${binary}"
rm -rf "${tmp}.src"
trap - EXIT
log "built in $((SECONDS - start)) s"
echo "${binary}"
