#!/usr/bin/env bash
# Creates the admission webhook's certificate for deploy/isolane.yaml (which,
# unlike the Helm chart, does not generate one): a CA and a serving certificate
# for isolane-webhook.<namespace>.svc, stored in the Secret isolane-webhook-tls,
# and the CA written into the ValidatingWebhookConfiguration's caBundle.
#
#   kubectl apply --server-side -f deploy/isolane.yaml
#   deploy/webhook-cert.sh            # [namespace], default isolane-system
#
# Run it again to rotate the certificate (restart the operator afterwards).
# Needs openssl and kubectl (current context).
set -euo pipefail

namespace="${1:-isolane-system}"
readonly service=isolane-webhook secret=isolane-webhook-tls
readonly webhook="isolane-${namespace}" days=3650

dir="$(mktemp -d)"
trap 'rm -rf "${dir}"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days "${days}" -subj "/CN=isolane-webhook-ca" \
    -keyout "${dir}/ca.key" -out "${dir}/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=${service}.${namespace}.svc" \
    -keyout "${dir}/tls.key" -out "${dir}/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
    "${service}" "${namespace}" "${service}" "${namespace}" >"${dir}/ext.cnf"
openssl x509 -req -in "${dir}/tls.csr" -CA "${dir}/ca.crt" -CAkey "${dir}/ca.key" -CAcreateserial \
    -days "${days}" -extfile "${dir}/ext.cnf" -out "${dir}/tls.crt" 2>/dev/null

kubectl -n "${namespace}" create secret generic "${secret}" --type=kubernetes.io/tls \
    --from-file=tls.crt="${dir}/tls.crt" --from-file=tls.key="${dir}/tls.key" \
    --from-file=ca.crt="${dir}/ca.crt" --dry-run=client -o yaml |
    kubectl apply --server-side --force-conflicts --field-manager=isolane-webhook-cert -f -

ca_bundle="$(base64 -w0 <"${dir}/ca.crt")"
kubectl patch validatingwebhookconfiguration "${webhook}" --type=json \
    -p "[{\"op\": \"add\", \"path\": \"/webhooks/0/clientConfig/caBundle\", \"value\": \"${ca_bundle}\"}]"
echo "webhook-cert: Secret ${namespace}/${secret} and ${webhook}'s caBundle are set" >&2
