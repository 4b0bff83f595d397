//! The Helm chart (`charts/isolane`), proven with the real tools: `helm lint`
//! and `helm template`; `kubectl apply --dry-run=server` and a real `helm
//! install` / `upgrade` / `uninstall` against a real kube-apiserver, with the
//! RBAC checked by the apiserver's own authorizer; the values schema; `promtool
//! check rules` and `promtool test rules` on the alert groups the chart renders;
//! `deploy/` kept in sync with the chart; and automatic certificates through
//! the chart on a real kubelet (`chart/acme.rs`, which needs root).
//!
//! Helm, promtool and kubectl come from `PATH` (Helm also from
//! `${ISOLANE_CACHE_DIR:-$HOME/.cache/isolane}/bin`); `hack/install-deps.sh`
//! installs them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use isolane_e2e::process::workspace_root;
use isolane_e2e::tools::{run, run_ok, text, tool};
use serde::Deserialize as _;
use serde_yaml::Value;

const RELEASE: &str = "isolane";
const NAMESPACE: &str = "isolane-system";

// === tools ===

fn chart() -> PathBuf {
    workspace_root().join("charts/isolane")
}

fn helm(args: &[&str]) -> Command {
    let mut command = Command::new(tool("helm"));
    command.args(args);
    command
}

/// `helm template isolane charts/isolane -n isolane-system <args>`.
fn template_output(args: &[&str]) -> Output {
    let chart = chart();
    let mut command = helm(&["template", RELEASE]);
    command
        .arg(&chart)
        .args(["--namespace", NAMESPACE])
        .args(args);
    run(&mut command, None)
}

fn template(args: &[&str]) -> String {
    let output = template_output(args);
    assert!(
        output.status.success(),
        "helm template {args:?} failed:\n{}",
        text(&output)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The objects of a multi-document YAML stream.
fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(yaml)
        .map(|document| Value::deserialize(document).expect("rendered YAML parses"))
        .filter(|document| !document.is_null())
        .collect()
}

fn kind(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

fn find<'a>(objects: &'a [Value], kind_: &str, name_: &str) -> &'a Value {
    objects
        .iter()
        .find(|object| kind(object) == kind_ && name(object) == name_)
        .unwrap_or_else(|| panic!("no {kind_} {name_} in the rendered chart"))
}

/// Every flag-carrying (`--set`) option that turns on the chart's optional parts.
const ALL_FEATURES: &[&str] = &[
    "--set",
    "router.https.enabled=true",
    "--set",
    "router.https.redirect=true",
    "--set",
    "router.ingress.enabled=true",
    "--set",
    "router.ingress.className=nginx",
    "--set",
    "router.ingress.hosts[0]=*.workers.example.com",
    "--set",
    "router.httpRoute.enabled=true",
    "--set",
    "router.httpRoute.parentRefs[0].name=public",
    "--set",
    "router.httpRoute.hostnames[0]=*.workers.example.com",
    "--set",
    "metrics.serviceMonitor.enabled=true",
    "--set",
    "metrics.podMonitor.enabled=true",
    "--set",
    "prometheusRule.enabled=true",
    "--set",
    "webhook.certManager.enabled=true",
    "--set",
    "certificates.enabled=true",
    "--set",
    "certificates.issuer.name=letsencrypt",
    "--set",
    "node.kind=Deployment",
    "--set",
    "node.replicas=3",
];

// === lint, render, schema ===

#[test]
fn helm_lint_passes_with_default_and_all_features() {
    let chart = chart();
    run_ok(helm(&["lint", "--strict"]).arg(&chart), None);
    run_ok(
        helm(&["lint", "--strict"]).arg(&chart).args(ALL_FEATURES),
        None,
    );
}

#[test]
fn workloads_run_locked_down_with_probes_and_requests() {
    let objects = documents(&template(&[]));
    let workloads: Vec<&Value> = objects
        .iter()
        .filter(|object| matches!(kind(object), "Deployment" | "DaemonSet"))
        .collect();
    let names: BTreeSet<(&str, &str)> = workloads.iter().map(|w| (kind(w), name(w))).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            ("DaemonSet", "isolane-node"),
            ("Deployment", "isolane-operator"),
            ("Deployment", "isolane-router"),
        ])
    );
    for workload in workloads {
        let pod = &workload["spec"]["template"]["spec"];
        let what = name(workload);
        assert_eq!(
            pod["securityContext"]["runAsNonRoot"],
            Value::Bool(true),
            "{what}"
        );
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
            "{what}"
        );
        let containers = pod["containers"].as_sequence().expect("containers");
        for container in containers {
            let security = &container["securityContext"];
            assert_eq!(
                security["allowPrivilegeEscalation"],
                Value::Bool(false),
                "{what}"
            );
            assert_eq!(
                security["readOnlyRootFilesystem"],
                Value::Bool(true),
                "{what}"
            );
            assert_eq!(security["runAsNonRoot"], Value::Bool(true), "{what}");
            assert_eq!(security["capabilities"]["drop"][0], "ALL", "{what}");
            assert_eq!(
                security["seccompProfile"]["type"], "RuntimeDefault",
                "{what}"
            );
            assert_eq!(
                container["livenessProbe"]["httpGet"]["path"], "/livez",
                "{what}"
            );
            assert_eq!(
                container["readinessProbe"]["httpGet"]["path"], "/readyz",
                "{what}"
            );
            assert_eq!(
                container["livenessProbe"]["httpGet"]["port"], "admin",
                "{what}"
            );
            assert!(
                container["resources"]["requests"]["cpu"].is_string(),
                "{what}"
            );
            assert!(
                container["resources"]["requests"]["memory"].is_string(),
                "{what}"
            );
            let admin = container["ports"]
                .as_sequence()
                .expect("ports")
                .iter()
                .any(|port| port["name"] == "admin");
            assert!(admin, "{what} names its admin port");
        }
    }
    let operator = find(&objects, "Deployment", "isolane-operator");
    assert_eq!(operator["spec"]["replicas"], 2);
    assert_eq!(env(operator)["ISOLANE_LEADER_ELECTION"], "true");
    for (kind_, name_) in [
        ("PodDisruptionBudget", "isolane-operator"),
        ("PodDisruptionBudget", "isolane-router"),
    ] {
        find(&objects, kind_, name_);
    }
    // The webhook trusts the CA that signed the operator's serving certificate.
    let secret = find(&objects, "Secret", "isolane-webhook-tls");
    let webhook = find(
        &objects,
        "ValidatingWebhookConfiguration",
        "isolane-isolane-system",
    );
    let client = &webhook["webhooks"][0]["clientConfig"];
    assert_eq!(client["caBundle"], secret["data"]["ca.crt"]);
    assert_eq!(client["service"]["path"], "/validate-worker");
    // Router↔node mTLS: both Secrets from one CA, mounted where the env points.
    let node_tls = find(&objects, "Secret", "isolane-grpc-node-tls");
    let router_tls = find(&objects, "Secret", "isolane-grpc-router-tls");
    assert_eq!(node_tls["data"]["ca.crt"], router_tls["data"]["ca.crt"]);
    for workload in ["isolane-node", "isolane-router"] {
        let object = objects
            .iter()
            .find(|o| name(o) == workload && matches!(kind(o), "Deployment" | "DaemonSet"))
            .expect("the workload is rendered");
        let env = env(object);
        assert_eq!(env["ISOLANE_INSECURE_GRPC"], "false", "{workload}");
        assert_eq!(env["ISOLANE_GRPC_TLS_CA"], "/etc/isolane/grpc/ca.crt");
        let volumes = serde_yaml::to_string(&object["spec"]["template"]["spec"]["volumes"])
            .expect("volumes serialize");
        let secret = format!("isolane-grpc-{}-tls", &workload["isolane-".len()..]);
        assert!(volumes.contains(&secret), "{workload}: {volumes}");
    }
    // NetworkPolicies: node gRPC only from the router and the nodes (Durable
    // Object calls), admin only from monitoring.
    let policy = find(&objects, "NetworkPolicy", "isolane-node");
    let rules = policy["spec"]["ingress"]
        .as_sequence()
        .expect("ingress rules");
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert_eq!(
        rules[0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
        "router"
    );
    assert_eq!(
        rules[0]["from"][1]["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
        "node"
    );
    assert_eq!(rules[0]["from"].as_sequence().map(Vec::len), Some(2));
    assert_eq!(rules[0]["ports"][0]["port"], 7070);
    assert_eq!(
        rules[1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "monitoring"
    );
    assert_eq!(rules[1]["ports"][0]["port"], 9090);
    for component in ["isolane-router", "isolane-operator"] {
        find(&objects, "NetworkPolicy", component);
    }
    // The Grafana sidecar picks the dashboards up by label.
    let dashboards: Vec<&str> = objects
        .iter()
        .filter(|object| kind(object) == "ConfigMap")
        .filter(|object| object["metadata"]["labels"]["grafana_dashboard"] == "1")
        .map(name)
        .collect();
    assert_eq!(dashboards.len(), 4, "{dashboards:?}");
    // The node runs as a Deployment when asked, with a PDB then.
    let objects = documents(&template(&["--set", "node.kind=Deployment"]));
    find(&objects, "Deployment", "isolane-node");
    find(&objects, "PodDisruptionBudget", "isolane-node");
    assert!(!objects.iter().any(|object| kind(object) == "DaemonSet"));
    // cert-manager issues the webhook certificate and injects the CA instead of Helm.
    let objects = documents(&template(&["--set", "webhook.certManager.enabled=true"]));
    assert!(
        !objects
            .iter()
            .any(|object| kind(object) == "Secret" && name(object) == "isolane-webhook-tls")
    );
    let certificate = find(&objects, "Certificate", "isolane-webhook");
    assert_eq!(certificate["spec"]["secretName"], "isolane-webhook-tls");
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"],
        "isolane-selfsigned"
    );
    find(&objects, "Issuer", "isolane-selfsigned");
    let webhook = find(
        &objects,
        "ValidatingWebhookConfiguration",
        "isolane-isolane-system",
    );
    assert_eq!(
        webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "isolane-system/isolane-webhook"
    );
    // A router limited to one namespace reads Workers there only, through a Role.
    let objects = documents(&template(&["--set", "router.config.watchNamespace=team-a"]));
    let role = find(&objects, "Role", "isolane-router-workers");
    assert_eq!(role["metadata"]["namespace"], "team-a");
    assert!(
        !objects
            .iter()
            .any(|object| kind(object) == "ClusterRole"
                && name(object).starts_with("isolane-router"))
    );
}

/// The `ISOLANE_*` variables of the first container of `workload`.
fn env(workload: &Value) -> BTreeMap<String, String> {
    workload["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_sequence()
        .expect("env")
        .iter()
        .filter_map(|entry| {
            let name = entry["name"].as_str()?;
            name.starts_with("ISOLANE_").then(|| {
                (
                    name.to_owned(),
                    entry["value"].as_str().unwrap_or("<from>").to_owned(),
                )
            })
        })
        .collect()
}

/// Every `"ISOLANE_…"` string literal in `files` (the binaries' flag constants).
fn env_vars_in(files: &[&str]) -> BTreeSet<String> {
    let mut vars = BTreeSet::new();
    for file in files {
        let source = std::fs::read_to_string(workspace_root().join(file))
            .unwrap_or_else(|error| panic!("read {file}: {error}"));
        for piece in source.split("\"ISOLANE_").skip(1) {
            let var: String = piece
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if piece[var.len()..].starts_with('"') {
                vars.insert(format!("ISOLANE_{var}"));
            }
        }
    }
    vars
}

#[test]
fn helm_values_map_one_to_one_to_the_binaries_flags() {
    // Empty values are left out (the binary's default applies): set the one that is empty by default.
    let objects = documents(&template(&[
        "--set",
        "router.config.watchNamespace=team-a",
        "--set-json",
        r#"reservedHosts=["*.corp.example=team-a"]"#,
        "--set",
        "node.config.egressAllow=10.20.0.0/16",
        "--set",
        "node.config.egressDeny=10.96.0.0/12",
        "--set",
        "node.config.fetchExtraCa=/etc/isolane/ca.pem",
        "--set",
        "node.config.dnsOverHttps=https://dns.example/dns-query",
        "--set",
        "router.config.trustedProxies=10.0.0.0/8",
        "--set",
        "router.https.enabled=true",
        "--set",
        "router.https.redirect=true",
        "--set",
        "certificates.enabled=true",
        "--set",
        "certificates.issuer.name=letsencrypt",
        "--set",
        "storage.postgres.existingSecret=kv-database",
        "--set",
        "storage.postgres.caConfigMap=kv-database-ca",
        "--set",
        "storage.r2.endpoint=http://s3.example:8333",
        "--set",
        "storage.r2.existingSecret=r2-credentials",
        "--set",
        "storage.r2.tempDir=/var/lib/isolane/r2",
        "--set",
        "operator.config.plainHttpRegistries=registry.local:5000",
        "--set",
        "node.config.plainHttpRegistries=registry.local:5000",
        "--set",
        "operator.config.bundleRegistries=registry.local:5000",
        "--set",
        "node.config.bundleRegistries=registry.local:5000",
        "--set",
        "operator.config.bundleRegistryCa=/etc/isolane/registry-ca/ca.crt",
        "--set",
        "node.config.bundleRegistryCa=/etc/isolane/registry-ca/ca.crt",
    ]));
    // Each binary flattens telemetry's shared admin flags (ISOLANE_ADMIN_ADDR,
    // ISOLANE_LOG_FORMAT) and reads ISOLANE_LOG in its init_tracing.
    let telemetry = [
        "crates/telemetry/src/args.rs",
        "crates/telemetry/src/logging.rs",
    ];
    let cases = [
        (
            "isolane-operator",
            [
                &[
                    "operator/src/config.rs",
                    "operator/src/certificates/settings.rs",
                    "crates/storage/src/postgres/settings.rs",
                ][..],
                &telemetry,
            ]
            .concat(),
        ),
        (
            "isolane-node",
            [
                &[
                    "runtime-node/src/config.rs",
                    "runtime-node/src/config/websocket.rs",
                    "runtime-node/src/config/objects.rs",
                    "crates/storage/src/postgres/settings.rs",
                    "crates/storage/src/r2/s3/args.rs",
                    "proto/src/mtls.rs",
                ][..],
                &telemetry,
            ]
            .concat(),
        ),
        (
            "isolane-router",
            [
                &[
                    "router/src/config.rs",
                    "router/src/tls/config.rs",
                    "proto/src/mtls.rs",
                ][..],
                &telemetry,
            ]
            .concat(),
        ),
    ];
    let mut mismatches = Vec::new();
    for (workload, files) in cases {
        let object = objects
            .iter()
            .find(|object| {
                name(object) == workload && matches!(kind(object), "Deployment" | "DaemonSet")
            })
            .expect("the workload is rendered");
        let rendered: BTreeSet<String> = env(object).into_keys().collect();
        let declared = env_vars_in(&files);
        let missing: Vec<_> = declared.difference(&rendered).collect();
        let unknown: Vec<_> = rendered.difference(&declared).collect();
        if !missing.is_empty() || !unknown.is_empty() {
            mismatches.push(format!(
                "{workload}: flags without a Helm value {missing:?}; Helm values the binary does not read {unknown:?}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "update charts/isolane (templates/_helpers.tpl, values.yaml, values.schema.json) and docs/config.md:\n{}",
        mismatches.join("\n")
    );
}

/// A registry signed by a private CA (docs/bundles.md): the CA's ConfigMap
/// mounted through `extraVolumes`/`extraVolumeMounts` and named by
/// `config.bundleRegistryCa`, on the operator and on the nodes.
#[test]
fn a_registry_ca_is_mounted_and_named_on_operator_and_nodes() {
    let volumes = r#"[{"name":"registry-ca","configMap":{"name":"registry-ca"}}]"#;
    let mounts =
        r#"[{"name":"registry-ca","mountPath":"/etc/isolane/registry-ca","readOnly":true}]"#;
    let path = "/etc/isolane/registry-ca/ca.crt";
    let mut args = Vec::new();
    for component in ["operator", "node"] {
        args.push("--set-json".to_owned());
        args.push(format!("{component}.extraVolumes={volumes}"));
        args.push("--set-json".to_owned());
        args.push(format!("{component}.extraVolumeMounts={mounts}"));
        args.push("--set".to_owned());
        args.push(format!("{component}.config.bundleRegistryCa={path}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let objects = documents(&template(&args));
    for (kind_, name_) in [
        ("Deployment", "isolane-operator"),
        ("DaemonSet", "isolane-node"),
    ] {
        let workload = find(&objects, kind_, name_);
        assert_eq!(env(workload)["ISOLANE_BUNDLE_REGISTRY_CA"], path, "{name_}");
        let pod = &workload["spec"]["template"]["spec"];
        let volume = pod["volumes"]
            .as_sequence()
            .expect("volumes")
            .iter()
            .find(|volume| volume["name"] == "registry-ca")
            .unwrap_or_else(|| panic!("{name_}: no registry-ca volume"));
        assert_eq!(volume["configMap"]["name"], "registry-ca");
        let mounted = pod["containers"][0]["volumeMounts"]
            .as_sequence()
            .expect("volumeMounts")
            .iter()
            .any(|mount| {
                mount["name"] == "registry-ca" && mount["mountPath"] == "/etc/isolane/registry-ca"
            });
        assert!(mounted, "{name_}: the CA is not mounted");
    }
}

const AUTOSCALING: &[&str] = &[
    "--set",
    "node.kind=Deployment",
    "--set",
    "node.autoscaling.enabled=true",
    "--set",
    "node.autoscaling.maxReplicas=4",
    "--set",
    "node.autoscaling.targetAverageValue=2500m",
    "--set",
    "node.autoscaling.behavior.scaleDown.stabilizationWindowSeconds=60",
];

#[test]
fn a_node_deployment_scales_on_pressure_through_the_custom_metrics_api() {
    run_ok(
        helm(&["lint", "--strict"]).arg(chart()).args(AUTOSCALING),
        None,
    );
    let objects = documents(&template(AUTOSCALING));
    let deployment = find(&objects, "Deployment", "isolane-node");
    assert!(
        deployment["spec"].get("replicas").is_none(),
        "the HPA sets the replicas, not each helm upgrade"
    );
    let hpa = find(&objects, "HorizontalPodAutoscaler", "isolane-node");
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "isolane-node");
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(hpa["spec"]["maxReplicas"], 4);
    let metric = &hpa["spec"]["metrics"][0];
    assert_eq!(metric["type"], "Pods");
    assert_eq!(
        metric["pods"]["metric"]["name"],
        "warm_set_evictions_per_second"
    );
    assert_eq!(metric["pods"]["target"]["averageValue"], "2500m");
    assert_eq!(
        hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    // The router's aggregated API serves the group, with the tail API's CA.
    let metrics_api = find(&objects, "APIService", "v1beta2.custom.metrics.k8s.io");
    let tail_api = find(&objects, "APIService", "v1alpha1.tail.isolane.dev");
    assert_eq!(metrics_api["spec"]["service"], tail_api["spec"]["service"]);
    assert_eq!(
        metrics_api["spec"]["caBundle"],
        tail_api["spec"]["caBundle"]
    );
    let role = find(
        &objects,
        "ClusterRole",
        "isolane-node-custom-metrics-reader",
    );
    assert_eq!(role["rules"][0]["apiGroups"][0], "custom.metrics.k8s.io");
    let binding = find(
        &objects,
        "ClusterRoleBinding",
        "isolane-node-isolane-system-custom-metrics-hpa",
    );
    let subjects: Vec<&str> = binding["subjects"]
        .as_sequence()
        .expect("subjects")
        .iter()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        subjects,
        [
            "horizontal-pod-autoscaler",
            "system:kube-controller-manager"
        ]
    );
    // Off by default: no HPA, no custom metrics APIService.
    let objects = documents(&template(&["--set", "node.kind=Deployment"]));
    assert!(!objects.iter().any(
        |o| kind(o) == "HorizontalPodAutoscaler" || name(o) == "v1beta2.custom.metrics.k8s.io"
    ));
    // A DaemonSet, or no aggregated API server, cannot scale this way.
    for (set, says) in [
        ("node.kind=DaemonSet", "needs node.kind=Deployment"),
        ("tailApi.enabled=false", "needs tailApi.enabled"),
    ] {
        let mut args = AUTOSCALING.to_vec();
        args.extend(["--set", set]);
        let output = template_output(&args);
        assert!(!output.status.success(), "--set {set} was accepted");
        assert!(text(&output).contains(says), "{}", text(&output));
    }
}

#[test]
fn mistyped_values_are_rejected_by_the_schema() {
    for (set, names) in [
        ("node.config.thread=4", "thread"),
        ("node.kind=StatefulSet", "kind"),
        ("operator.replica=3", "replica"),
        ("router.config.loadFactor=0.5", "loadFactor"),
        ("operator.config.leaseDuration=soon", "leaseDuration"),
        ("node.config.poolMode=global", "poolMode"),
        ("router.service.type=External", "type"),
        ("webhook.failurePolicy=Maybe", "failurePolicy"),
        ("imageTag=1.0", "imageTag"),
    ] {
        let output = template_output(&["--set", set]);
        let message = text(&output);
        assert!(!output.status.success(), "--set {set} was accepted");
        assert!(
            message.contains("values don't meet the specifications of the schema")
                && message.contains(names),
            "--set {set}: {message}"
        );
    }
    // Types come from the schema too: a number where a boolean goes.
    let output = template_output(&["--set-json", "node.config.pinThreads=1"]);
    assert!(!output.status.success(), "pinThreads=1 was accepted");
}

// The HTTPS client of chart/acme.rs and chart/gateway_traffic.rs (and of
// tls.rs, which uses what they do not).
#[allow(dead_code)]
#[path = "tls/client.rs"]
mod client;

#[path = "chart/acme.rs"]
mod acme;

#[path = "chart/cluster.rs"]
mod cluster;

#[path = "chart/gateway.rs"]
mod gateway;

#[path = "chart/gateway_traffic.rs"]
mod gateway_traffic;

/// The PrometheusRule's `spec` as a Prometheus rule file.
fn rule_groups(args: &[&str]) -> Value {
    let mut all = vec!["--set", "prometheusRule.enabled=true"];
    all.extend_from_slice(args);
    let objects = documents(&template(&all));
    let rule = objects
        .iter()
        .find(|object| kind(object) == "PrometheusRule")
        .expect("a PrometheusRule");
    rule["spec"].clone()
}

#[test]
fn alert_rules_from_the_chart_pass_promtool_check_and_unit_tests() {
    let groups = rule_groups(&[]);
    let alerts: BTreeSet<&str> = groups["groups"]
        .as_sequence()
        .expect("groups")
        .iter()
        .flat_map(|group| group["rules"].as_sequence().expect("rules"))
        .filter_map(|rule| rule["alert"].as_str())
        .collect();
    for alert in [
        "IsolaneHighErrorRatio",
        "IsolaneHighLatencyP99",
        "IsolaneNodeLost",
        "IsolaneIsolateThrash",
        "IsolaneReconcileFailures",
    ] {
        assert!(alerts.contains(alert), "{alert} is missing: {alerts:?}");
    }
    // deploy/alerts holds the same groups, for a plain Prometheus.
    let committed =
        std::fs::read_to_string(workspace_root().join("deploy/alerts/isolane.rules.yaml"))
            .expect("read rules");
    let committed: Value = serde_yaml::from_str(&committed).expect("rules parse");
    assert_eq!(
        committed, groups,
        "deploy/alerts/isolane.rules.yaml is stale: run `make deploy-render`"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let rules = dir.path().join("isolane.rules.yaml");
    std::fs::write(&rules, serde_yaml::to_string(&groups).expect("serialise"))
        .expect("write rules");
    let tests = dir.path().join("isolane.rules.test.yaml");
    std::fs::copy(
        workspace_root().join("deploy/alerts/isolane.rules.test.yaml"),
        &tests,
    )
    .expect("copy tests");
    let promtool = tool("promtool");
    let checked = run_ok(
        Command::new(&promtool).args(["check", "rules"]).arg(&rules),
        None,
    );
    assert!(checked.contains("SUCCESS: 6 rules found"), "{checked}");
    run_ok(
        Command::new(&promtool).args(["test", "rules"]).arg(&tests),
        None,
    );

    // Thresholds are values: a tighter error ratio lands in the expression.
    // (--set turns 0.001 into a string, which the schema refuses; --set-json keeps numbers.)
    let tight = rule_groups(&["--set-json", "prometheusRule.errorRatio=0.001"]);
    let expr = tight["groups"][0]["rules"][0]["expr"]
        .as_str()
        .expect("expr");
    assert!(expr.contains("> 0.001"), "{expr}");
}

// === deploy/ ===

fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).expect("read dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).expect("under dir").to_path_buf();
                files.insert(relative, std::fs::read(&path).expect("read file"));
            }
        }
    }
    files
}

#[test]
fn deploy_is_rendered_from_the_chart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = workspace_root().join("deploy/render.sh");
    let mut command = Command::new(&script);
    command.arg(dir.path());
    // render.sh finds helm on PATH or in the cache, like `tool`.
    if let Some(helm) = tool("helm").parent() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let joined = std::env::join_paths(
            std::iter::once(helm.to_path_buf()).chain(std::env::split_paths(&path)),
        )
        .expect("PATH joins");
        command.env("PATH", joined);
    }
    run_ok(&mut command, None);
    let rendered = files_under(dir.path());
    let deploy = workspace_root().join("deploy");
    let mut stale = Vec::new();
    for (relative, content) in &rendered {
        match std::fs::read(deploy.join(relative)) {
            Ok(committed) if committed == *content => {}
            Ok(_) => stale.push(format!("{} differs", relative.display())),
            Err(_) => stale.push(format!("{} is missing", relative.display())),
        }
    }
    // A dashboard removed from the chart must go from deploy/ too.
    for entry in std::fs::read_dir(deploy.join("dashboards")).expect("deploy/dashboards") {
        let relative = Path::new("dashboards").join(entry.expect("entry").file_name());
        if !rendered.contains_key(&relative) {
            stale.push(format!("{} is not in the chart", relative.display()));
        }
    }
    assert!(
        stale.is_empty(),
        "deploy/ is stale ({}): run `make deploy-render`",
        stale.join(", ")
    );
    assert!(
        rendered.len() >= 6,
        "{:?}",
        rendered.keys().collect::<Vec<_>>()
    );
}

/// The `OTEL_*` variables a workload's container gets (docs/tracing.md).
fn otel_env(workload: &Value) -> BTreeMap<String, String> {
    workload["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_sequence()
        .expect("env")
        .iter()
        .filter_map(|entry| {
            let name = entry["name"].as_str()?;
            let value = entry["value"].as_str().unwrap_or_default();
            name.starts_with("OTEL_")
                .then(|| (name.to_owned(), value.to_owned()))
        })
        .collect()
}

#[test]
fn tracing_values_set_the_otel_variables_on_every_workload() {
    let workloads = |objects: &[Value]| -> Vec<(String, BTreeMap<String, String>)> {
        objects
            .iter()
            .filter(|o| matches!(kind(o), "Deployment" | "DaemonSet"))
            .map(|o| (name(o).to_owned(), otel_env(o)))
            .collect()
    };
    // Off by default: no OTEL_* variable anywhere.
    for (workload, env) in workloads(&documents(&template(&[]))) {
        assert!(env.is_empty(), "{workload}: {env:?}");
    }
    let on = documents(&template(&[
        "--set",
        "tracing.enabled=true",
        "--set",
        "tracing.endpoint=http://collector:4318",
        "--set",
        "tracing.protocol=http/protobuf",
        "--set",
        "tracing.sampler=parentbased_traceidratio",
        "--set",
        "tracing.samplerArg=0.25",
    ]));
    let on = workloads(&on);
    assert_eq!(on.len(), 3, "{on:?}");
    for (workload, env) in on {
        assert_eq!(env["OTEL_EXPORTER_OTLP_ENDPOINT"], "http://collector:4318");
        assert_eq!(env["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf");
        assert_eq!(env["OTEL_SERVICE_NAME"], workload, "{env:?}");
        assert_eq!(env["OTEL_TRACES_SAMPLER"], "parentbased_traceidratio");
        assert_eq!(env["OTEL_TRACES_SAMPLER_ARG"], "0.25");
    }
    // Turned on without an endpoint: the chart refuses, naming the value.
    let output = template_output(&["--set", "tracing.enabled=true"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tracing.endpoint"), "{stderr}");
}

/// What a Role or ClusterRole grants on Secrets (the verbs of its rules
/// that name them).
fn secret_verbs(role: &Value) -> BTreeSet<String> {
    resource_verbs(role, "secrets")
}

/// The verbs `role` grants on `resource`.
fn resource_verbs(role: &Value, resource: &str) -> BTreeSet<String> {
    let rules = role["rules"].as_sequence().cloned().unwrap_or_default();
    rules
        .iter()
        .filter(|rule| {
            rule["resources"]
                .as_sequence()
                .is_some_and(|r| r.iter().any(|r| r.as_str() == Some(resource)))
        })
        .flat_map(|rule| rule["verbs"].as_sequence().cloned().unwrap_or_default())
        .filter_map(|verb| verb.as_str().map(str::to_owned))
        .collect()
}

/// HTTPS for tenants' hosts (docs/tls.md): off by default, with no access
/// to Secrets; on, the router gets its flags, a container port, the
/// Service's 443 and `list`/`watch` on Secrets (not `get`), cluster-wide or
/// in the watched namespace only.
#[test]
fn https_adds_its_port_flags_and_only_list_watch_on_secrets() {
    let off = documents(&template(&[]));
    let router = find(&off, "Deployment", "isolane-router");
    assert!(!env(router).contains_key("ISOLANE_TLS_LISTEN_ADDR"));
    let role = find(&off, "ClusterRole", "isolane-router-isolane-system");
    assert!(secret_verbs(role).is_empty(), "{role:?}");

    let on = documents(&template(&[
        "--set",
        "router.https.enabled=true",
        "--set",
        "router.https.redirect=true",
    ]));
    let env = env(find(&on, "Deployment", "isolane-router"));
    assert_eq!(env["ISOLANE_TLS_LISTEN_ADDR"], "0.0.0.0:8444");
    assert_eq!(env["ISOLANE_HTTPS_PORT"], "443");
    assert_eq!(env["ISOLANE_REDIRECT_TO_HTTPS"], "true");
    let service = find(&on, "Service", "isolane-router");
    let ports = service["spec"]["ports"].as_sequence().expect("ports");
    let https = ports
        .iter()
        .find(|port| port["name"].as_str() == Some("https"))
        .expect("an https port");
    assert_eq!(https["port"].as_u64(), Some(443));
    assert_eq!(https["targetPort"].as_str(), Some("https"));
    let role = find(&on, "ClusterRole", "isolane-router-isolane-system");
    let expected: BTreeSet<String> = ["list", "watch"].map(str::to_owned).into();
    assert_eq!(secret_verbs(role), expected);

    let scoped = documents(&template(&[
        "--set",
        "router.https.enabled=true",
        "--set",
        "router.config.watchNamespace=team-a",
    ]));
    let role = scoped
        .iter()
        .find(|o| kind(o) == "Role" && name(o) == "isolane-router-workers")
        .expect("the router's Role in the watched namespace");
    assert_eq!(role["metadata"]["namespace"].as_str(), Some("team-a"));
    assert_eq!(secret_verbs(role), expected);
    assert!(
        !scoped.iter().any(|o| kind(o) == "ClusterRole"
            && name(o).starts_with("isolane-router")
            && !secret_verbs(o).is_empty()),
        "no cluster-wide Secret access with a watched namespace"
    );
}

/// Automatic certificates (docs/tls.md): off by default, with no flag and
/// no access to cert-manager's resources; on, the operator names the issuer
/// and may manage Certificates, the router answers HTTP-01 and may read
/// Challenges; an issuer name is required.
#[test]
fn certificates_add_the_issuer_flags_and_cert_manager_access() {
    let off = documents(&template(&[]));
    let operator = find(&off, "Deployment", "isolane-operator");
    assert!(!env(operator).contains_key("ISOLANE_CERTIFICATES_ISSUER"));
    assert!(!env(find(&off, "Deployment", "isolane-router")).contains_key("ISOLANE_ACME_HTTP01"));
    let operator_role = "isolane-operator-isolane-system";
    let router_role = "isolane-router-isolane-system";
    assert!(resource_verbs(find(&off, "ClusterRole", operator_role), "certificates").is_empty());
    assert!(resource_verbs(find(&off, "ClusterRole", router_role), "challenges").is_empty());

    let on = documents(&template(&[
        "--set",
        "certificates.enabled=true",
        "--set",
        "certificates.issuer.kind=Issuer",
        "--set",
        "certificates.issuer.name=acme",
    ]));
    let operator = env(find(&on, "Deployment", "isolane-operator"));
    assert_eq!(operator["ISOLANE_CERTIFICATES_ISSUER"], "acme");
    assert_eq!(operator["ISOLANE_CERTIFICATES_ISSUER_KIND"], "issuer");
    assert_eq!(operator["ISOLANE_CERTIFICATES_MODE"], "per-host");
    // The wildcard issuer defaults to the issuer, or is its own.
    assert_eq!(operator["ISOLANE_CERTIFICATES_WILDCARD_ISSUER"], "acme");
    assert_eq!(
        operator["ISOLANE_CERTIFICATES_WILDCARD_ISSUER_KIND"],
        "issuer"
    );
    let wildcard = documents(&template(&[
        "--set",
        "certificates.enabled=true",
        "--set",
        "certificates.issuer.name=acme",
        "--set",
        "certificates.mode=wildcard",
        "--set",
        "certificates.wildcard.issuer.name=acme-dns01",
    ]));
    let wildcard = env(find(&wildcard, "Deployment", "isolane-operator"));
    assert_eq!(wildcard["ISOLANE_CERTIFICATES_MODE"], "wildcard");
    assert_eq!(
        wildcard["ISOLANE_CERTIFICATES_WILDCARD_ISSUER"],
        "acme-dns01"
    );
    assert_eq!(
        wildcard["ISOLANE_CERTIFICATES_WILDCARD_ISSUER_KIND"],
        "cluster-issuer"
    );
    assert_eq!(
        env(find(&on, "Deployment", "isolane-router"))["ISOLANE_ACME_HTTP01"],
        "true"
    );
    let certificates = resource_verbs(find(&on, "ClusterRole", operator_role), "certificates");
    for verb in ["create", "get", "list", "watch", "delete"] {
        assert!(certificates.contains(verb), "{verb}: {certificates:?}");
    }
    let challenges = resource_verbs(find(&on, "ClusterRole", router_role), "challenges");
    let expected: BTreeSet<String> = ["get", "list", "watch"].map(str::to_owned).into();
    assert_eq!(challenges, expected);

    let output = template_output(&["--set", "certificates.enabled=true"]);
    assert!(!output.status.success(), "an issuer name is required");
}
