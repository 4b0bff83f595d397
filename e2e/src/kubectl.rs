//! Workers applied the way a user applies them: YAML manifests in a file,
//! `kubectl apply -f` against the control plane.

use std::path::Path;
use std::process::Output;

use isolane_crds::Worker;
use isolane_testenv::ControlPlane;

/// The YAML manifest of `worker` in `namespace` (one document, no status).
pub fn manifest(namespace: &str, worker: &Worker) -> String {
    let mut worker = worker.clone();
    worker.metadata.namespace = Some(namespace.to_owned());
    worker.metadata.managed_fields = None;
    worker.metadata.resource_version = None;
    worker.status = None;
    let mut value = serde_json::to_value(&worker).expect("a Worker serializes");
    if let Some(object) = value.as_object_mut() {
        object.remove("status");
    }
    serde_yaml::to_string(&value).expect("a Worker renders as YAML")
}

/// Writes `workers` as one multi-document manifest to `path`, then runs
/// `kubectl apply -f <path>`; returns kubectl's output.
///
/// # Panics
/// When kubectl cannot run or fails.
pub async fn apply_workers(
    cp: &ControlPlane,
    path: &Path,
    namespace: &str,
    workers: &[Worker],
) -> Output {
    let documents: Vec<String> = workers
        .iter()
        .map(|worker| manifest(namespace, worker))
        .collect();
    std::fs::write(path, documents.join("---\n")).expect("write the manifest");
    let mut command = cp.kubectl(["apply", "-f"]);
    command.arg(path);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("kubectl's thread")
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl apply -f {} failed:\n{}{}",
        path.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
