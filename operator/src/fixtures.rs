//! Worker values for the unit tests.

use isolane_crds::{Worker, WorkerSpec};
use isolane_worker::{Limits, Route};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// A spec with the inline `script` (or none) and a route on `/` of each of
/// `hosts`; everything else at its default.
pub fn spec(script: Option<&str>, hosts: &[&str]) -> WorkerSpec {
    WorkerSpec {
        script: script.map(str::to_owned),
        bundle: None,
        bundle_pull_secrets: Vec::new(),
        script_from: None,
        env: vec![],
        bindings: vec![],
        routes: hosts
            .iter()
            .map(|host| Route {
                host: (*host).to_owned(),
                path_prefix: "/".to_owned(),
            })
            .collect(),
        limits: Limits::default(),
        egress: None,
        triggers: None,
        queue_consumers: Vec::new(),
        compatibility_date: None,
        compatibility_flags: Vec::new(),
        replicas: 1,
        traffic: Vec::new(),
        version_affinity: None,
        allow_revision_override: false,
        revision_history_limit: 10,
        worker_class: None,
    }
}

/// Worker `namespace/name` with `spec`, generation 1, created at second `created`.
pub fn worker(namespace: &str, name: &str, created: i64, spec: WorkerSpec) -> Worker {
    let mut worker = Worker::new(name, spec);
    worker.metadata.namespace = Some(namespace.to_owned());
    worker.metadata.generation = Some(1);
    worker.metadata.creation_timestamp = Some(Time(
        Timestamp::from_second(created).expect("invariant: a small second count is a timestamp"),
    ));
    worker
}
