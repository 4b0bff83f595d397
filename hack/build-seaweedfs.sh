#!/usr/bin/env bash
# Build SeaweedFS's `weed` (the tests' S3-compatible store, for R2 buckets
# on a cluster: isolane_testenv::SeaweedFs) from its Go module, once; cache
# it; print the binary's path on stdout.
#
#   hack/build-seaweedfs.sh    # -> ~/.cache/isolane/weed-<version>
#
# Why not `go install …/weed@version`: SeaweedFS's go.mod carries `replace`
# directives, which `go install pkg@version` refuses; so the module is
# downloaded (`go mod download`), copied out of the read-only module cache
# and built as the main module. The cache is
# ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}, where isolane-testenv looks. A
# cold build took about 28 minutes on 2 cores shared with a Rust build
# (downloading and compiling its modules); a cached binary is reused.
set -euo pipefail

readonly SEAWEEDFS_VERSION="v0.0.0-20261109003541-7506e5f91cd6"
readonly module="github.com/seaweedfs/seaweedfs"
readonly cache_dir="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}"
readonly binary="${cache_dir}/weed-${SEAWEEDFS_VERSION}"

log() { echo "build-seaweedfs: $*" >&2; }

if [[ -x "${binary}" ]] && "${binary}" version >/dev/null 2>&1; then
    echo "${binary}"
    exit 0
fi
command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
mkdir -p "${cache_dir}"
work="$(mktemp -d)"
trap 'chmod -R u+w "${work}"; rm -rf "${work}"' EXIT
log "building ${binary} (takes about 30 minutes cold)"
start=${SECONDS}
dir="$(cd "${work}" && GOSUMDB=off GOFLAGS=-mod=mod go mod download -json "${module}@${SEAWEEDFS_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "${dir}" ]] || { log "go mod download gave no folder"; exit 1; }
cp -r "${dir}" "${work}/src"
chmod -R u+w "${work}/src"
(
    cd "${work}/src"
    GOSUMDB=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
        go build -trimpath -ldflags "-s -w" -o "${binary}.tmp" ./weed
)
mv -f "${binary}.tmp" "${binary}"
log "built in $((SECONDS - start)) s"
echo "${binary}"
