#!/usr/bin/env bash
# Renders deploy/ from the Helm chart (charts/isolane), for `kubectl apply`
# without Helm. A test (e2e/tests/chart.rs, deploy_is_rendered_from_the_chart)
# renders again and fails on any difference; regenerate with:
#
#   make deploy-render          # or: deploy/render.sh [out-dir]
#
# Writes, into out-dir (default deploy/):
#   isolane.yaml               namespace isolane-system, the Worker CRD and the
#                              chart with default values, except that the
#                              webhook certificate is not generated (a committed
#                              private key would be everyone's): run
#                              deploy/webhook-cert.sh once after applying;
#                              likewise the router↔node mTLS certificates:
#                              deploy/grpc-cert.sh. The tail API
#                              (tailApi.enabled) is off here: its APIService
#                              needs a certificate too; install with Helm
#                              to have it.
#   dashboards/*.json          the Grafana dashboards (charts/isolane/dashboards)
#   alerts/isolane.rules.yaml  the alert rule groups, for a plain Prometheus
#
# Helm comes from PATH, else ${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}/bin
# (hack/install-deps.sh puts it there).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-${root}/deploy}"
chart="${root}/charts/isolane"
readonly release=isolane namespace=isolane-system

helm="$(command -v helm || true)"
[[ -n "${helm}" ]] || helm="${ISOLANE_CACHE_DIR:-${HOME}/.cache/isolane}/bin/helm"
[[ -x "${helm}" ]] || { echo "render: helm not found; run hack/install-deps.sh" >&2; exit 1; }

mkdir -p "${out}/dashboards" "${out}/alerts"

{
    echo "# Isolane, rendered from charts/isolane by deploy/render.sh: do not edit."
    echo "# kubectl apply --server-side -f deploy/isolane.yaml && deploy/webhook-cert.sh && deploy/grpc-cert.sh"
    echo "apiVersion: v1"
    echo "kind: Namespace"
    echo "metadata:"
    echo "  name: ${namespace}"
    echo "  labels:"
    echo "    app.kubernetes.io/part-of: isolane"
    echo "    pod-security.kubernetes.io/enforce: restricted"
    "${helm}" template "${release}" "${chart}" --namespace "${namespace}" --include-crds \
        --set webhook.certificate.generate=false --set grpcTls.generate=false \
        --set tailApi.enabled=false
} >"${out}/isolane.yaml"

rm -f "${out}"/dashboards/*.json
cp "${chart}"/dashboards/*.json "${out}/dashboards/"

# The PrometheusRule's spec is the rule file; the template starts it at `spec:`.
{
    echo "# Isolane's alerts, rendered from charts/isolane by deploy/render.sh: do not edit."
    echo "# Thresholds are the chart's prometheusRule.* defaults. Tests: isolane.rules.test.yaml."
    "${helm}" template "${release}" "${chart}" --namespace "${namespace}" \
        --set prometheusRule.enabled=true --show-only templates/monitoring.yaml |
        awk 'found { sub(/^  /, ""); print } /^spec:$/ { found = 1 }'
} >"${out}/alerts/isolane.rules.yaml"
