{{/*
Names, labels and the shared pieces of the three workloads.
*/}}

{{- define "isolane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* `<release>-<chart>`, or the release name when it already contains the chart name. */}}
{{- define "isolane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The name of one component's objects: `<fullname>-<component>`. Call with (list $ "operator"). */}}
{{- define "isolane.componentName" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "isolane.fullname" $root) (index . 1) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "isolane.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "isolane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: isolane
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of one component's objects. Call with (list $ "operator"). */}}
{{- define "isolane.componentLabels" -}}
{{- $root := index . 0 -}}
{{ include "isolane.labels" $root }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Selector labels of one component (stable across upgrades). Call with (list $ "operator"). */}}
{{- define "isolane.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "isolane.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* The ServiceAccount name of one component. Call with (list $ "operator"). */}}
{{- define "isolane.serviceAccountName" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $sa := (index $root.Values $component).serviceAccount }}
{{- if $sa.create }}
{{- default (include "isolane.componentName" .) $sa.name }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{/* `<registry>/<repository>:<tag>` of one component. Call with (list $ "operator"). */}}
{{- define "isolane.image" -}}
{{- $root := index . 0 }}
{{- $image := (index $root.Values (index . 1)).image }}
{{- $tag := $image.tag | default $root.Values.image.tag | default $root.Chart.AppVersion }}
{{- printf "%s/%s:%s" $root.Values.image.registry $image.repository $tag }}
{{- end }}

{{/*
The ISOLANE_* variable of each key of a component's `config` block: the one
place where Helm values meet the binaries' flags (docs/config.md is the table).
*/}}
{{- define "isolane.envNames.operator" -}}
leaderElection: ISOLANE_LEADER_ELECTION
leaderLease: ISOLANE_LEADER_LEASE
leaseDuration: ISOLANE_LEASE_DURATION
renewDeadline: ISOLANE_RENEW_DEADLINE
retryPeriod: ISOLANE_RETRY_PERIOD
concurrency: ISOLANE_CONCURRENCY
membershipInterval: ISOLANE_MEMBERSHIP_INTERVAL
missingReferenceRetry: ISOLANE_MISSING_REFERENCE_RETRY
resync: ISOLANE_RESYNC
backlogInterval: ISOLANE_BACKLOG_INTERVAL
hostReleaseGrace: ISOLANE_HOST_RELEASE_GRACE
plainHttpRegistries: ISOLANE_PLAIN_HTTP_REGISTRIES
bundleRegistries: ISOLANE_BUNDLE_REGISTRIES
bundleRegistryCa: ISOLANE_BUNDLE_REGISTRY_CA
log: ISOLANE_LOG
logFormat: ISOLANE_LOG_FORMAT
{{- end }}

{{- define "isolane.envNames.node" -}}
listeners: ISOLANE_LISTENERS
threads: ISOLANE_THREADS
pinThreads: ISOLANE_PIN_THREADS
poolMode: ISOLANE_POOL_MODE
isolatesPerThread: ISOLANE_ISOLATES_PER_THREAD
heapBudgetMib: ISOLANE_HEAP_BUDGET_MIB
spareIsolates: ISOLANE_SPARE_ISOLATES
maxInflightPerThread: ISOLANE_MAX_INFLIGHT_PER_THREAD
websocketMaxMessageKib: ISOLANE_WEBSOCKET_MAX_MESSAGE_KIB
websocketBufferedMessages: ISOLANE_WEBSOCKET_BUFFERED_MESSAGES
websocketIdleSecs: ISOLANE_WEBSOCKET_IDLE_SECS
websocketMaxSockets: ISOLANE_WEBSOCKET_MAX_SOCKETS
websocketMaxSocketsPerClient: ISOLANE_WEBSOCKET_MAX_SOCKETS_PER_CLIENT
objectIdleSecs: ISOLANE_OBJECT_IDLE_SECS
workerSlots: ISOLANE_WORKER_SLOTS
maxCpuMs: ISOLANE_MAX_CPU_MS
maxRequestBodyMib: ISOLANE_MAX_REQUEST_BODY_MIB
cacheMib: ISOLANE_CACHE_MIB
cacheNamespaceMib: ISOLANE_CACHE_NAMESPACE_MIB
kvCacheMib: ISOLANE_KV_CACHE_MIB
kvNamespaceMaxMib: ISOLANE_KV_NAMESPACE_MAX_MIB
objectMaxMib: ISOLANE_OBJECT_MAX_MIB
queueNamespaceMaxMessages: ISOLANE_QUEUE_NAMESPACE_MAX_MESSAGES
queueNamespaceMaxMib: ISOLANE_QUEUE_NAMESPACE_MAX_MIB
queueRetentionSecs: ISOLANE_QUEUE_RETENTION_SECS
storageNamespaceOps: ISOLANE_STORAGE_NAMESPACE_OPS
egressAllow: ISOLANE_EGRESS_ALLOW
egressDeny: ISOLANE_EGRESS_DENY
fetchExtraCa: ISOLANE_FETCH_EXTRA_CA
dnsOverHttps: ISOLANE_DNS_OVER_HTTPS
leaseDuration: ISOLANE_LEASE_DURATION
drainTimeout: ISOLANE_DRAIN_TIMEOUT
websocketDrainGrace: ISOLANE_WEBSOCKET_DRAIN_GRACE
revisionWait: ISOLANE_REVISION_WAIT
bundleRevisions: ISOLANE_BUNDLE_REVISIONS
snapshotCacheDir: ISOLANE_SNAPSHOT_CACHE_DIR
stateDir: ISOLANE_STATE_DIR
bundleCacheDir: ISOLANE_BUNDLE_CACHE_DIR
bundleCacheMib: ISOLANE_BUNDLE_CACHE_MIB
codeCacheMib: ISOLANE_CODE_CACHE_MIB
plainHttpRegistries: ISOLANE_PLAIN_HTTP_REGISTRIES
bundleRegistries: ISOLANE_BUNDLE_REGISTRIES
bundleRegistryCa: ISOLANE_BUNDLE_REGISTRY_CA
log: ISOLANE_LOG
logFormat: ISOLANE_LOG_FORMAT
{{- end }}

{{- define "isolane.envNames.router" -}}
workers: ISOLANE_ROUTER_WORKERS
watchNamespace: ISOLANE_WATCH_NAMESPACE
requestTimeout: ISOLANE_REQUEST_TIMEOUT
connectTimeout: ISOLANE_CONNECT_TIMEOUT
replayBodyLimit: ISOLANE_REPLAY_BODY_LIMIT
loadFactor: ISOLANE_LOAD_FACTOR
maxWorkerSeries: ISOLANE_MAX_WORKER_SERIES
workerSeriesInterval: ISOLANE_WORKER_SERIES_INTERVAL
shutdownGrace: ISOLANE_SHUTDOWN_GRACE
websocketDrainGrace: ISOLANE_WEBSOCKET_DRAIN_GRACE
websocketMaxMessageKib: ISOLANE_WEBSOCKET_MAX_MESSAGE_KIB
nodeWait: ISOLANE_NODE_WAIT
trustedProxies: ISOLANE_TRUSTED_PROXIES
cron: ISOLANE_CRON
cronLease: ISOLANE_CRON_LEASE
cronLeaseDuration: ISOLANE_CRON_LEASE_DURATION
cronRenewDeadline: ISOLANE_CRON_RENEW_DEADLINE
cronRetryPeriod: ISOLANE_CRON_RETRY_PERIOD
log: ISOLANE_LOG
logFormat: ISOLANE_LOG_FORMAT
{{- end }}

{{/*
The env entries of a component's `config` block, in key order; empty values
are left out so the binary's default applies. Whole numbers print without an
exponent (YAML numbers arrive as float64). Call with (list $ "operator").
*/}}
{{- define "isolane.configEnv" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $names := include (printf "isolane.envNames.%s" $component) $root | fromYaml }}
{{- $config := (index $root.Values $component).config }}
{{- range $key := keys $config | sortAlpha }}
{{- $value := index $config $key }}
{{- $env := index $names $key | default "" }}
{{- if not $env }}
{{- fail (printf "%s.config.%s is not a flag of isolane-%s (see docs/config.md)" $component $key $component) }}
{{- end }}
{{- if not (or (kindIs "invalid" $value) (and (kindIs "string" $value) (eq $value ""))) }}
{{- if and (kindIs "float64" $value) (eq ($value | int64 | float64) $value) }}
{{- $value = $value | int64 }}
{{- end }}
- name: {{ $env }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- if and (has $component (list "operator" "router")) $root.Values.reservedHosts }}
- name: ISOLANE_RESERVED_HOSTS
  value: {{ join "," $root.Values.reservedHosts | quote }}
{{- end }}
{{- if has $component (list "operator" "router") }}
- name: ISOLANE_WORKER_CLASS
  value: {{ $root.Values.workerClass | default "default" | quote }}
{{- end }}
{{- end }}

{{/* The env entries every component gets from the downward API. */}}
{{- define "isolane.podEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}

{{/* The OTEL_* variables of a component when tracing is on. Call with (list $ "router"). */}}
{{- define "isolane.otelEnv" -}}
{{- $root := index . 0 -}}
{{- $tracing := $root.Values.tracing -}}
{{- if $tracing.enabled -}}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ required "tracing.endpoint is required when tracing.enabled" $tracing.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $tracing.protocol | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "isolane-%s" (index . 1) | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: "k8s.pod.name=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE)"
- name: OTEL_TRACES_SAMPLER
  value: {{ $tracing.sampler | quote }}
{{- with $tracing.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- range $name, $value := $tracing.extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Pod-level settings shared by the three workloads. Call with (list $ "operator"). */}}
{{- define "isolane.podSpecCommon" -}}
{{- $root := index . 0 }}
{{- $values := index $root.Values (index . 1) -}}
serviceAccountName: {{ include "isolane.serviceAccountName" . }}
automountServiceAccountToken: true
enableServiceLinks: false
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod template metadata. Call with (list $ "operator"). */}}
{{- define "isolane.podMetadata" -}}
{{- $root := index . 0 }}
{{- $values := index $root.Values (index . 1) -}}
labels:
  {{- include "isolane.selectorLabels" . | nindent 2 }}
  {{- with $values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with $values.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Probes on the admin port. Call with the port name. */}}
{{- define "isolane.probes" -}}
livenessProbe:
  httpGet:
    path: /livez
    port: admin
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: admin
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 2
{{- end }}

{{- define "isolane.webhookSecretName" -}}
{{- default (printf "%s-webhook-tls" (include "isolane.fullname" .)) .Values.webhook.certificate.secretName }}
{{- end }}

{{/* The router↔node mTLS Secret of one side. Call with (list $ "node") or (list $ "router"). */}}
{{- define "isolane.grpcTlsSecretName" -}}
{{- $root := index . 0 }}
{{- $side := index . 1 }}
{{- $configured := index $root.Values.grpcTls (printf "%sSecretName" $side) }}
{{- default (printf "%s-grpc-%s-tls" (include "isolane.fullname" $root) $side) $configured }}
{{- end }}

{{/* The router↔node mTLS environment (ISOLANE_GRPC_TLS_*, ISOLANE_INSECURE_GRPC). Call with $. */}}
{{/*
The KV store's database for the operator (which migrates its schema) and the
nodes: the connection string from a Secret, never from values.
*/}}
{{- define "isolane.storageEnv" -}}
{{- with .Values.storage.postgres }}
{{- if .existingSecret }}
- name: ISOLANE_STORAGE_POSTGRES_URL
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ .key | quote }}
- name: ISOLANE_STORAGE_POSTGRES_POOL
  value: {{ .pool | quote }}
{{- if or .caConfigMap .caSecret }}
- name: ISOLANE_STORAGE_POSTGRES_CA_FILE
  value: /etc/isolane/storage-ca/ca.crt
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
R2 buckets' S3-compatible store (storage.r2) for the nodes: the endpoint and
bucket from values, the credentials from a Secret, never from values.
*/}}
{{- define "isolane.r2Env" -}}
{{- with .Values.storage.r2 }}
{{- if .endpoint }}
- name: ISOLANE_R2_S3_ENDPOINT
  value: {{ .endpoint | quote }}
- name: ISOLANE_R2_S3_REGION
  value: {{ .region | quote }}
- name: ISOLANE_R2_S3_BUCKET
  value: {{ .bucket | quote }}
- name: ISOLANE_R2_S3_PREFIX
  value: {{ .prefix | quote }}
{{- with .tempDir }}
- name: ISOLANE_R2_S3_TEMP_DIR
  value: {{ . | quote }}
{{- end }}
{{- if .existingSecret }}
- name: ISOLANE_R2_S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ .accessKeyIdKey | quote }}
- name: ISOLANE_R2_S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret | quote }}
      key: {{ .secretAccessKeyKey | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The database server's CA (storage.postgres.caConfigMap or caSecret), as a mount and a volume. */}}
{{- define "isolane.storageCaMount" -}}
{{- with .Values.storage.postgres }}
{{- if and .existingSecret (or .caConfigMap .caSecret) }}
- name: storage-ca
  mountPath: /etc/isolane/storage-ca
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{- define "isolane.storageCaVolume" -}}
{{- with .Values.storage.postgres }}
{{- if and .existingSecret .caConfigMap }}
- name: storage-ca
  configMap:
    name: {{ .caConfigMap | quote }}
    items: [{ key: ca.crt, path: ca.crt }]
{{- else if and .existingSecret .caSecret }}
- name: storage-ca
  secret:
    secretName: {{ .caSecret | quote }}
    items: [{ key: ca.crt, path: ca.crt }]
{{- end }}
{{- end }}
{{- end }}

{{- define "isolane.grpcTlsEnv" -}}
- name: ISOLANE_INSECURE_GRPC
  value: {{ .Values.grpcTls.insecure | quote }}
{{- if not .Values.grpcTls.insecure }}
- name: ISOLANE_GRPC_TLS_CERT
  value: /etc/isolane/grpc/tls.crt
- name: ISOLANE_GRPC_TLS_KEY
  value: /etc/isolane/grpc/tls.key
- name: ISOLANE_GRPC_TLS_CA
  value: /etc/isolane/grpc/ca.crt
{{- end }}
{{- end }}

{{/* The tail API's serving certificate Secret. */}}
{{- define "isolane.tailApiSecretName" -}}
{{- default (printf "%s-tail-api-tls" (include "isolane.fullname" .)) .Values.tailApi.certificate.secretName }}
{{- end }}
