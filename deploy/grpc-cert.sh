#!/usr/bin/env bash
# Creates the router↔node mutual-TLS certificates for deploy/isolane.yaml
# (which, unlike the Helm chart, does not generate them): a CA, a node
# certificate (DNS name isolane-node; serving, and a client for Durable Object
# calls to its peer nodes) and a router client certificate (DNS
# name isolane-router), stored in the Secrets isolane-grpc-node-tls and
# isolane-grpc-router-tls (keys ca.crt, tls.crt, tls.key).
#
#   kubectl apply --server-side -f deploy/isolane.yaml
#   deploy/grpc-cert.sh               # [namespace], default isolane-system
#
# Run it again to rotate (a new CA): then restart the nodes and the router
# (kubectl rollout restart) — until both sides run with the new Secrets, the
# router's connections to nodes still on the old CA fail and are retried on
# other nodes (docs/deploy.md, "Rotating"). Needs openssl and kubectl.
set -euo pipefail

namespace="${1:-isolane-system}"
readonly days=3650

dir="$(mktemp -d)"
trap 'rm -rf "${dir}"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "${days}" \
    -subj "/CN=isolane-grpc-ca" -keyout "${dir}/ca.key" -out "${dir}/ca.crt" 2>/dev/null
for side in node router; do
    case "${side}" in
        node) name=isolane-node usage=serverAuth,clientAuth ;;
        router) name=isolane-router usage=clientAuth ;;
    esac
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${name}" \
        -keyout "${dir}/${side}.key" -out "${dir}/${side}.csr" 2>/dev/null
    printf 'subjectAltName=DNS:%s\nextendedKeyUsage=%s\n' "${name}" "${usage}" >"${dir}/${side}.cnf"
    openssl x509 -req -in "${dir}/${side}.csr" -CA "${dir}/ca.crt" -CAkey "${dir}/ca.key" \
        -CAcreateserial -days "${days}" -extfile "${dir}/${side}.cnf" -out "${dir}/${side}.crt" 2>/dev/null
    kubectl -n "${namespace}" create secret generic "isolane-grpc-${side}-tls" --type=kubernetes.io/tls \
        --from-file=tls.crt="${dir}/${side}.crt" --from-file=tls.key="${dir}/${side}.key" \
        --from-file=ca.crt="${dir}/ca.crt" --dry-run=client -o yaml |
        kubectl apply --server-side --force-conflicts --field-manager=isolane-grpc-cert -f -
done
echo "grpc-cert: Secrets ${namespace}/isolane-grpc-node-tls and isolane-grpc-router-tls are set" >&2
