//! Workers, their bundles and their conditions, as a test sees them through the API.

use std::time::Duration;

use isolane_crds::{EnvVar, Worker, WorkerSpec};
use isolane_worker::{BUNDLE_KEY, BUNDLE_LABEL, Bundle, Limits, Route, WORKER_ID_ANNOTATION};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};

use crate::{ControlPlane, wait_until, workspace_root};

/// The operator's namespace in the tests (bundles, leader Lease, node Leases).
pub const OPERATOR_NAMESPACE: &str = "isolane-system";

/// The field manager tests apply Workers with.
pub const TEST_MANAGER: &str = "isolane-e2e";

/// A Worker's `env` entry `name` with the literal `value`.
pub fn env_var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
        json: None,
    }
}

/// Installs the Worker and TenantPolicy CRDs (from `crds/`) and waits
/// until the Worker CRD is served; creates the operator namespace and `namespaces`.
pub async fn prepare(cp: &ControlPlane, namespaces: &[&str]) {
    cp.apply_file(workspace_root().join("crds/worker.yaml"))
        .await
        .expect("apply the Worker CRD");
    cp.apply_file(workspace_root().join("crds/tenantpolicy.yaml"))
        .await
        .expect("apply the TenantPolicy CRD");
    let crds: Api<CustomResourceDefinition> = Api::all(cp.client());
    wait_until(
        "the Worker CRD to be established",
        Duration::from_secs(30),
        || async {
            let crd = crds.get_opt("workers.isolane.dev").await.ok()??;
            let established =
                crd.status?.conditions?.into_iter().any(|condition| {
                    condition.type_ == "Established" && condition.status == "True"
                });
            established.then_some(())
        },
    )
    .await;
    for namespace in std::iter::once(&OPERATOR_NAMESPACE).chain(namespaces) {
        cp.create_namespace(namespace)
            .await
            .unwrap_or_else(|error| panic!("create namespace {namespace}: {error}"));
    }
}

/// A Worker with an inline script and routes `host/` for each host.
pub fn inline_worker(name: &str, script: &str, hosts: &[&str]) -> Worker {
    Worker::new(
        name,
        WorkerSpec {
            script: Some(script.to_owned()),
            bundle: None,
            bundle_pull_secrets: Vec::new(),
            script_from: None,
            env: Vec::new(),
            bindings: Vec::new(),
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
        },
    )
}

/// A module script answering `text`.
pub fn hello_script(text: &str) -> String {
    format!(
        "export default {{\n  fetch(request, env) {{\n    return new Response({text:?});\n  }}\n}};\n"
    )
}

/// Server-side applies `worker` into `namespace`.
pub async fn apply(client: &Client, namespace: &str, worker: &Worker) -> Worker {
    let api: Api<Worker> = Api::namespaced(client.clone(), namespace);
    let name = worker.metadata.name.clone().expect("the Worker has a name");
    let mut body = worker.clone();
    body.metadata.managed_fields = None;
    body.metadata.resource_version = None;
    body.status = None;
    api.patch(
        &name,
        &PatchParams::apply(TEST_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .unwrap_or_else(|error| panic!("apply Worker {namespace}/{name}: {error}"))
}

/// The condition `type_` of `worker`.
pub fn condition<'a>(worker: &'a Worker, type_: &str) -> Option<&'a Condition> {
    worker
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|condition| condition.type_ == type_)
}

/// True when `worker` has condition `type_` with `status` (and, if given, `reason`)
/// for its current generation.
pub fn has_condition(worker: &Worker, type_: &str, status: &str, reason: Option<&str>) -> bool {
    let observed = worker
        .status
        .as_ref()
        .and_then(|status| status.observed_generation);
    observed == worker.metadata.generation
        && condition(worker, type_).is_some_and(|condition| {
            condition.status == status && reason.is_none_or(|reason| condition.reason == reason)
        })
}

/// Waits until Worker `namespace/name` satisfies `ready`, returning it; the
/// panic message shows its last status.
pub async fn wait_for_worker(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: impl Fn(&Worker) -> bool,
) -> Worker {
    let api: Api<Worker> = Api::namespaced(client.clone(), namespace);
    let last = std::sync::Mutex::new(None::<Worker>);
    let description = format!("Worker {namespace}/{name} {what}");
    let found = tokio::time::timeout(
        timeout,
        wait_until(&description, timeout + Duration::from_secs(1), || async {
            let worker = api.get_opt(name).await.ok().flatten()?;
            let done = ready(&worker);
            if let Ok(mut last) = last.lock() {
                *last = Some(worker.clone());
            }
            done.then_some(worker)
        }),
    )
    .await;
    match found {
        Ok(worker) => worker,
        Err(_) => {
            let last = last.lock().ok().and_then(|last| last.clone());
            panic!(
                "timed out after {timeout:?} waiting for {description}; last status: {:#?}",
                last.and_then(|worker| worker.status)
            )
        }
    }
}

/// Waits until the Worker is Ready=True for its current generation.
pub async fn wait_ready(client: &Client, namespace: &str, name: &str, timeout: Duration) -> Worker {
    wait_for_worker(client, namespace, name, "to be Ready", timeout, |worker| {
        has_condition(worker, "Ready", "True", None)
    })
    .await
}

/// The bundles of Worker `namespace/name` (one Secret per revision kept),
/// newest first.
pub async fn bundles(client: &Client, namespace: &str, name: &str) -> Vec<Bundle> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let id = format!("{namespace}/{name}");
    let mut list = secrets
        .list(&ListParams::default().labels(&format!("{BUNDLE_LABEL}=true")))
        .await
        .expect("list the bundle Secrets")
        .items;
    list.retain(|secret| {
        secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(WORKER_ID_ANNOTATION))
            == Some(&id)
    });
    list.sort_by(|a, b| {
        b.metadata
            .creation_timestamp
            .cmp(&a.metadata.creation_timestamp)
            .then_with(|| version(b).cmp(&version(a)))
    });
    list.into_iter()
        .filter_map(|secret| {
            let data = secret.data?.remove(BUNDLE_KEY)?;
            Some(serde_json::from_slice(&data.0).expect("the bundle is JSON"))
        })
        .collect()
}

/// A Secret's resourceVersion as a number (etcd's revision), for ordering.
fn version(secret: &Secret) -> u64 {
    secret
        .metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The bundle of Worker `namespace/name`'s newest revision, if it has one.
pub async fn bundle(client: &Client, namespace: &str, name: &str) -> Option<Bundle> {
    bundles(client, namespace, name).await.into_iter().next()
}

/// Waits until the bundle of `namespace/name` satisfies `ready`.
pub async fn wait_for_bundle(
    client: &Client,
    namespace: &str,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: impl Fn(&Bundle) -> bool,
) -> Bundle {
    let description = format!("bundle of {namespace}/{name} {what}");
    wait_until(&description, timeout, || async {
        bundle(client, namespace, name)
            .await
            .filter(|bundle| ready(bundle))
    })
    .await
}

/// Waits until the bundle Secret of `namespace/name` is gone.
pub async fn wait_bundle_gone(client: &Client, namespace: &str, name: &str, timeout: Duration) {
    let description = format!("bundle of {namespace}/{name} to be deleted");
    wait_until(&description, timeout, || async {
        bundle(client, namespace, name)
            .await
            .is_none()
            .then_some(())
    })
    .await;
}
