//! The chart as an OCI artifact, as a platform team installs it: `make
//! chart`'s archive (`hack/package-chart.sh`) pushed with `helm push` to the
//! test registry (plain HTTP on loopback, htpasswd auth), then `helm install
//! oci://…/isolane@sha256:<digest>` on a real kubelet: every pod Ready by the
//! chart's own probes, the webhook answering `kubectl apply`, and a Worker
//! answering through the router's Service, as the folder install in
//! `e2e/tests/pods.rs` does. A digest the registry does not hold is refused.
//!
//! Needs root (the node: containerd, a bridge, iptables); see docs/testing.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use isolane_e2e::ingress::Ingress;
use isolane_e2e::process::workspace_root;
use isolane_e2e::release::{
    first_answer, helm_install, is_ready, kubelet_control_plane, router_service, worker_yaml,
};
use isolane_e2e::tools::{run, run_ok, text, tool};
use isolane_testenv::{Registry, wait_until};
use k8s_openapi::api::core::v1::Pod;

const RELEASE: &str = "isolane";
const NAMESPACE: &str = "isolane-system";
const HOST: &str = "hello.oci.test";
const REPOSITORY: &str = "charts";

/// Helm with its own registry login, cache and configuration under `home`,
/// nothing of the machine's.
fn helm(home: &Path) -> Command {
    let mut command = Command::new(tool("helm"));
    command
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .arg("--registry-config")
        .arg(home.join("registry.json"));
    command
}

/// `make chart` into `out`: the archive's path.
fn package(out: &Path) -> PathBuf {
    let printed = run_ok(
        Command::new(workspace_root().join("hack/package-chart.sh")).arg(out),
        None,
    );
    let archive = PathBuf::from(printed.trim());
    assert!(
        archive.is_file(),
        "no chart archive at {}",
        archive.display()
    );
    archive
}

/// Logs in to `registry` and pushes `archive`: the digest Helm reports.
fn push(home: &Path, registry: &Registry, archive: &Path) -> String {
    run_ok(
        helm(home)
            .args(["registry", "login", &registry.host(), "--plain-http"])
            .args(["--username", registry.username(), "--password-stdin"]),
        Some(registry.password()),
    );
    let output = run(
        helm(home)
            .arg("push")
            .arg(archive)
            .arg(format!("oci://{}/{REPOSITORY}", registry.host()))
            .arg("--plain-http"),
        None,
    );
    assert!(output.status.success(), "helm push: {}", text(&output));
    let printed = text(&output);
    let digest = printed
        .lines()
        .find_map(|line| line.trim().strip_prefix("Digest: "))
        .unwrap_or_else(|| panic!("helm push printed no digest: {printed}"));
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    digest.to_owned()
}

fn worker(script: &str) -> String {
    worker_yaml("hello", HOST, script)
}

/// `kubectl apply` of a Worker once the webhook answers through its Service.
async fn apply_once_the_webhook_answers(kubeconfig: &Path, manifest: &str) {
    let output = wait_until(
        "the admission webhook to be reachable through its Service",
        Duration::from_secs(60),
        || {
            let output = run(
                Command::new("kubectl")
                    .arg("--kubeconfig")
                    .arg(kubeconfig)
                    .args(["apply", "-f", "-"]),
                Some(manifest),
            );
            let unreachable = text(&output).contains("failed calling webhook");
            async move { (!unreachable).then_some(output) }
        },
    )
    .await;
    assert!(output.status.success(), "kubectl apply: {}", text(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_installs_from_an_oci_registry_by_digest() {
    if std::env::var_os(isolane_testenv::ENV_TEST_KUBECONFIG).is_some() {
        // An existing cluster has its own nodes, which cannot load these images.
        return;
    }
    let work = tempfile::tempdir().expect("tempdir");
    let home = work.path().join("helm");
    let archive = package(&work.path().join("chart"));
    let registry = Registry::start("isolane", "push-charts").expect("the registry starts");
    let digest = push(&home, &registry, &archive);
    let reference = format!("oci://{}/{REPOSITORY}/isolane", registry.host());
    eprintln!("pushed {} as {reference}@{digest}", archive.display());

    // Pinned by digest: one the registry does not hold is refused.
    let missing = format!("{reference}@sha256:{}", "0".repeat(64));
    let output = run(
        helm(&home).args(["show", "chart", &missing, "--plain-http"]),
        None,
    );
    assert!(!output.status.success(), "helm show chart {missing}");

    let image_dir = work.path().join("images");
    let cp = kubelet_control_plane(&image_dir).await;
    let kubeconfig = cp.kubeconfig_path().to_owned();

    let installed = Instant::now();
    let output = run(
        helm_install(
            &mut helm(&home),
            RELEASE,
            format!("{reference}@{digest}"),
            &kubeconfig,
            NAMESPACE,
        )
        .arg("--plain-http")
        .args(["--set", "router.replicas=1"]),
        None,
    );
    assert!(output.status.success(), "helm install: {}", text(&output));
    eprintln!(
        "helm install oci://…@{digest} --wait took {:?}",
        installed.elapsed()
    );

    // The release is the pushed chart.
    let metadata = run_ok(
        helm(&home)
            .args(["get", "metadata", RELEASE, "-o", "json"])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", NAMESPACE]),
        None,
    );
    let metadata: serde_json::Value = serde_json::from_str(&metadata).expect("JSON");
    assert_eq!(metadata["chart"], "isolane", "{metadata}");

    let pods = kube::Api::<Pod>::namespaced(cp.client(), NAMESPACE);
    let list = wait_until("every pod Ready", Duration::from_secs(120), || async {
        let list = pods.list(&Default::default()).await.ok()?;
        (list.items.len() >= 4 && list.items.iter().all(is_ready)).then_some(list)
    })
    .await;
    eprintln!(
        "{} pods Ready after {:?}",
        list.items.len(),
        installed.elapsed()
    );

    apply_once_the_webhook_answers(
        &kubeconfig,
        &worker("export default {\n  fetch() {\n    return new Response(\"from the OCI chart\\n\");\n  },\n};"),
    )
    .await;
    let ingress = Ingress::new(router_service(cp.client(), NAMESPACE, RELEASE).await);
    let reply = first_answer(&ingress, HOST).await;
    assert_eq!(reply.body, "from the OCI chart\n");
    eprintln!(
        "from helm install to the first 200 through the Service: {:?}",
        installed.elapsed()
    );
}
