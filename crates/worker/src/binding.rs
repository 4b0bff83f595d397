//! A Worker's bindings to resources (`spec.bindings`): each a name in the
//! handler's `env` and what it stands for: a KV namespace (`{name,
//! kvNamespace}`, wrangler's `kv_namespaces`) or a Durable Object class the
//! Worker exports (`{name, durableObject: {className}}`, wrangler's
//! `durable_objects.bindings`), or one another Worker of the same
//! Kubernetes namespace hosts (`durableObject.worker`, wrangler's
//! `script_name`): a name, never a namespace, so a binding cannot reach
//! another namespace's objects. A service binding (`{name, service: {name,
//! entrypoint}}`, wrangler's `services`) names another Worker of the same
//! namespace, whose `fetch` handler (or named entrypoint's) `env.NAME.fetch`
//! runs; another namespace (`ns/name`) cannot be named, and a Worker that
//! does not exist yet is admitted (its calls fail until it does).
//!
//! The schema (names, lengths) is checked by the apiserver; [`check`] is
//! the rule that needs the whole spec (names unique across `env` and
//! `bindings`), run by the operator's webhook, the controller and
//! `isolane dev` alike.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::d1::{D1Binding, is_database_name};
use crate::dispatch::{DispatchNamespaceBinding, is_namespace_name};
use crate::props::{MAX_PROPS_BYTES, Props};
use crate::queue::{QueueBinding, is_queue_name};
use crate::r2::{R2Binding, is_bucket_name};

mod workflow_check;

/// The pattern of a binding's name: a JavaScript identifier made of ASCII
/// letters, digits and `_` (the same as an `env` name's).
pub const BINDING_NAME_PATTERN: &str = r"^[A-Za-z_][A-Za-z0-9_]*$";

/// The pattern of a KV namespace's name: 1 to 63 letters, digits, `-`, `_`
/// or `.`, starting with a letter or digit.
pub const KV_NAMESPACE_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$";

/// One binding in the handler's `env`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "(has(self.kvNamespace) ? 1 : 0) + (has(self.durableObject) ? 1 : 0) + (has(self.service) ? 1 : 0) + (has(self.dispatchNamespace) ? 1 : 0) + (has(self.queue) ? 1 : 0) + (has(self.d1) ? 1 : 0) + (has(self.images) ? 1 : 0) + (has(self.workerLoader) ? 1 : 0) + (has(self.r2Bucket) ? 1 : 0) + (has(self.workflow) ? 1 : 0) == 1",
        "message": "a binding needs exactly one of kvNamespace: <name>, durableObject: {className: <class>}, service: {name: <worker>}, dispatchNamespace: {namespace: <namespace>}, queue: {name: <queue>}, d1: {database: <name>}, images: {}, workerLoader: {}, r2Bucket: {bucket: <name>} or workflow: {className: <class>}"
    }
]))]
pub struct Binding {
    /// The binding's name as the handler sees it (`env.NAME`): a JavaScript
    /// identifier made of letters, digits and `_`, not starting with a
    /// digit; unique across `env` and `bindings`.
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")
    )]
    pub name: String,

    /// The KV namespace the binding reads and writes, by name (1 to 63
    /// letters, digits, `-`, `_`, `.`). Its data belongs to the Worker's
    /// Kubernetes namespace: Workers of one namespace binding the same name
    /// share it, a Worker of another namespace never sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    )]
    pub kv_namespace: Option<String>,

    /// A Durable Object class: `env.NAME` is its namespace
    /// (`idFromName`, `get`, ...). Its objects' data belongs to the
    /// Worker's Kubernetes namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_object: Option<DurableObjectBinding>,

    /// Another Worker of the same Kubernetes namespace (wrangler's
    /// `services`): `env.NAME.fetch(request)` runs its `fetch` handler, on
    /// the caller's engine thread, under that Worker's own limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceBinding>,

    /// A dispatch namespace (Workers for Platforms, wrangler's
    /// `dispatch_namespaces`): `env.NAME.get(worker)` calls Worker `worker`
    /// of that Kubernetes namespace, which must agree (a label on its
    /// Namespace, docs/dispatch.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_namespace: Option<DispatchNamespaceBinding>,
    /// A queue of the Worker's Kubernetes namespace (wrangler's
    /// `[[queues.producers]]`): `env.NAME.send(body)` and
    /// `env.NAME.sendBatch(messages)` write to it (docs/queues.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueBinding>,
    /// A D1 database of the Worker's Kubernetes namespace (wrangler's
    /// `[[d1_databases]]`): `env.NAME.prepare(sql)`, `batch`, `exec`,
    /// `withSession` (docs/d1.md). Workers of one namespace binding the
    /// same name share it; another namespace's of that name is another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d1: Option<D1Binding>,
    /// Cloudflare's Images binding (wrangler's `[images] binding`):
    /// `env.NAME.info(stream)` and `env.NAME.input(stream)` decode,
    /// transform and encode images on the node (docs/images.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesBinding>,
    /// A Worker Loader (Dynamic Workers, wrangler's `[[worker_loaders]]`):
    /// `env.NAME.get(id, callback)` and `env.NAME.load(code)` run code
    /// given at run time in an isolate of its own on the caller's engine
    /// thread, under limits no higher than the caller's (docs/loader.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_loader: Option<WorkerLoaderBinding>,
    /// An R2 bucket of the Worker's Kubernetes namespace (wrangler's
    /// `[[r2_buckets]]`): `env.NAME.get/put/head/delete/list` and
    /// multipart uploads (docs/r2.md). Workers of one namespace binding the
    /// same name share it; another namespace's of that name is another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r2_bucket: Option<R2Binding>,
    /// A workflow (wrangler's `[[workflows]]`): `env.NAME.create()` and
    /// `get(id)` run instances of a `WorkflowEntrypoint` class
    /// (docs/workflows.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<crate::workflow::WorkflowBinding>,
}

/// `workerLoader` of a binding: no settings (`workerLoader: {}`).
#[derive(
    Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub struct WorkerLoaderBinding {}

/// `images` of a binding: no settings (`images: {}`).
#[derive(
    Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub struct ImagesBinding {}

/// `service` of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!self.name.contains('/')",
        "message": "service.name is a Worker of this namespace: another namespace (ns/name) cannot be named"
    }
]))]
pub struct ServiceBinding {
    /// The called Worker's name, in the same Kubernetes namespace (a
    /// namespace cannot be named). A Worker that does not exist yet is
    /// admitted; calls fail until it does.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The class the called Worker exports whose `fetch` and methods are
    /// called (wrangler's `entrypoint`); its default export's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z_$][A-Za-z0-9_$]*$")
    )]
    pub entrypoint: Option<String>,
    /// A JSON object the called Worker reads as `this.ctx.props`
    /// (wrangler's `props`): fixed by the binding, not by the caller's
    /// code. At most 64 KiB as compact JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub props: Option<Props>,
}

/// `durableObject` of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!has(self.worker) || !has(self.sqlite) || !self.sqlite",
        "message": "durableObject.sqlite is the hosting Worker's to set: a binding with worker: <name> takes the class as that Worker binds it"
    }
]))]
pub struct DurableObjectBinding {
    /// The class, as the Worker's main module exports it by name.
    #[schemars(
        length(min = 1, max = 128),
        regex(pattern = r"^[A-Za-z_$][A-Za-z0-9_$]*$")
    )]
    pub class_name: String,
    /// The Worker of the same Kubernetes namespace that hosts the class,
    /// when it is not this one (wrangler's `script_name`): its name (a
    /// namespace cannot be named). The objects run in that Worker's
    /// isolate, under its limits, with its storage; it must export and
    /// bind the class itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub worker: Option<String>,
    /// SQLite-backed objects (wrangler's `new_sqlite_classes`): each object
    /// of the class has its own SQL database, `ctx.storage.sql`
    /// (docs/durable-objects.md, "SQL storage"). Set by the Worker that
    /// hosts the class, not by a binding with `worker`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sqlite: bool,
}

impl Binding {
    /// A KV namespace binding.
    pub fn kv(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kv_namespace: Some(namespace.into()),
            durable_object: None,
            service: None,
            dispatch_namespace: None,
            queue: None,
            d1: None,
            images: None,
            worker_loader: None,
            r2_bucket: None,
            workflow: None,
        }
    }

    /// A binding to the Durable Object class `class_name` this Worker
    /// exports.
    pub fn durable_object(name: impl Into<String>, class_name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kv_namespace: None,
            durable_object: Some(DurableObjectBinding {
                class_name: class_name.into(),
                worker: None,
                sqlite: false,
            }),
            service: None,
            dispatch_namespace: None,
            queue: None,
            d1: None,
            images: None,
            worker_loader: None,
            r2_bucket: None,
            workflow: None,
        }
    }

    /// A service binding to Worker `worker` of the same namespace, its
    /// default export's `fetch`, or `entrypoint`'s.
    pub fn service(
        name: impl Into<String>,
        worker: impl Into<String>,
        entrypoint: Option<&str>,
    ) -> Self {
        Self {
            name: name.into(),
            kv_namespace: None,
            durable_object: None,
            service: Some(ServiceBinding {
                name: worker.into(),
                entrypoint: entrypoint.map(str::to_owned),
                props: None,
            }),
            dispatch_namespace: None,
            queue: None,
            d1: None,
            images: None,
            worker_loader: None,
            r2_bucket: None,
            workflow: None,
        }
    }

    /// A binding to the dispatch namespace `namespace` (a Kubernetes
    /// namespace whose Workers `env.NAME.get(worker)` calls).
    pub fn dispatch_namespace(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kv_namespace: None,
            durable_object: None,
            service: None,
            dispatch_namespace: Some(DispatchNamespaceBinding {
                namespace: namespace.into(),
                outbound: None,
            }),
            queue: None,
            d1: None,
            images: None,
            worker_loader: None,
            r2_bucket: None,
            workflow: None,
        }
    }

    /// A producer binding to queue `queue` of the Worker's namespace.
    pub fn queue(name: impl Into<String>, queue: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kv_namespace: None,
            durable_object: None,
            service: None,
            dispatch_namespace: None,
            queue: Some(QueueBinding::new(queue)),
            d1: None,
            images: None,
            worker_loader: None,
            r2_bucket: None,
            workflow: None,
        }
    }

    /// An Images binding (`env.NAME.info`, `env.NAME.input`).
    pub fn images(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kv_namespace: None,
            durable_object: None,
            service: None,
            dispatch_namespace: None,
            queue: None,
            d1: None,
            images: Some(ImagesBinding {}),
            worker_loader: None,
            r2_bucket: None,
            workflow: None,
        }
    }

    /// A Worker Loader binding (`env.NAME.get`, `env.NAME.load`).
    pub fn worker_loader(name: impl Into<String>) -> Self {
        let mut binding = Self::images(name);
        binding.images = None;
        binding.worker_loader = Some(WorkerLoaderBinding {});
        binding
    }

    /// A binding to D1 database `database` of the Worker's namespace.
    pub fn d1(name: impl Into<String>, database: impl Into<String>) -> Self {
        let mut binding = Self::kv(name, "");
        binding.kv_namespace = None;
        binding.d1 = Some(D1Binding {
            database: database.into(),
        });
        binding
    }

    /// A binding to R2 bucket `bucket` of the Worker's namespace.
    pub fn r2(name: impl Into<String>, bucket: impl Into<String>) -> Self {
        let mut binding = Self::images(name);
        binding.images = None;
        binding.r2_bucket = Some(R2Binding {
            bucket: bucket.into(),
        });
        binding
    }

    /// A binding to the SQLite-backed Durable Object class `class_name`
    /// this Worker exports (`ctx.storage.sql`).
    pub fn sqlite_durable_object(name: impl Into<String>, class_name: impl Into<String>) -> Self {
        let mut binding = Self::durable_object(name, class_name);
        if let Some(object) = &mut binding.durable_object {
            object.sqlite = true;
        }
        binding
    }

    /// A binding to the Durable Object class `class_name` that Worker
    /// `worker` of the same namespace hosts.
    pub fn hosted_durable_object(
        name: impl Into<String>,
        class_name: impl Into<String>,
        worker: impl Into<String>,
    ) -> Self {
        let mut binding = Self::durable_object(name, class_name);
        if let Some(object) = &mut binding.durable_object {
            object.worker = Some(worker.into());
        }
        binding
    }
}

/// Why a Worker's bindings are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    #[error(
        "binding name {name:?} is not a JavaScript identifier (letters, digits and _, not starting with a digit, at most 128)"
    )]
    InvalidName { name: String },
    #[error("binding name {name:?} is used twice (names are unique across env and bindings)")]
    Duplicate { name: String },
    #[error(
        "binding {name:?}: KV namespace name {namespace:?} is invalid (1 to 63 letters, digits, -, _ or ., starting with a letter or digit)"
    )]
    InvalidNamespace { name: String, namespace: String },
    #[error(
        "binding {name:?} needs exactly one of kvNamespace, durableObject, service, dispatchNamespace, queue, d1, images, workerLoader, r2Bucket or workflow"
    )]
    Kind { name: String },
    #[error(
        "binding {name:?}: queue name {queue:?} is invalid (1 to 63 lowercase letters, digits and -, starting and ending with a letter or digit)"
    )]
    InvalidQueue { name: String, queue: String },
    #[error(
        "binding {name:?}: queue deliveryDelay is {delay}, out of 0 to 43200 seconds (12 hours)"
    )]
    QueueDelay { name: String, delay: u32 },
    #[error(
        "binding {name:?}: D1 database name {database:?} is invalid (1 to 63 letters, digits, - or _, starting with a letter or digit)"
    )]
    InvalidDatabase { name: String, database: String },
    #[error(
        "binding {name:?}: R2 bucket name {bucket:?} is invalid (3 to 63 lowercase letters, digits and -, starting and ending with a letter or digit)"
    )]
    InvalidBucket { name: String, bucket: String },
    #[error(
        "binding {name:?}: workflow.name is 1 to 64 letters, digits, _ and - (not starting with -) and workflow.className a JavaScript identifier"
    )]
    InvalidWorkflow { name: String },
    #[error(
        "binding {name:?}: className {class:?} is not a JavaScript identifier (letters, digits, _ and $, not starting with a digit, at most 128)"
    )]
    InvalidClass { name: String, class: String },
    #[error(
        "binding {name:?}: durableObject.worker {worker:?} is not a Worker name (lowercase letters, digits, - and ., at most 253; a Worker of this namespace: another namespace cannot be named)"
    )]
    InvalidWorker { name: String, worker: String },
    #[error(
        "binding {name:?}: durableObject.sqlite is set by the Worker that hosts the class, not by a binding with worker: {worker:?}"
    )]
    SqliteHosted { name: String, worker: String },
    #[error(
        "binding {name:?}: service.name {worker:?} names another namespace: a service binding calls a Worker of this namespace, by its name only"
    )]
    OtherNamespace { name: String, worker: String },
    #[error(
        "binding {name:?}: service.name {worker:?} is not a Worker name (lowercase letters, digits, - and ., at most 253)"
    )]
    InvalidService { name: String, worker: String },
    #[error(
        "binding {name:?}: service.props is {bytes} bytes as compact JSON, over the limit of 65536"
    )]
    PropsTooLarge { name: String, bytes: usize },
    #[error(
        "binding {name:?}: dispatchNamespace.namespace {namespace:?} is not a Kubernetes namespace name (lowercase letters, digits and -, at most 63)"
    )]
    InvalidDispatchNamespace { name: String, namespace: String },
    #[error(
        "binding {name:?}: dispatchNamespace.outbound.worker {worker:?} is not a Worker name (lowercase letters, digits, - and ., at most 253; a Worker of this namespace)"
    )]
    InvalidOutbound { name: String, worker: String },
    #[error(
        "binding {name:?}: dispatchNamespace.outbound.params: {param:?} is not a JavaScript identifier"
    )]
    InvalidOutboundParam { name: String, param: String },
}

/// Checks `bindings` beside the `env` names: identifiers, names unique
/// across both, KV namespace names valid, every binding of a supported kind.
pub fn check<'a>(
    env_names: impl IntoIterator<Item = &'a str>,
    bindings: &[Binding],
) -> Result<(), BindingError> {
    let mut seen: BTreeSet<&str> = env_names.into_iter().collect();
    for binding in bindings {
        if !is_identifier(&binding.name) {
            return Err(BindingError::InvalidName {
                name: binding.name.clone(),
            });
        }
        if !seen.insert(&binding.name) {
            return Err(BindingError::Duplicate {
                name: binding.name.clone(),
            });
        }
        match &binding.workflow {
            Some(flow) if kinds(binding) == 1 => workflow_check::check(binding, flow)?,
            _ => check_kind(binding)?,
        }
    }
    Ok(())
}

/// A dispatch namespace binding: a valid namespace, and its outbound
/// Worker's name and params, when it has one.
fn check_dispatch(
    binding: &Binding,
    dispatch: &DispatchNamespaceBinding,
) -> Result<(), BindingError> {
    let name = || binding.name.clone();
    if !is_namespace_name(&dispatch.namespace) {
        return Err(BindingError::InvalidDispatchNamespace {
            name: name(),
            namespace: dispatch.namespace.clone(),
        });
    }
    let Some(outbound) = &dispatch.outbound else {
        return Ok(());
    };
    if !is_worker_name(&outbound.worker) {
        return Err(BindingError::InvalidOutbound {
            name: name(),
            worker: outbound.worker.clone(),
        });
    }
    match outbound.params.iter().find(|p| !is_identifier(p)) {
        Some(param) => Err(BindingError::InvalidOutboundParam {
            name: name(),
            param: param.clone(),
        }),
        None => Ok(()),
    }
}

/// A queue producer binding: a valid queue name, a delay of 12 hours at
/// most.
fn check_queue(binding: &Binding, queue: &QueueBinding) -> Result<(), BindingError> {
    if !is_queue_name(&queue.name) {
        return Err(BindingError::InvalidQueue {
            name: binding.name.clone(),
            queue: queue.name.clone(),
        });
    }
    match queue.delivery_delay {
        Some(delay) if delay > QueueBinding::MAX_DELIVERY_DELAY => Err(BindingError::QueueDelay {
            name: binding.name.clone(),
            delay,
        }),
        _ => Ok(()),
    }
}

/// The first R2 binding's refusal, when `bindings` has one and the
/// cluster has no S3-compatible store for R2 (`served`: it has one;
/// [`crate::r2::NOT_ON_A_CLUSTER`]).
pub fn r2_on_a_cluster(bindings: &[Binding], served: bool) -> Result<(), String> {
    match bindings.iter().find(|b| b.r2_bucket.is_some()) {
        Some(binding) if !served => Err(format!(
            "binding {:?}: {}",
            binding.name,
            crate::r2::NOT_ON_A_CLUSTER
        )),
        _ => Ok(()),
    }
}

/// A D1 binding: its database's name.
fn check_d1(binding: &Binding, d1: &D1Binding) -> Result<(), BindingError> {
    if !is_database_name(&d1.database) {
        return Err(BindingError::InvalidDatabase {
            name: binding.name.clone(),
            database: d1.database.clone(),
        });
    }
    Ok(())
}

/// How many kinds a binding has (one, when it is valid).
fn kinds(binding: &Binding) -> usize {
    [
        binding.kv_namespace.is_some(),
        binding.durable_object.is_some(),
        binding.service.is_some(),
        binding.dispatch_namespace.is_some(),
        binding.queue.is_some(),
        binding.d1.is_some(),
        binding.images.is_some(),
        binding.worker_loader.is_some(),
        binding.r2_bucket.is_some(),
        binding.workflow.is_some(),
    ]
    .into_iter()
    .filter(|has| *has)
    .count()
}

/// The one kind a binding has, and its fields.
fn check_kind(binding: &Binding) -> Result<(), BindingError> {
    let name = || binding.name.clone();
    if kinds(binding) != 1 {
        return Err(BindingError::Kind { name: name() });
    }
    if let Some(dispatch) = &binding.dispatch_namespace {
        return check_dispatch(binding, dispatch);
    }
    if let Some(queue) = &binding.queue {
        return check_queue(binding, queue);
    }
    if let Some(d1) = &binding.d1 {
        return check_d1(binding, d1);
    }
    if binding.images.is_some() || binding.worker_loader.is_some() {
        return Ok(());
    }
    if let Some(r2) = &binding.r2_bucket {
        if !is_bucket_name(&r2.bucket) {
            return Err(BindingError::InvalidBucket {
                name: name(),
                bucket: r2.bucket.clone(),
            });
        }
        return Ok(());
    }
    if let Some(service) = &binding.service {
        return check_service(&binding.name, service);
    }
    match (&binding.kv_namespace, &binding.durable_object) {
        (Some(namespace), None) if !is_kv_namespace(namespace) => {
            Err(BindingError::InvalidNamespace {
                name: name(),
                namespace: namespace.clone(),
            })
        }
        (Some(_), None) => Ok(()),
        (None, Some(object)) => {
            if !is_class_name(&object.class_name) {
                return Err(BindingError::InvalidClass {
                    name: name(),
                    class: object.class_name.clone(),
                });
            }
            match &object.worker {
                Some(worker) if !is_worker_name(worker) => Err(BindingError::InvalidWorker {
                    name: name(),
                    worker: worker.clone(),
                }),
                Some(worker) if object.sqlite => Err(BindingError::SqliteHosted {
                    name: name(),
                    worker: worker.clone(),
                }),
                _ => Ok(()),
            }
        }
        _ => Err(BindingError::Kind { name: name() }),
    }
}

/// A service binding's Worker (a name of this namespace, never `ns/name`)
/// and entrypoint (a class name).
fn check_service(name: &str, service: &ServiceBinding) -> Result<(), BindingError> {
    let worker = || service.name.clone();
    if service.name.contains('/') {
        return Err(BindingError::OtherNamespace {
            name: name.to_owned(),
            worker: worker(),
        });
    }
    if !is_worker_name(&service.name) {
        return Err(BindingError::InvalidService {
            name: name.to_owned(),
            worker: worker(),
        });
    }
    let bytes = service.props.as_ref().map_or(0, |p| p.to_json().len());
    if bytes > MAX_PROPS_BYTES {
        return Err(BindingError::PropsTooLarge {
            name: name.to_owned(),
            bytes,
        });
    }
    match &service.entrypoint {
        Some(class) if !is_class_name(class) => Err(BindingError::InvalidClass {
            name: name.to_owned(),
            class: class.clone(),
        }),
        _ => Ok(()),
    }
}

/// A JavaScript identifier of ASCII letters, digits, `_` and `$`, at most
/// 128 characters.
fn is_class_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A Kubernetes object name (RFC 1123 subdomain): lowercase letters,
/// digits, `-` and `.`, each dot-separated label starting and ending with a
/// letter or digit, at most 253 characters.
pub fn is_worker_name(name: &str) -> bool {
    crate::dns_name::is_dns_subdomain(name)
}

/// Whether `name` is a binding name: [`BINDING_NAME_PATTERN`] (a
/// JavaScript identifier of ASCII letters, digits and `_`), at most 128
/// characters.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 128
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// [`KV_NAMESPACE_PATTERN`].
pub fn is_kv_namespace(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

#[cfg(test)]
mod tests;
