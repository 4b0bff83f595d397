//! `isolane deploy` and `isolane secret put` against a real API server
//! (the test control plane; no operator runs): the Worker and the ConfigMap
//! of its code are applied with the kubeconfig, `secret put` keeps the
//! secret in `<name>-secrets` and binds it in the Worker, and a second
//! deploy keeps that binding. The dry run's YAML applies with kubectl as it
//! is printed.
#![allow(clippy::unwrap_used)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use isolane_crds::Worker;
use isolane_testenv::ControlPlane;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;

fn hello() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wrangler/hello/wrangler.jsonc")
}

/// `isolane <args>` with the control plane's kubeconfig, `stdin` piped in.
fn isolane(cp: &ControlPlane, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_isolane"))
        .args(args)
        .env("KUBECONFIG", cp.kubeconfig_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "isolane {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn env_names(worker: &Worker) -> Vec<&str> {
    worker.spec.env.iter().map(|v| v.name.as_str()).collect()
}

#[tokio::test]
async fn deploy_applies_the_worker_and_secret_put_binds_its_secret() {
    let cp = ControlPlane::start().await.unwrap();
    isolane_testenv::workers::prepare(&cp, &["shop", "printed"]).await;
    let config = hello();
    let config = config.to_str().unwrap();
    isolane(&cp, &["deploy", "--config", config, "-n", "shop"], "");
    let workers: Api<Worker> = Api::namespaced(cp.client(), "shop");
    let worker = workers.get("hello").await.unwrap();
    assert_eq!(env_names(&worker), ["FEATURES", "GREETING", "REGIONS"]);
    assert_eq!(
        worker.spec.env[0].json,
        Some(serde_json::json!({ "search": true, "limit": 10 }))
    );
    assert_eq!(
        worker.spec.compatibility_date.as_deref(),
        Some("2026-08-04")
    );
    assert_eq!(worker.spec.limits.cpu_ms, 100);
    let from = worker.spec.script_from.as_ref().unwrap();
    assert_eq!(from.config_map_key_ref.name, "hello-code");
    let managers: Vec<_> = worker
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|f| f.manager.as_deref())
        .collect();
    assert_eq!(managers, ["isolane"]);
    let maps: Api<ConfigMap> = Api::namespaced(cp.client(), "shop");
    let code = maps.get("hello-code").await.unwrap();
    assert!(code.data.unwrap()["index.js"].contains("export class Counter"));

    isolane(
        &cp,
        &["secret", "put", "TOKEN", "--config", config, "-n", "shop"],
        "s3cret\n",
    );
    let secrets: Api<Secret> = Api::namespaced(cp.client(), "shop");
    let secret = secrets.get("hello-secrets").await.unwrap();
    assert_eq!(secret.data.unwrap()["TOKEN"].0, b"s3cret");
    let worker = workers.get("hello").await.unwrap();
    assert_eq!(
        env_names(&worker),
        ["FEATURES", "GREETING", "REGIONS", "TOKEN"]
    );
    let token = worker.spec.env[3].value_from.as_ref().unwrap();
    let reference = token.secret_key_ref.as_ref().unwrap();
    assert_eq!(
        (reference.name.as_str(), reference.key.as_str()),
        ("hello-secrets", "TOKEN")
    );

    // A second deploy keeps the binding (and adds it for each key).
    isolane(&cp, &["deploy", "--config", config, "-n", "shop"], "");
    let worker = workers.get("hello").await.unwrap();
    assert_eq!(
        env_names(&worker),
        ["FEATURES", "GREETING", "REGIONS", "TOKEN"]
    );

    // The dry run's YAML applies with kubectl as it is.
    let printed = isolane(
        &cp,
        &["deploy", "--config", config, "-n", "printed", "--dry-run"],
        "",
    );
    let mut kubectl = cp
        .kubectl(["apply", "--server-side", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    kubectl
        .stdin
        .take()
        .unwrap()
        .write_all(&printed.stdout)
        .unwrap();
    let applied = kubectl.wait_with_output().unwrap();
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let printed: Api<Worker> = Api::namespaced(cp.client(), "printed");
    let worker = printed.get("hello").await.unwrap();
    assert_eq!(
        worker.spec.compatibility_date.as_deref(),
        Some("2026-08-04")
    );
    assert_eq!(
        worker.spec.env[2].json,
        Some(serde_json::json!(["eu", "us"]))
    );
}
