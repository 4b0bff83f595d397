//! The operator's error type.
//!
//! Conditions a user can fix (a missing ConfigMap, a syntax error, a route
//! conflict) are not errors: they are reported in the Worker's status and the
//! reconcile succeeds. What is left here is what failed talking to the API.

use kube::runtime::finalizer;

/// Why a reconcile or a component of the operator failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading a ConfigMap or Secret a Worker references failed (other than 404).
    #[error("failed to read {kind} {namespace}/{name}")]
    GetReference {
        kind: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// Writing a bundle Secret failed.
    #[error("failed to apply bundle Secret {namespace}/{secret}")]
    ApplyBundle {
        namespace: String,
        secret: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// Deleting a bundle Secret failed.
    #[error("failed to delete bundle Secret {namespace}/{secret}")]
    DeleteBundle {
        namespace: String,
        secret: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// Listing the bundle Secrets failed.
    #[error("failed to list the bundle Secrets in {namespace}")]
    ListBundles {
        namespace: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// Deleting a deleted Worker's Durable Object alarms failed.
    #[error("failed to delete the Durable Object alarms of Worker {worker_id}")]
    DeleteAlarms {
        worker_id: String,
        #[source]
        source: isolane_storage::StoreError,
    },
    /// Asking cert-manager for a Worker's Certificates failed.
    #[error("failed to {action} the Certificates of Worker {worker_id}")]
    Certificates {
        worker_id: String,
        action: &'static str,
        #[source]
        source: Box<kube::Error>,
    },
    /// The controller stopped before its caches had synced.
    #[error("the controller stopped before its caches synced")]
    NotSynced,
    /// Writing a Worker's status failed.
    #[error("failed to patch the status of Worker {worker_id}")]
    PatchStatus {
        worker_id: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// Serialising a bundle failed.
    #[error("failed to serialise the bundle of Worker {worker_id}")]
    SerializeBundle {
        worker_id: String,
        #[source]
        source: serde_json::Error,
    },
    /// The object has no namespace or name (cannot happen for a namespaced Worker
    /// read from the API).
    #[error("Worker without namespace or name")]
    UnnamedWorker,
    /// The finalizer helper failed (adding or removing the finalizer, or the
    /// apply/cleanup branch).
    #[error(transparent)]
    Finalizer(#[from] Box<finalizer::Error<Error>>),
    /// Reading or parsing the webhook certificate or key failed.
    #[error("failed to load webhook TLS material from {path}: {reason}")]
    WebhookTls { path: String, reason: String },
    /// Binding or serving a listener failed.
    #[error("failed to serve {server} on {addr}")]
    Serve {
        server: &'static str,
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// Registering a metric failed (a duplicate name).
    #[error("failed to register metrics")]
    Metrics(#[from] prometheus::Error),
    /// Binding the admin server failed.
    #[error("failed to start the admin server")]
    Admin(#[from] isolane_telemetry::Error),
}

impl Error {
    /// A short, bounded name for metric labels and log fields.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::GetReference { .. } => "get_reference",
            Self::ApplyBundle { .. } => "apply_bundle",
            Self::DeleteBundle { .. } => "delete_bundle",
            Self::ListBundles { .. } => "list_bundles",
            Self::DeleteAlarms { .. } => "delete_alarms",
            Self::Certificates { .. } => "certificates",
            Self::NotSynced => "not_synced",
            Self::PatchStatus { .. } => "patch_status",
            Self::SerializeBundle { .. } => "serialize_bundle",
            Self::UnnamedWorker => "unnamed_worker",
            Self::Finalizer(error) => match error.as_ref() {
                finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => {
                    inner.kind()
                }
                finalizer::Error::AddFinalizer(_) => "add_finalizer",
                finalizer::Error::RemoveFinalizer(_) => "remove_finalizer",
                finalizer::Error::UnnamedObject => "unnamed_worker",
                finalizer::Error::InvalidFinalizer => "invalid_finalizer",
            },
            Self::WebhookTls { .. } => "webhook_tls",
            Self::Serve { .. } => "serve",
            Self::Metrics(_) => "metrics",
            Self::Admin(_) => "admin",
        }
    }

    /// True when the API answered 409 Conflict (an optimistic-concurrency race,
    /// e.g. on the finalizer patch): worth retrying at once.
    pub fn is_conflict(&self) -> bool {
        fn conflict(error: &kube::Error) -> bool {
            matches!(error, kube::Error::Api(status) if status.code == 409)
        }
        match self {
            Self::GetReference { source, .. }
            | Self::ApplyBundle { source, .. }
            | Self::DeleteBundle { source, .. }
            | Self::ListBundles { source, .. }
            | Self::PatchStatus { source, .. } => conflict(source.as_ref()),
            Self::Finalizer(error) => match error.as_ref() {
                finalizer::Error::ApplyFailed(inner) | finalizer::Error::CleanupFailed(inner) => {
                    inner.is_conflict()
                }
                finalizer::Error::AddFinalizer(source)
                | finalizer::Error::RemoveFinalizer(source) => {
                    // The finalizer helper patches with a JSON-patch `test`; a race
                    // shows up as 409 or as 422 (failed test).
                    conflict(source)
                        || matches!(source, kube::Error::Api(status) if status.code == 422)
                }
                _ => false,
            },
            _ => false,
        }
    }
}
