#!/usr/bin/env bash
# Build Isolane's container images as OCI image archives, with no container
# daemon: `make images` runs this on the release binaries.
#
#   hack/build-images.sh [--bin-dir DIR] [--out DIR] [--registry R] [--tag T] [IMAGE...]
#
# IMAGE is any of isolane-operator, isolane-node, isolane-router, isolane-pause
# (default: all four). Each becomes DIR/IMAGE.oci.tar (--out, default
# target/images), an OCI image layout in a tar (`oci-archive:` to skopeo,
# `ctr images import` to containerd) holding one image named
# REGISTRY/IMAGE:TAG (default ghcr.io/isolane and the chart's appVersion).
#
# An image is one layer holding exactly:
#   /usr/local/bin/<binary>             from --bin-dir (default target/release)
#   the shared libraries `ldd` reports, at the paths it reports
#   /etc/ssl/certs/ca-certificates.crt  Debian's CA bundle
#   /etc/passwd, /etc/group             root and nonroot (65532), the user it runs as
#   /tmp                                (the chart mounts an emptyDir there)
# and nothing else: no shell, no package manager. The config runs the binary as
# 65532:65532, which the chart's security context requires.
#
# isolane-pause is the pod sandbox ("pause") image of the tests' single-node
# cluster: hack/pause/pause.c, linked statically, alone in its image, run as
# 65535. The tests build it here rather than pull one.
#
# The archives are reproducible: every timestamp is the epoch, owners are 0:0,
# gzip stores no name or time. Tools: tar, gzip, sha256sum, jq, ldd, cc.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"
readonly here root

log() { echo "build-images: $*" >&2; }
die() { log "$*"; exit 1; }

readonly NONROOT=65532
readonly PAUSE_USER=65535

bin_dir="${CARGO_TARGET_DIR:-${root}/target}/release"
out_dir="${CARGO_TARGET_DIR:-${root}/target}/images"
registry="ghcr.io/isolane"
tag="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "${root}/charts/isolane/Chart.yaml")"
images=()

while (($#)); do
    case "$1" in
        --bin-dir) bin_dir="$2"; shift 2 ;;
        --out) out_dir="$2"; shift 2 ;;
        --registry) registry="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        isolane-operator | isolane-node | isolane-router | isolane-pause) images+=("$1"); shift ;;
        *) die "unknown argument: $1 (see the header of $0)" ;;
    esac
done
((${#images[@]})) || images=(isolane-operator isolane-node isolane-router isolane-pause)
[[ -n "${tag}" ]] || die "no tag: pass --tag"

case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64) arch=arm64 ;;
    *) die "unsupported machine $(uname -m)" ;;
esac
readonly arch

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# Copies a file (following symlinks, keeping its mode: the loader must stay
# executable) to the same path under a root directory.
copy_into() { # rootfs path
    install -D -m "$(stat -L -c %a "$2")" "$2" "$1$2"
}

# Writes the layer's files for a dynamically linked binary.
binary_rootfs() { # rootfs binary
    local rootfs="$1" binary="$2" lib
    install -D -m 0755 "${binary}" "${rootfs}/usr/local/bin/$(basename "${binary}")"
    # ldd prints `name => /path (addr)` for libraries and `/path (addr)` for the
    # loader; the vDSO has no path.
    while read -r lib; do
        copy_into "${rootfs}" "${lib}"
    done < <(ldd "${binary}" | sed -n 's/^\t\(.* => \)\{0,1\}\(\/[^ ]*\) (0x[0-9a-f]*)$/\2/p')
    copy_into "${rootfs}" /etc/ssl/certs/ca-certificates.crt
    mkdir -p "${rootfs}/etc"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/sbin/nologin\n' \
        "${NONROOT}" "${NONROOT}" >"${rootfs}/etc/passwd"
    printf 'root:x:0:\nnonroot:x:%s:\n' "${NONROOT}" >"${rootfs}/etc/group"
    install -d -m 1777 "${rootfs}/tmp"
}

# Writes blobs/sha256/<digest> for a file and prints the digest.
add_blob() { # layout file
    local digest
    digest="$(sha256 "$2")"
    mv -f "$2" "$1/blobs/sha256/${digest}"
    echo "${digest}"
}

# Builds one OCI image archive from a root directory and an image config.
pack() { # name rootfs entrypoint-json user ports-json
    local name="$1" rootfs="$2" entrypoint="$3" user="$4" ports="$5"
    local work="${tmp}/${name}" layout="${tmp}/${name}/layout"
    mkdir -p "${layout}/blobs/sha256"

    find "${rootfs}" -exec touch -h -d @0 {} +
    local tar_file="${work}/layer.tar"
    (cd "${rootfs}" && tar --create --file "${tar_file}" --sort=name --mtime=@0 \
        --owner=0 --group=0 --numeric-owner --format=gnu -- *)
    local diff_id layer_size layer
    diff_id="$(sha256 "${tar_file}")"
    gzip -n -6 "${tar_file}"
    layer_size="$(stat -c %s "${tar_file}.gz")"
    layer="$(add_blob "${layout}" "${tar_file}.gz")"

    local config_file="${work}/config.json" config config_size
    jq -n --arg arch "${arch}" --arg user "${user}" --arg diff "sha256:${diff_id}" \
        --argjson entrypoint "${entrypoint}" --argjson ports "${ports}" '{
            created: "1970-01-01T00:00:00Z",
            architecture: $arch,
            os: "linux",
            config: {
                User: $user,
                Entrypoint: $entrypoint,
                Env: ["PATH=/usr/local/bin:/usr/bin:/bin",
                      "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"],
                WorkingDir: "/",
                ExposedPorts: ($ports | map({key: ., value: {}}) | from_entries)
            },
            rootfs: {type: "layers", diff_ids: [$diff]},
            history: [{created: "1970-01-01T00:00:00Z", created_by: "hack/build-images.sh"}]
        }' >"${config_file}"
    config_size="$(stat -c %s "${config_file}")"
    config="$(add_blob "${layout}" "${config_file}")"

    local manifest_file="${work}/manifest.json" manifest manifest_size
    jq -n --arg config "sha256:${config}" --argjson config_size "${config_size}" \
        --arg layer "sha256:${layer}" --argjson layer_size "${layer_size}" '{
            schemaVersion: 2,
            mediaType: "application/vnd.oci.image.manifest.v1+json",
            config: {mediaType: "application/vnd.oci.image.config.v1+json",
                     digest: $config, size: $config_size},
            layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip",
                      digest: $layer, size: $layer_size}]
        }' >"${manifest_file}"
    manifest_size="$(stat -c %s "${manifest_file}")"
    manifest="$(add_blob "${layout}" "${manifest_file}")"

    # containerd names the image after io.containerd.image.name; skopeo and the
    # OCI spec use org.opencontainers.image.ref.name (the tag).
    jq -n --arg manifest "sha256:${manifest}" --argjson size "${manifest_size}" \
        --arg ref "${registry}/${name}:${tag}" --arg tag "${tag}" --arg arch "${arch}" '{
            schemaVersion: 2,
            mediaType: "application/vnd.oci.image.index.v1+json",
            manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json",
                         digest: $manifest, size: $size,
                         platform: {architecture: $arch, os: "linux"},
                         annotations: {"io.containerd.image.name": $ref,
                                       "org.opencontainers.image.ref.name": $tag}}]
        }' >"${layout}/index.json"
    printf '{"imageLayoutVersion":"1.0.0"}' >"${layout}/oci-layout"

    find "${layout}" -exec touch -h -d @0 {} +
    mkdir -p "${out_dir}"
    local archive="${out_dir}/${name}.oci.tar"
    (cd "${layout}" && tar --create --file "${archive}.tmp" --sort=name --mtime=@0 \
        --owner=0 --group=0 --numeric-owner --format=gnu -- oci-layout index.json blobs)
    mv -f "${archive}.tmp" "${archive}"
    log "${archive}: ${registry}/${name}:${tag} ($(du -h "${archive}" | cut -f1))"
}

# The ports each binary listens on by default (the chart's values).
ports_of() {
    case "$1" in
        isolane-operator) echo '["9090/tcp","9443/tcp"]' ;;
        isolane-node) echo '["9090/tcp","7070/tcp"]' ;;
        isolane-router) echo '["8080/tcp","9090/tcp"]' ;;
    esac
}

main() {
    command -v jq >/dev/null || die "jq is missing (hack/install-deps.sh installs it)"
    tmp="$(mktemp -d)"
    trap 'rm -rf "${tmp}"' EXIT
    local name start=${SECONDS}
    for name in "${images[@]}"; do
        local rootfs="${tmp}/${name}/rootfs"
        mkdir -p "${rootfs}"
        if [[ "${name}" == isolane-pause ]]; then
            command -v cc >/dev/null || die "cc is missing (hack/install-deps.sh installs g++)"
            cc -Os -s -static -o "${rootfs}/pause" "${here}/pause/pause.c"
            pack "${name}" "${rootfs}" '["/pause"]' "${PAUSE_USER}:${PAUSE_USER}" '[]'
        else
            local binary="${bin_dir}/${name}"
            [[ -x "${binary}" ]] || die "${binary} is missing: build it first (make images builds the release binaries)"
            binary_rootfs "${rootfs}" "${binary}"
            pack "${name}" "${rootfs}" "[\"/usr/local/bin/${name}\"]" "${NONROOT}:${NONROOT}" "$(ports_of "${name}")"
        fi
    done
    log "built ${#images[@]} images in $((SECONDS - start)) s"
}

main
