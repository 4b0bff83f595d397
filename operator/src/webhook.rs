//! The validating admission webhook: rejects at `kubectl apply` what the CRD
//! schema cannot see.
//!
//! - an inline `spec.script` that does not parse (the message says `line:column`);
//! - `spec.bindings` whose names are not unique across `env` and bindings,
//!   or naming a hosting Worker by anything but a name
//!   (`isolane_worker::check_bindings`);
//! - an R2 binding when the cluster has no
//!   S3-compatible store for R2 (`isolane_worker::r2_on_a_cluster`; the
//!   operator is given the nodes' `--r2-s3-endpoint`, [`Stores::r2`]);
//! - `spec.queueConsumers` out of bounds, consuming a queue twice or naming
//!   its own queue as dead-letter queue (`isolane_worker::queue::check_consumers`);
//! - a queue another Worker of the namespace consumes already
//!   (`isolane_worker::queue::check_namespace_consumers`, from the same index);
//! - a limit (`spec.limits`) above the ceiling of a `TenantPolicy`
//!   selecting the Worker's namespace (`policy.rs`): the message names the
//!   field, the ceiling and the policy;
//! - a route (host + pathPrefix) that would take a route or a host from
//!   another Worker (`RouteTable::held_by_others`, the ownership rule with the
//!   Worker under review as the youngest claimant). On update,
//!   only routes the Worker did not have before are checked, so a Worker that
//!   lost a route in a race can still be edited.
//!
//! A Worker of another class (`spec.workerClass`) is another installation's:
//! admitted without a look, its own installation's webhook decides (every
//! installation's webhook sees every Worker).
//!
//! Scripts from ConfigMaps are not checked here (the ConfigMap may not exist yet);
//! the controller reports them as `ScriptValid=False`. Every replica serves the
//! webhook, leader or not, from the index of Workers' routes its caches keep
//! (`caches.rs`). It is served over TLS (rustls with the ring provider) on any path;
//! the chart and the tests register `/validate-worker`. At [`MUTATE_PATH`] the
//! same server is the mutating webhook that adds the finalizer at creation
//! (`webhook/finalizer.rs`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use isolane_crds::{Worker, WorkerSpec};
use isolane_edge::{self as edge, Edge, Wrapped};
use isolane_worker::Route;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::Error;
use crate::index::WorkerIndex;

mod finalizer;
use crate::routes::{Holder, WorkerKey};
use crate::script;
pub use finalizer::{MUTATE_PATH, mutate};

/// The largest AdmissionReview accepted: a 1 MiB script, JSON-escaped, twice
/// (object and oldObject), with room to spare.
const MAX_BODY: usize = 8 * 1024 * 1024;

/// How long open admission reviews may take to finish at shutdown.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The Workers' route claims, as the webhook sees them (the caches' index,
/// `caches.rs`).
pub type SharedIndex = Arc<Mutex<WorkerIndex>>;

/// Which of the nodes' stores the operator was given (the chart gives it
/// the nodes' settings).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stores {
    /// A KV store (PostgreSQL).
    pub kv: bool,
    /// An S3-compatible store for R2 buckets.
    pub r2: bool,
}

/// Decides one admission request: `Err` carries the message shown to the user.
pub fn validate(
    request: &AdmissionRequest<Worker>,
    index: &WorkerIndex,
    stores: Stores,
) -> Result<(), String> {
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Ok(());
    }
    let Some(worker) = &request.object else {
        return Ok(());
    };
    if worker.metadata.deletion_timestamp.is_some() || !index.serves(worker) {
        return Ok(());
    }
    let mut problems = spec_problems(&worker.spec, stores);
    problems.extend(route_problems(request, worker, index));
    let namespace = request
        .namespace
        .as_deref()
        .or(worker.metadata.namespace.as_deref());
    let verdict = index
        .policies()
        .apply(namespace.unwrap_or_default(), &worker.spec.limits);
    problems.extend(verdict.violations.iter().map(ToString::to_string));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// What is wrong in `spec` by itself: the script's syntax, the
/// compatibility settings, the bindings, the cron schedules.
fn spec_problems(spec: &WorkerSpec, stores: Stores) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(source) = &spec.script
        && let Err(syntax) = script::check(source)
    {
        problems.push(format!("spec.script: syntax error at {syntax}"));
    }
    if let Err(error) = isolane_worker::compat::resolve(
        spec.compatibility_date.as_deref(),
        &spec.compatibility_flags,
    ) {
        let field = match error {
            isolane_worker::CompatError::InvalidDate { .. } => "spec.compatibilityDate",
            _ => "spec.compatibilityFlags",
        };
        problems.push(format!("{field}: {error}"));
    }
    if let Err(error) =
        isolane_worker::check_bindings(spec.env.iter().map(|var| var.name.as_str()), &spec.bindings)
    {
        problems.push(format!("spec.bindings: {error}"));
    }
    if let Err(error) = isolane_worker::r2_on_a_cluster(&spec.bindings, stores.r2) {
        problems.push(format!("spec.bindings: {error}"));
    }
    if let Err(error) = isolane_worker::queue::check_consumers(&spec.queue_consumers) {
        problems.push(format!("spec.queueConsumers: {error}"));
    }
    for var in &spec.env {
        if var.json.is_some() && (var.value.is_some() || var.value_from.is_some()) {
            problems.push(format!(
                "spec.env[{}]: json is set with value or valueFrom: set one",
                var.name
            ));
        }
        if let Err(error) = var.check_json_size() {
            problems.push(error.to_string());
        }
    }
    if let Some(triggers) = &spec.triggers {
        for (i, expr) in triggers.crons.iter().enumerate() {
            if let Err(error) =
                isolane_worker::cron::Schedule::parse(expr, triggers.time_zone.as_deref())
            {
                problems.push(format!("spec.triggers.crons[{i}]: {error}"));
            }
        }
    }
    problems
}

/// The routes this Worker adds that another Worker, namespace or
/// reservation holds.
fn route_problems(
    request: &AdmissionRequest<Worker>,
    worker: &Worker,
    index: &WorkerIndex,
) -> Vec<String> {
    let mut problems = Vec::new();
    let namespace = request
        .namespace
        .clone()
        .or_else(|| worker.metadata.namespace.clone())
        .unwrap_or_default();
    let name = worker
        .metadata
        .name
        .clone()
        .unwrap_or_else(|| request.name.clone());
    let key = WorkerKey::new(namespace, name);
    let before = request
        .old_object
        .as_ref()
        .map(|old| old.spec.routes.clone())
        .unwrap_or_default();
    let added: Vec<Route> = Route::distinct(&worker.spec.routes)
        .into_iter()
        .filter(|route| !before.contains(route))
        .collect();
    for (route, holder) in index
        .routes()
        .held_by_others(&key, &worker.spec.routes, &added)
    {
        match holder {
            // Not necessarily older: the Worker under review counts as the
            // youngest.
            Holder::OlderWorker(other) => problems.push(format!(
                "spec.routes: route {route} is already claimed by Worker {other}"
            )),
            host => problems.push(format!("spec.routes: route {route} {host}")),
        }
    }
    if let Err(error) = isolane_worker::queue::check_namespace_consumers(
        &key.name,
        &worker.spec.queue_consumers,
        index.queue_consumers(&key.namespace),
    ) {
        problems.push(format!("spec.queueConsumers: {error}"));
    }
    problems
}

/// What `kubectl apply` prints for an accepted Worker that will not work
/// as a user would expect: KV bindings in a cluster given no store
/// (`kv_store`: the operator, like the nodes, was given the chart's
/// `storage.postgres`; docs/state.md).
fn warnings(worker: &Worker, kv_store: bool) -> Option<String> {
    (!kv_store && !worker.spec.bindings.is_empty()).then(|| {
        "spec.bindings: this cluster has no KV store configured (the chart's storage.postgres); on runtime nodes a KV operation throws (docs/state.md)".to_owned()
    })
}

/// Answers one AdmissionReview body; `stores`: the stores the cluster has.
pub fn review(body: &[u8], index: &WorkerIndex, stores: Stores) -> AdmissionReview<DynamicObject> {
    let review: AdmissionReview<Worker> = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(error) => {
            return AdmissionResponse::invalid(format!("invalid AdmissionReview: {error}"))
                .into_review();
        }
    };
    let request: AdmissionRequest<Worker> = match review.try_into() {
        Ok(request) => request,
        Err(error) => {
            return AdmissionResponse::invalid(format!("invalid AdmissionReview: {error}"))
                .into_review();
        }
    };
    let mut response = AdmissionResponse::from(&request);
    if let Some(warning) = request
        .object
        .as_ref()
        .filter(|worker| index.serves(worker))
        .and_then(|worker| warnings(worker, stores.kv))
    {
        response.warnings = Some(vec![warning]);
    }
    match validate(&request, index, stores) {
        Ok(()) => response.into_review(),
        Err(message) => {
            info!(
                worker.name = %request.name,
                namespace = request.namespace.as_deref().unwrap_or(""),
                %message,
                "admission denied"
            );
            response.deny(message).into_review()
        }
    }
}

/// Loads a PEM certificate chain and private key into a TLS acceptor.
pub fn load_tls(cert: &Path, key: &Path) -> Result<TlsAcceptor, Error> {
    let tls_error = |path: &Path, reason: String| Error::WebhookTls {
        path: path.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|error| tls_error(cert, error.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| tls_error(cert, error.to_string()))?;
    if certs.is_empty() {
        return Err(tls_error(cert, "no certificate found".to_owned()));
    }
    let private_key =
        PrivateKeyDer::from_pem_file(key).map_err(|error| tls_error(key, error.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| tls_error(cert, error.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, private_key)
        .map_err(|error| tls_error(key, error.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Binds the webhook port.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Serve {
            server: "webhook",
            addr,
            source,
        })
}

/// Serves the webhook on `listener` until `shutdown` is cancelled, through
/// the shared accept loop (`isolane_edge::serve`): a client that
/// does not send its first bytes, finish its TLS handshake and then send a
/// request head each within `edge`'s header-read timeout is dropped.
pub async fn serve(
    listener: TcpListener,
    tls: TlsAcceptor,
    index: SharedIndex,
    stores: Stores,
    edge: Edge,
    shutdown: CancellationToken,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "admission webhook listening");
    }
    let service = |_peer| {
        let index = Arc::clone(&index);
        service_fn(move |request| {
            let index = Arc::clone(&index);
            async move { Ok::<_, Infallible>(handle(request, &index, stores).await) }
        })
    };
    let handshake = Wrapped(move |stream| tls.accept(stream));
    edge::serve(
        listener,
        edge,
        handshake,
        service,
        shutdown.cancelled_owned(),
    )
    .await;
}

async fn handle(
    request: Request<Incoming>,
    index: &Mutex<WorkerIndex>,
    stores: Stores,
) -> Response<Full<Bytes>> {
    if request.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "POST an AdmissionReview\n");
    }
    let mutating = request.uri().path() == MUTATE_PATH;
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return plain(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n"),
    };
    let answer = {
        let index = index.lock().unwrap_or_else(PoisonError::into_inner);
        if mutating {
            mutate(&body, &index)
        } else {
            review(&body, &index, stores)
        }
    };
    match serde_json::to_vec(&answer) {
        Ok(json) => {
            let mut response = Response::new(Full::new(Bytes::from(json)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "failed to encode\n"),
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    pub(super) fn worker(name: &str, script: &str, hosts: &[&str]) -> Worker {
        let spec = crate::fixtures::spec(Some(script), hosts);
        crate::fixtures::worker("default", name, 1, spec)
    }

    pub(super) fn body(operation: &str, object: &Worker, old: Option<&Worker>) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": "isolane.dev", "version": "v1alpha1", "kind": "Worker"},
                "resource": {"group": "isolane.dev", "version": "v1alpha1", "resource": "workers"},
                "name": object.metadata.name,
                "namespace": "default",
                "operation": operation,
                "userInfo": {"username": "test"},
                "object": object,
                "oldObject": old,
                "dryRun": false,
            }
        }))
        .unwrap()
    }

    fn verdict(review: &AdmissionReview<DynamicObject>) -> (bool, String) {
        let response = review.response.as_ref().unwrap();
        (response.allowed, response.result.message.clone())
    }

    #[test]
    fn rejects_syntax_errors_with_line_and_column() {
        let index = WorkerIndex::default();
        let bad = worker(
            "bad",
            "export default {\n  fetch() {\n    return 1 +\n  }\n}",
            &[],
        );
        let (allowed, message) = verdict(&review(
            &body("CREATE", &bad, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.starts_with("spec.script: syntax error at 4:3: "),
            "{message}"
        );
        let good = worker(
            "good",
            "export default { fetch() { return new Response('ok') } }",
            &[],
        );
        let (allowed, _) = verdict(&review(
            &body("CREATE", &good, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed);
    }

    #[test]
    fn rejects_bad_cron_schedules_and_time_zones() {
        let index = WorkerIndex::default();
        let mut w = worker("cron", "export default { scheduled() {} }", &[]);
        w.spec.triggers = Some(isolane_worker::Triggers {
            crons: vec!["*/5 * * * *".into(), "0 25 * * *".into()],
            time_zone: None,
        });
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.starts_with("spec.triggers.crons[1]: invalid cron schedule \"0 25 * * *\""),
            "{message}"
        );
        w.spec.triggers = Some(isolane_worker::Triggers {
            crons: vec!["0 9 * * MON-FRI".into()],
            time_zone: Some("Europe/Nowhere".into()),
        });
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains("unknown time zone \"Europe/Nowhere\""),
            "{message}"
        );
        w.spec.triggers = Some(isolane_worker::Triggers {
            crons: vec!["0 9 * * MON-FRI".into()],
            time_zone: Some("Europe/Paris".into()),
        });
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
    }

    #[test]
    fn rejects_unknown_compatibility_flags_naming_the_known_ones() {
        let index = WorkerIndex::default();
        let mut w = worker("compat", "export default {}", &[]);
        w.spec.compatibility_date = Some("2026-08-04".into());
        w.spec.compatibility_flags = vec!["nodejs_compat".into(), "nodejs_compta".into()];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.starts_with(
                "spec.compatibilityFlags: unknown compatibility flag \"nodejs_compta\"; known flags: nodejs_compat, no_nodejs_compat"
            ),
            "{message}"
        );
        w.spec.compatibility_flags = vec!["nodejs_compat".into()];
        w.spec.compatibility_date = Some("2026-8-4".into());
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(message.starts_with("spec.compatibilityDate: "), "{message}");
        w.spec.compatibility_date = Some("2026-08-04".into());
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
    }

    #[test]
    fn rejects_a_json_binding_with_a_value_or_over_64_kib() {
        use isolane_crds::EnvVar;
        let index = WorkerIndex::default();
        let mut w = worker("json", "export default {}", &[]);
        let var = |value: Option<&str>, json: serde_json::Value| EnvVar {
            name: "CONFIG".into(),
            value: value.map(str::to_owned),
            value_from: None,
            json: Some(json),
        };
        w.spec.env = vec![var(None, serde_json::json!({ "retries": 3 }))];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
        w.spec.env = vec![var(Some("3"), serde_json::json!(3))];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert_eq!(
            message,
            "spec.env[CONFIG]: json is set with value or valueFrom: set one"
        );
        w.spec.env = vec![var(None, serde_json::json!("x".repeat(70_000)))];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert_eq!(
            message,
            "spec.env[CONFIG].json: 70002 bytes as compact JSON, more than 65536"
        );
    }

    #[test]
    fn rejects_bad_bindings_with_a_clear_message() {
        use isolane_crds::EnvVar;
        use isolane_worker::Binding;
        let index = WorkerIndex::default();
        let mut w = worker("kv", "export default {}", &[]);
        w.spec.env = vec![EnvVar {
            name: "CACHE".into(),
            value: Some("x".into()),
            value_from: None,
            json: None,
        }];
        w.spec.bindings = vec![Binding::kv("CACHE", "cache")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert_eq!(
            message,
            "spec.bindings: binding name \"CACHE\" is used twice (names are unique across env and bindings)"
        );
        w.spec.bindings = vec![Binding::kv("my-kv", "cache")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains("is not a JavaScript identifier"),
            "{message}"
        );
        w.spec.bindings = vec![Binding::kv("KV", "a/b")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains("KV namespace name \"a/b\" is invalid"),
            "{message}"
        );
        // A Durable Object binding (no kvNamespace) is refused, not ignored.
        let review_body = serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-2",
                "kind": {"group": "isolane.dev", "version": "v1alpha1", "kind": "Worker"},
                "resource": {"group": "isolane.dev", "version": "v1alpha1", "resource": "workers"},
                "name": "kv",
                "namespace": "default",
                "operation": "CREATE",
                "userInfo": {"username": "test"},
                "object": {
                    "apiVersion": "isolane.dev/v1alpha1",
                    "kind": "Worker",
                    "metadata": {"name": "kv", "namespace": "default"},
                    "spec": {
                        "script": "export default {}",
                        "bindings": [{"name": "COUNTER", "durableObject": {"className": "Counter", "worker": "team-b/host"}}]
                    }
                },
                "dryRun": false,
            }
        }))
        .unwrap();
        let (allowed, message) = verdict(&review(&review_body, &index, Stores::default()));
        assert!(!allowed);
        assert!(
            message.contains(
                "binding \"COUNTER\": durableObject.worker \"team-b/host\" is not a Worker name"
            ),
            "{message}"
        );
        w.spec.bindings = vec![
            Binding::kv("KV", "cache"),
            Binding::kv("SESSIONS", "sessions"),
        ];
        let answer = review(&body("CREATE", &w, None), &index, Stores::default());
        let (allowed, message) = verdict(&answer);
        assert!(allowed, "{message}");
        // Accepted, with a word on what does not work without a store.
        let warnings = answer.response.unwrap().warnings.unwrap_or_default();
        assert!(
            warnings.len() == 1 && warnings[0].contains("no KV store configured"),
            "{warnings:?}"
        );
        // With a store, nothing to say.
        let answer = review(
            &body("CREATE", &w, None),
            &index,
            Stores {
                kv: true,
                r2: false,
            },
        );
        assert_eq!(answer.response.unwrap().warnings, None);
    }

    #[test]
    fn rejects_limits_over_a_tenant_policy_s_ceiling_naming_it() {
        let mut index = WorkerIndex::default();
        let policy: isolane_crds::TenantPolicy = serde_json::from_value(json!({
            "apiVersion": "isolane.dev/v1alpha1", "kind": "TenantPolicy",
            "metadata": {"name": "free-tier"},
            "spec": {"namespaceSelector": {"matchLabels": {"tier": "free"}},
                     "limits": {"ceilings": {"cpuMs": 200}}},
        }))
        .unwrap();
        index.policies_mut().set_policies([policy]);
        let mut w = worker("w", "export default {}", &[]);
        w.spec.limits.cpu_ms = 500;
        // Not selected yet: admitted.
        assert!(
            verdict(&review(
                &body("CREATE", &w, None),
                &index,
                Stores::default()
            ))
            .0
        );
        let free = [("tier".to_owned(), "free".to_owned())].into();
        index.policies_mut().set_labels("default", free);
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert_eq!(
            message,
            "spec.limits.cpuMs 500 exceeds 200, the ceiling of TenantPolicy \"free-tier\""
        );
        // Limits left unset (the built-in defaults) are admitted: the
        // operator writes the ceiling into the bundle.
        w.spec.limits = isolane_worker::Limits::default();
        assert!(
            verdict(&review(
                &body("CREATE", &w, None),
                &index,
                Stores::default()
            ))
            .0
        );
    }

    #[test]
    fn admits_a_service_binding_to_a_worker_of_the_namespace_only() {
        use isolane_worker::Binding;
        let index = WorkerIndex::default();
        // No routes, and bound to a Worker that does not exist yet: admitted.
        let mut w = worker("gateway", "export default {}", &[]);
        w.spec.routes.clear();
        w.spec.bindings = vec![Binding::service("AUTH", "auth", Some("Admin"))];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
        w.spec.bindings = vec![Binding::service("AUTH", "team-b/auth", None)];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains("service.name \"team-b/auth\" names another namespace"),
            "{message}"
        );
    }

    #[test]
    fn rejects_an_r2_binding_unless_the_cluster_has_an_r2_store() {
        use isolane_worker::Binding;
        let index = WorkerIndex::default();
        let mut w = worker("shop", "export default {}", &[]);
        w.spec.bindings = vec![Binding::r2("FILES", "uploads")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains(
                "spec.bindings: binding \"FILES\": R2 bindings need an S3-compatible store: this cluster has none configured (the chart's storage.r2; docs/r2.md)"
            ),
            "{message}"
        );
        let r2 = Stores { kv: true, r2: true };
        let (allowed, message) = verdict(&review(&body("CREATE", &w, None), &index, r2));
        assert!(allowed, "{message}");
    }

    #[test]
    fn admits_a_d1_binding_and_refuses_an_invalid_database_name() {
        use isolane_worker::Binding;
        let index = WorkerIndex::default();
        let mut w = worker("shop", "export default {}", &[]);
        w.spec.bindings = vec![Binding::d1("DB", "orders")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
        w.spec.bindings = vec![Binding::d1("DB", "a/b")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &w, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains("spec.bindings: binding \"DB\": D1 database name \"a/b\" is invalid"),
            "{message}"
        );
    }

    #[test]
    fn rejects_a_queue_consumed_twice_or_its_own_dead_letter_queue() {
        use isolane_worker::{Binding, QueueConsumer};
        let mut index = WorkerIndex::default();
        let mut first = worker("first", "export default {}", &[]);
        first.spec.queue_consumers = vec![QueueConsumer::new("jobs")];
        first.spec.bindings = vec![Binding::queue("JOBS", "jobs")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &first, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
        index.upsert(&first);
        // It may be applied again; another Worker of the namespace may not
        // consume the same queue.
        let (allowed, message) = verdict(&review(
            &body("UPDATE", &first, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed, "{message}");
        let mut second = worker("second", "export default {}", &[]);
        second.spec.queue_consumers = vec![QueueConsumer::new("jobs")];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &second, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert_eq!(
            message,
            "spec.queueConsumers: queue \"jobs\" is already consumed by Worker \"first\" of this namespace (a queue has one consumer)"
        );
        second.spec.queue_consumers = vec![QueueConsumer {
            dead_letter_queue: Some("mail".into()),
            ..QueueConsumer::new("mail")
        }];
        let (allowed, message) = verdict(&review(
            &body("CREATE", &second, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains(
                "spec.queueConsumers: queue \"mail\": deadLetterQueue must be another queue"
            ),
            "{message}"
        );
        second.spec.bindings = vec![Binding::queue("BAD", "Not_A_Queue")];
        second.spec.queue_consumers.clear();
        let (allowed, message) = verdict(&review(
            &body("CREATE", &second, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(
            message.contains("queue name \"Not_A_Queue\" is invalid"),
            "{message}"
        );
    }

    #[test]
    fn rejects_routes_held_by_another_worker_but_not_old_ones() {
        let mut index = WorkerIndex::default();
        index.upsert(&worker("owner", "1", &["a.example.com"]));
        let claimer = worker("claimer", "1", &["a.example.com"]);
        let (allowed, message) = verdict(&review(
            &body("CREATE", &claimer, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert_eq!(
            message,
            "spec.routes: route a.example.com/ is already claimed by Worker default/owner"
        );
        // An update that keeps a conflicting route it already had is allowed.
        let (allowed, _) = verdict(&review(
            &body("UPDATE", &claimer, Some(&claimer)),
            &index,
            Stores::default(),
        ));
        assert!(allowed);
        // The owner itself may re-apply.
        let owner = worker("owner", "2", &["a.example.com"]);
        let (allowed, _) = verdict(&review(
            &body("UPDATE", &owner, None),
            &index,
            Stores::default(),
        ));
        assert!(allowed);
    }

    #[test]
    fn another_class_is_left_to_its_installation() {
        let mut index = WorkerIndex::default().serving("staging".parse().unwrap());
        let mut owner = worker("owner", "1", &["a.example.com"]);
        owner.spec.worker_class = Some("staging".into());
        index.upsert(&owner);
        // A default-class Worker with a broken script on the staging
        // Worker's route: the staging installation's webhook lets it by.
        let mut other = worker("other", "export default {", &["a.example.com"]);
        other.spec.bindings = vec![isolane_worker::Binding::kv("KV", "cache")];
        let answer = review(&body("CREATE", &other, None), &index, Stores::default());
        assert_eq!(answer.response.as_ref().unwrap().warnings, None);
        let (allowed, message) = verdict(&answer);
        assert!(allowed, "{message}");
        // One of its own class is checked.
        other.spec.worker_class = Some("staging".into());
        let (allowed, message) = verdict(&review(
            &body("CREATE", &other, None),
            &index,
            Stores::default(),
        ));
        assert!(!allowed);
        assert!(message.contains("syntax error"), "{message}");
        assert!(
            message.contains("claimed by Worker default/owner"),
            "{message}"
        );
    }

    #[test]
    fn garbage_is_answered_not_dropped() {
        let review = review(b"{", &WorkerIndex::default(), Stores::default());
        let (allowed, message) = verdict(&review);
        assert!(!allowed);
        assert!(message.contains("invalid AdmissionReview"), "{message}");
    }
}
