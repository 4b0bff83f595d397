//! The chart against a real apiserver: `kubectl apply --dry-run=server` of
//! what it renders, and a real `helm install` / `upgrade` / `uninstall` with
//! the RBAC checked by the apiserver's own authorizer.

use std::time::Duration;

use isolane_e2e::release::helm_install;
use isolane_testenv::{ControlPlane, wait_until};

use super::*;

/// A stand-in CRD for a kind the chart can render but this apiserver does not
/// know (prometheus-operator, cert-manager): the real group,
/// version, kind and plural, with the schema left open. It proves the chart's
/// objects are addressed right, not that their specs are valid for the real CRD.
fn stand_in_crd(group: &str, version: &str, kind_: &str, plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.{group}\n  annotations:\n    api-approved.kubernetes.io: unapproved, a test stand-in\nspec:\n  group: {group}\n  scope: Namespaced\n  names:\n    kind: {kind_}\n    listKind: {kind_}List\n    plural: {plural}\n    singular: {singular}\n  versions:\n    - name: {version}\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          x-kubernetes-preserve-unknown-fields: true\n---\n",
        singular = kind_.to_ascii_lowercase(),
    )
}

fn stand_in_crds() -> String {
    [
        (
            "monitoring.coreos.com",
            "v1",
            "ServiceMonitor",
            "servicemonitors",
        ),
        ("monitoring.coreos.com", "v1", "PodMonitor", "podmonitors"),
        (
            "monitoring.coreos.com",
            "v1",
            "PrometheusRule",
            "prometheusrules",
        ),
        ("cert-manager.io", "v1", "Certificate", "certificates"),
        ("cert-manager.io", "v1", "Issuer", "issuers"),
    ]
    .iter()
    .map(|(group, version, kind_, plural)| stand_in_crd(group, version, kind_, plural))
    .collect()
}

pub(super) async fn control_plane() -> ControlPlane {
    let cp = ControlPlane::start().await.expect("control plane starts");
    let crds = chart().join("crds");
    run_ok(
        cp.kubectl(["apply", "--server-side", "-f"]).arg(&crds),
        None,
    );
    run_ok(
        &mut cp.kubectl([
            "wait",
            "--for=condition=Established",
            "crd/workers.isolane.dev",
            "--timeout=60s",
        ]),
        None,
    );
    cp
}

#[tokio::test]
async fn rendered_chart_and_deploy_manifests_pass_server_side_dry_run() {
    let cp = control_plane().await;
    cp.create_namespace(NAMESPACE).await.expect("namespace");
    run_ok(
        &mut cp.kubectl(["apply", "--server-side", "-f", "-"]),
        Some(&stand_in_crds()),
    );
    // The Gateway API's are the real CRDs: the HTTPRoute is validated.
    run_ok(
        cp.kubectl(["apply", "--server-side", "-f"])
            .arg(super::gateway::gateway_api_crds()),
        None,
    );
    run_ok(
        &mut cp.kubectl([
            "wait",
            "--for=condition=Established",
            "crd",
            "--all",
            "--timeout=60s",
        ]),
        None,
    );

    for (what, args) in [
        ("default values", &[][..]),
        ("every optional part", ALL_FEATURES),
        ("nodes autoscaled on pressure", AUTOSCALING),
    ] {
        let manifests = template(args);
        let output = run_ok(
            &mut cp.kubectl(["apply", "--dry-run=server", "--server-side", "-f", "-"]),
            Some(&manifests),
        );
        let applied = output.lines().count();
        assert!(applied >= 25, "{what}: only {applied} objects:\n{output}");
        eprintln!("{what}: {applied} objects pass server-side dry run");
    }
    // deploy/isolane.yaml is what `kubectl apply -f deploy/` users get; its
    // namespace exists already, so the whole file dry-runs.
    let manifests = std::fs::read_to_string(workspace_root().join("deploy/isolane.yaml"))
        .expect("deploy/isolane.yaml");
    run_ok(
        &mut cp.kubectl(["apply", "--dry-run=server", "--server-side", "-f", "-"]),
        Some(&manifests),
    );
}

/// `kubectl auth can-i <verb> <resource> --as <service account> [-n ns]`, by the apiserver's RBAC.
fn can_i(
    cp: &ControlPlane,
    account: &str,
    verb: &str,
    resource: &str,
    namespace: Option<&str>,
) -> bool {
    let subject = format!("system:serviceaccount:{NAMESPACE}:{account}");
    // `workers.isolane.dev/status` means the status subresource, not an object named status.
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    let mut command = cp.kubectl(["auth", "can-i", verb, resource, "--as", &subject]);
    if !subresource.is_empty() {
        command.arg(format!("--subresource={subresource}"));
    }
    match namespace {
        Some(namespace) => command.args(["-n", namespace]),
        None => command.arg("--all-namespaces"),
    };
    let output = run(&mut command, None);
    String::from_utf8_lossy(&output.stdout).trim() == "yes"
}

/// `helm install` of the chart as [`RELEASE`] on the test kubelet, with
/// `isolane_e2e::release::helm_install`'s values and `--wait`, and `values`
/// beside them; panics with Helm's output when it fails.
pub(super) fn install_on_kubelet(cp: &ControlPlane, values: Vec<String>) {
    let mut helm = Command::new(tool("helm"));
    let kubeconfig = cp.kubeconfig_path();
    let install = helm_install(&mut helm, RELEASE, chart(), kubeconfig, NAMESPACE);
    let installed = run(install.args(values), None);
    assert!(installed.status.success(), "{}", text(&installed));
}

pub(super) fn helm_at(cp: &ControlPlane, args: &[&str]) -> Command {
    let mut command = helm(args);
    command.arg("--kubeconfig").arg(cp.kubeconfig_path());
    command
}

/// `helm <action> isolane charts/isolane -n isolane-system --create-namespace <values>`.
pub(super) fn helm_action(cp: &ControlPlane, action: &str, values: &[&str]) -> Output {
    let chart = chart();
    let chart = chart.to_str().expect("utf-8 path");
    let args = [
        &[
            action,
            RELEASE,
            chart,
            "-n",
            NAMESPACE,
            "--create-namespace",
        ][..],
        values,
    ]
    .concat();
    run(&mut helm_at(cp, &args), None)
}

pub(super) fn kubectl_json(cp: &ControlPlane, args: &[&str]) -> serde_json::Value {
    let mut command = cp.kubectl(args);
    command.args(["-o", "json"]);
    serde_json::from_str(&run_ok(&mut command, None)).expect("kubectl prints JSON")
}

pub(super) fn exists(
    cp: &ControlPlane,
    resource: &str,
    name_: &str,
    namespace: Option<&str>,
) -> bool {
    let mut command = cp.kubectl(["get", resource, name_, "--ignore-not-found", "-o", "name"]);
    if let Some(namespace) = namespace {
        command.args(["-n", namespace]);
    }
    !run_ok(&mut command, None).trim().is_empty()
}

#[tokio::test]
async fn helm_install_upgrade_and_uninstall_against_a_real_apiserver() {
    let cp = control_plane().await;
    let chart = chart();
    let chart = chart.to_str().expect("utf-8 path");

    // A mistyped value fails the install before anything is created.
    let output = run(
        &mut helm_at(
            &cp,
            &[
                "install",
                RELEASE,
                chart,
                "-n",
                NAMESPACE,
                "--create-namespace",
                "--set",
                "router.replica=3",
            ],
        ),
        None,
    );
    assert!(
        !output.status.success(),
        "a mistyped value installed:\n{}",
        text(&output)
    );
    assert!(text(&output).contains("replica"), "{}", text(&output));

    let notes = run_ok(
        &mut helm_at(
            &cp,
            &[
                "install",
                RELEASE,
                chart,
                "-n",
                NAMESPACE,
                "--create-namespace",
            ],
        ),
        None,
    );
    assert!(
        notes.contains("kind: Worker") && notes.contains("curl -H 'Host: hello.example.com'"),
        "NOTES:\n{notes}"
    );

    let ns = Some(NAMESPACE);
    for (resource, name_, namespace) in [
        ("deployment", "isolane-operator", ns),
        ("deployment", "isolane-router", ns),
        ("daemonset", "isolane-node", ns),
        ("service", "isolane-router", ns),
        ("service", "isolane-webhook", ns),
        ("service", "isolane-node-metrics", ns),
        ("secret", "isolane-webhook-tls", ns),
        ("poddisruptionbudget", "isolane-operator", ns),
        ("configmap", "isolane-dashboard-overview", ns),
        (
            "validatingwebhookconfiguration",
            "isolane-isolane-system",
            None,
        ),
        ("clusterrole", "isolane-operator-isolane-system", None),
        ("clusterrole", "isolane-router-isolane-system", None),
        ("role", "isolane-node", ns),
        ("crd", "workers.isolane.dev", None),
    ] {
        assert!(
            exists(&cp, resource, name_, namespace),
            "{resource} {name_} was not installed"
        );
    }

    // Least privilege, as the apiserver's authorizer sees it.
    let checks: &[(&str, &str, &str, Option<&str>, bool)] = &[
        ("isolane-node", "list", "secrets", ns, true),
        ("isolane-node", "watch", "secrets", ns, true),
        ("isolane-node", "create", "secrets", ns, false),
        ("isolane-node", "list", "secrets", Some("default"), false),
        (
            "isolane-node",
            "create",
            "leases.coordination.k8s.io",
            ns,
            true,
        ),
        (
            "isolane-node",
            "delete",
            "leases.coordination.k8s.io",
            ns,
            true,
        ),
        (
            "isolane-node",
            "create",
            "leases.coordination.k8s.io",
            Some("default"),
            false,
        ),
        ("isolane-node", "list", "workers.isolane.dev", ns, false),
        ("isolane-node", "list", "configmaps", ns, false),
        ("isolane-node", "update", "configmaps", ns, false),
        ("isolane-router", "watch", "workers.isolane.dev", None, true),
        (
            "isolane-router",
            "patch",
            "workers.isolane.dev",
            None,
            false,
        ),
        (
            "isolane-router",
            "watch",
            "leases.coordination.k8s.io",
            ns,
            true,
        ),
        (
            "isolane-router",
            "update",
            "leases.coordination.k8s.io",
            ns,
            false,
        ),
        ("isolane-router", "get", "secrets", ns, false),
        (
            "isolane-operator",
            "patch",
            "workers.isolane.dev/status",
            None,
            true,
        ),
        (
            "isolane-operator",
            "update",
            "workers.isolane.dev/finalizers",
            None,
            true,
        ),
        (
            "isolane-operator",
            "delete",
            "workers.isolane.dev",
            None,
            false,
        ),
        ("isolane-operator", "watch", "configmaps", None, true),
        ("isolane-operator", "watch", "secrets", None, true),
        ("isolane-operator", "patch", "secrets", ns, true),
        (
            "isolane-operator",
            "patch",
            "secrets",
            Some("default"),
            false,
        ),
        (
            "isolane-operator",
            "update",
            "leases.coordination.k8s.io",
            ns,
            true,
        ),
        (
            "isolane-operator",
            "update",
            "leases.coordination.k8s.io",
            Some("default"),
            false,
        ),
        (
            "isolane-operator",
            "create",
            "events.events.k8s.io",
            Some("default"),
            true,
        ),
        // Host-owner records (docs/operator.md): the operator writes them in
        // its namespace only; the router reads them there; nodes neither.
        ("isolane-operator", "create", "configmaps", ns, true),
        ("isolane-operator", "delete", "configmaps", ns, true),
        (
            "isolane-operator",
            "create",
            "configmaps",
            Some("default"),
            false,
        ),
        ("isolane-router", "watch", "configmaps", ns, true),
        ("isolane-router", "create", "configmaps", ns, false),
        (
            "isolane-router",
            "list",
            "configmaps",
            Some("default"),
            false,
        ),
    ];
    let wrong: Vec<String> = checks
        .iter()
        .filter(|(account, verb, resource, namespace, allowed)| {
            can_i(&cp, account, verb, resource, *namespace) != *allowed
        })
        .map(|(account, verb, resource, namespace, allowed)| {
            format!("{account} {verb} {resource} in {namespace:?}: expected allowed={allowed}")
        })
        .collect();
    assert!(wrong.is_empty(), "RBAC:\n{}", wrong.join("\n"));

    let secret_before = kubectl_json(
        &cp,
        &["get", "secret", "isolane-webhook-tls", "-n", NAMESPACE],
    );
    let grpc_secrets = ["isolane-grpc-node-tls", "isolane-grpc-router-tls"];
    let grpc_before: Vec<_> = grpc_secrets
        .iter()
        .map(|secret| {
            kubectl_json(&cp, &["get", "secret", secret, "-n", NAMESPACE])["data"].clone()
        })
        .collect();
    let webhook_before = kubectl_json(
        &cp,
        &[
            "get",
            "validatingwebhookconfiguration",
            "isolane-isolane-system",
        ],
    );

    // Upgrade: nodes become a Deployment of 3 with 4 threads each.
    run_ok(
        &mut helm_at(
            &cp,
            &[
                "upgrade",
                RELEASE,
                chart,
                "-n",
                NAMESPACE,
                "--reuse-values",
                "--set",
                "node.kind=Deployment",
                "--set",
                "node.replicas=3",
                "--set",
                "node.config.threads=4",
            ],
        ),
        None,
    );
    let node = kubectl_json(&cp, &["get", "deployment", "isolane-node", "-n", NAMESPACE]);
    assert_eq!(node["spec"]["replicas"], 3);
    let threads = node["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|entry| entry["name"] == "ISOLANE_THREADS")
        .map(|entry| entry["value"].clone());
    assert_eq!(threads, Some(serde_json::json!("4")));
    assert!(
        !exists(&cp, "daemonset", "isolane-node", ns),
        "the DaemonSet outlived the upgrade"
    );
    assert!(exists(&cp, "poddisruptionbudget", "isolane-node", ns));
    // The webhook certificate survives the upgrade (lookup), so does its CA bundle.
    let secret_after = kubectl_json(
        &cp,
        &["get", "secret", "isolane-webhook-tls", "-n", NAMESPACE],
    );
    let webhook_after = kubectl_json(
        &cp,
        &[
            "get",
            "validatingwebhookconfiguration",
            "isolane-isolane-system",
        ],
    );
    assert_eq!(
        secret_before["data"], secret_after["data"],
        "the webhook certificate changed on upgrade"
    );
    let grpc_after: Vec<_> = grpc_secrets
        .iter()
        .map(|secret| {
            kubectl_json(&cp, &["get", "secret", secret, "-n", NAMESPACE])["data"].clone()
        })
        .collect();
    assert_eq!(
        grpc_before, grpc_after,
        "the gRPC certificates changed on upgrade"
    );
    assert_eq!(
        webhook_before["webhooks"][0]["clientConfig"]["caBundle"],
        webhook_after["webhooks"][0]["clientConfig"]["caBundle"]
    );
    assert_eq!(
        webhook_after["webhooks"][0]["clientConfig"]["caBundle"],
        secret_after["data"]["ca.crt"]
    );
    let history = run_ok(
        &mut helm_at(&cp, &["history", RELEASE, "-n", NAMESPACE]),
        None,
    );
    assert!(
        history.contains("deployed") && history.lines().count() == 3,
        "{history}"
    );

    // A second installation beside it, of another Worker class
    // (docs/operator.md): no cluster-scoped object clashes with the first's.
    // The tail API's APIService is the cluster's one (docs/tail.md): only the
    // first installation serves it.
    let staging = ["-n", "isolane-staging"];
    run_ok(
        &mut helm_at(
            &cp,
            &[
                &["install", "isolane-staging", chart][..],
                &staging,
                &[
                    "--create-namespace",
                    "--set",
                    "workerClass=staging",
                    "--set",
                    "tailApi.enabled=false",
                ],
            ]
            .concat(),
        ),
        None,
    );
    assert!(exists(
        &cp,
        "clusterrole",
        "isolane-worker-tail-staging",
        None
    ));
    run_ok(
        &mut helm_at(
            &cp,
            &[&["uninstall", "isolane-staging"][..], &staging, &["--wait"]].concat(),
        ),
        None,
    );

    run_ok(
        &mut helm_at(
            &cp,
            &[
                "uninstall",
                RELEASE,
                "-n",
                NAMESPACE,
                "--wait",
                "--timeout",
                "60s",
            ],
        ),
        None,
    );
    wait_until(
        "the release's objects to be gone",
        Duration::from_secs(60),
        || async {
            let gone = [
                ("deployment", "isolane-operator", ns),
                ("deployment", "isolane-router", ns),
                ("deployment", "isolane-node", ns),
                ("secret", "isolane-webhook-tls", ns),
                (
                    "validatingwebhookconfiguration",
                    "isolane-isolane-system",
                    None,
                ),
                ("clusterrole", "isolane-operator-isolane-system", None),
                ("clusterrolebinding", "isolane-router-isolane-system", None),
                ("role", "isolane-node", ns),
                ("configmap", "isolane-dashboard-overview", ns),
            ]
            .iter()
            .all(|(resource, name_, namespace)| !exists(&cp, resource, name_, *namespace));
            gone.then_some(())
        },
    )
    .await;
    // Helm never deletes CRDs (that would delete every Worker).
    assert!(exists(&cp, "crd", "workers.isolane.dev", None));
}

// === alerts ===
