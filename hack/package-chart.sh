#!/usr/bin/env bash
# Packages the Helm chart (charts/isolane) as a chart archive, for an OCI
# registry (`make chart`):
#
#   hack/package-chart.sh [out-dir]      # default target/chart
#
# Writes out-dir/isolane-<version>.tgz and prints its path. Then, as
# docs/deploy.md says:
#
#   helm push target/chart/isolane-0.1.0.tgz oci://registry.example.com/charts
#   helm install isolane oci://registry.example.com/charts/isolane@sha256:<digest> ...
#
# Helm comes from PATH, else ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}/bin
# (hack/install-deps.sh puts it there).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${root}/target/chart}"

helm="$(command -v helm || true)"
[[ -n "${helm}" ]] || helm="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}/bin/helm"
[[ -x "${helm}" ]] || { echo "package-chart: helm not found; run hack/install-deps.sh" >&2; exit 1; }

mkdir -p "${out}"
version="$(awk '$1 == "version:" { print $2; exit }' "${root}/charts/isolane/Chart.yaml")"
archive="${out}/isolane-${version}.tgz"
rm -f "${archive}"
"${helm}" package "${root}/charts/isolane" --destination "${out}" >/dev/null
[[ -f "${archive}" ]] || { echo "package-chart: helm wrote no ${archive}" >&2; exit 1; }
echo "${archive}"
