{{/*
Isolane's alerts, as Prometheus rule groups. The PrometheusRule renders them;
deploy/render.sh writes the same groups to deploy/alerts/isolane.rules.yaml
for a plain Prometheus, and deploy/alerts/isolane.rules.test.yaml unit-tests
them with `promtool test rules`. Thresholds are prometheusRule.* values.
*/}}
{{- define "isolane.alertGroups" -}}
{{- $v := .Values.prometheusRule -}}
groups:
  - name: isolane.requests
    rules:
      - alert: IsolaneHighErrorRatio
        expr: |
          sum(rate(isolane_router_requests_total{status_class="5xx"}[5m]))
            / sum(rate(isolane_router_requests_total[5m]))
            > {{ $v.errorRatio }}
        for: 5m
        labels:
          severity: {{ $v.severity }}
        annotations:
          summary: "More than a share of {{ $v.errorRatio }} of the requests through the router fail with 5xx."
          description: "{{`{{ $value | humanizePercentage }}`}} of the router's answers were 5xx over the last 5 minutes. The Per-worker dashboard shows which Workers; the node dashboard shows terminations by reason."
      - alert: IsolaneHighLatencyP99
        expr: |
          histogram_quantile(0.99, sum by (le) (rate(isolane_router_request_duration_seconds_bucket[5m])))
            > {{ $v.latencyP99Seconds }}
        for: 10m
        labels:
          severity: {{ $v.severity }}
        annotations:
          summary: "The router's p99 latency is above {{ $v.latencyP99Seconds }}s."
          description: "p99 of request duration at the router is {{`{{ $value | humanizeDuration }}`}}. Look for cold starts (isolate creations), queue rejections and CPU time per request on the node dashboard."
  - name: isolane.nodes
    rules:
      - alert: IsolaneNodeLost
        expr: |
          min(isolane_router_live_nodes) < max(max_over_time(isolane_router_live_nodes[10m]))
        for: 5m
        labels:
          severity: {{ $v.severity }}
        annotations:
          summary: "A runtime node left the fleet."
          description: "The router sees {{`{{ $value }}`}} live nodes, fewer than in the last 10 minutes. A node whose Lease expired is dead to the router and its Workers moved to other nodes. A planned scale-in also fires this, for up to 10 minutes."
      - alert: IsolaneNoLiveNodes
        expr: |
          max(isolane_router_live_nodes) < {{ $v.minLiveNodes }}
        for: 1m
        labels:
          severity: critical
        annotations:
          summary: "The router sees fewer than {{ $v.minLiveNodes }} live runtime nodes."
          description: "Every request to a Worker fails while no runtime node holds a live Lease. Check the node pods and their Leases (kubectl get leases -l isolane.dev/runtime-node=true)."
      - alert: IsolaneIsolateThrash
        expr: |
          sum by (instance) (rate(isolane_node_isolate_evictions_total{reason=~"capacity|memory"}[5m]))
            > {{ $v.evictionsPerSecond }}
        for: 10m
        labels:
          severity: {{ $v.severity }}
        annotations:
          summary: "Node {{`{{ $labels.instance }}`}} keeps evicting warm isolates."
          description: "{{`{{ $value | humanize }}`}} evictions per second for capacity or memory: more Workers are hot than the isolate cache holds, so requests pay cold starts. Raise node.config.isolatesPerThread or heapBudgetMib, or add nodes."
  - name: isolane.operator
    rules:
      - alert: IsolaneReconcileFailures
        expr: |
          sum(rate(isolane_operator_reconciles_total{result="error"}[5m]))
            > {{ $v.reconcileFailuresPerSecond }}
        for: 10m
        labels:
          severity: {{ $v.severity }}
        annotations:
          summary: "The operator keeps failing to reconcile Workers."
          description: "{{`{{ $value | humanize }}`}} failed reconciles per second. isolane_operator_reconcile_errors_total tells the kind; the leader's logs tell the Worker."
{{- end }}
