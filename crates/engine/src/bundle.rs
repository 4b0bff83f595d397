//! What the engine runs: a worker's script, bindings and limits.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub use isolane_worker::{Compat, Module, ModuleKind, Modules, NodeCompat};

/// One immutable revision of a worker, as resolved by the operator (or by
/// `isolane dev` from a file). Isolates are keyed by `(id, revision)`: a new
/// revision replaces the old isolate on the next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerBundle {
    /// `namespace/name`, or `dev/<file stem>` for `isolane dev`.
    pub id: String,
    /// Content hash of the bundle.
    pub revision: String,
    /// ES module (`export default { fetch }`) or service-worker script;
    /// unused when the worker has `modules`.
    pub script: String,
    /// The worker's modules, when it is more than one script: run from
    /// their main module (`modules.rs`). Shared by every isolate of the
    /// revision.
    pub modules: Option<Arc<Modules>>,
    /// The static assets the node answers before the Worker (and, when
    /// bound, `env.ASSETS` will): its artifact's, or `isolane dev`'s
    /// project's. The engine does not read them yet.
    pub assets: Option<isolane_worker::AssetSite>,
    /// Bindings exposed to the handler as `env` (strings only).
    pub env: BTreeMap<String, String>,
    /// JSON bindings: name to the value as JSON text, exposed to the
    /// handler parsed (a fresh value in each isolate).
    pub json_env: BTreeMap<String, String>,
    /// KV namespace bindings: binding name (`env.NAME`) to the KV
    /// namespace's name, whose data is the worker's namespace's
    /// ([`WorkerBundle::namespace`]; `isolane-bindings`' KV unit).
    pub kv: BTreeMap<String, String>,
    /// Durable Object bindings: binding name (`env.NAME`) to the class the
    /// Worker exports; its objects run in the Worker's isolate and keep
    /// their data in the worker's namespace (`isolane-bindings`' `object.rs`).
    pub durable_objects: BTreeMap<String, String>,
    /// The classes of `durable_objects` that are SQLite-backed
    /// (`durableObject.sqlite`, wrangler's `new_sqlite_classes`): their
    /// objects have `ctx.storage.sql`.
    pub sqlite_classes: BTreeSet<String>,
    /// Durable Object bindings to a class another Worker of the same
    /// namespace hosts (`durableObject: {className, worker}`): binding name
    /// to that Worker and class. The objects run in the host's isolate,
    /// under its limits, with its storage (`host/object_hosted.rs`).
    pub hosted_objects: BTreeMap<String, HostedClass>,
    /// Service bindings (`service: {name, entrypoint}`, wrangler's
    /// `services`): binding name to the Worker of the same namespace it
    /// calls, and the entrypoint. A call runs on the caller's thread in
    /// that Worker's isolate (`host/service.rs`).
    pub services: BTreeMap<String, ServiceTarget>,
    /// Dispatch namespace bindings (`dispatchNamespace: {namespace}`,
    /// wrangler's `dispatch_namespaces`): binding name to the Kubernetes
    /// namespace whose Workers `env.NAME.get(worker)` calls, on the service
    /// path (`host/service.rs`), and whether it agreed.
    pub dispatchers: BTreeMap<String, DispatchTarget>,
    /// Queue producer bindings (`queue: {name, deliveryDelay}`, wrangler's
    /// `queues.producers`): binding name to the queue of the Worker's
    /// namespace `env.NAME.send()` writes to (`isolane-bindings`' queue unit).
    pub queues: BTreeMap<String, isolane_worker::QueueBinding>,
    /// D1 bindings (`d1: {database}`): binding name to the database of the
    /// Worker's namespace (`isolane-bindings`' d1 unit).
    pub d1: BTreeMap<String, String>,
    /// The queues of its namespace the Worker consumes (`spec.queueConsumers`),
    /// delivered by `isolane-node`'s queue loop.
    pub queue_consumers: Vec<isolane_worker::QueueConsumer>,
    /// Images bindings (`images: {}`, wrangler's `[images] binding`): their
    /// names (`isolane-bindings`' images unit).
    pub images: BTreeSet<String>,
    /// Worker Loader bindings' names (`isolane-bindings`' loader unit).
    pub loaders: BTreeSet<String>,
    /// Loaded with `globalOutbound: null`: no `fetch` nor `connect`.
    /// (Loaded with a service binding as `globalOutbound`, the binding is
    /// in `services` under [`GLOBAL_OUTBOUND`] instead: its `fetch` takes
    /// every `fetch()`, and there is no `connect`.)
    pub no_network: bool,
    /// Its namespace's CPU quota here, CPU-ms per second (docs/policy.md).
    pub cpu_ms_per_second: Option<u32>,
    /// R2 bindings (`r2Bucket`): binding name to its namespace's bucket.
    pub r2: BTreeMap<String, String>,
    /// Workflow bindings (`isolane-bindings`' workflow unit), by name.
    pub workflows: BTreeMap<String, isolane_worker::WorkflowTarget>,
    pub limits: Limits,
    /// When not empty, the only hosts the worker's `fetch` reaches: exact
    /// names, or `*.example.com` for every host under example.com.
    pub allowed_hosts: Vec<String>,
    /// What the Worker's compatibility date and flags turn on: whether its
    /// modules may import Node's (`node:buffer`, ...; `modules.rs`), what
    /// `process.env` holds, whether its top-level code may `eval`, which
    /// globals it sees (docs/nodejs.md lists the flags).
    pub compat: Compat,
}

/// The key in [`WorkerBundle::services`] of the Worker that takes every
/// `fetch()` of code loaded with a service binding as its `globalOutbound`
/// (`isolane-bindings`' loader): not in its `env` (no binding name holds a
/// NUL), but the global `fetch` calls it (`isolane-web`'s `js/13_fetch.js`).
pub const GLOBAL_OUTBOUND: &str = "\0globalOutbound";

/// The Worker a service binding calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceTarget {
    /// The called Worker's name (its id is `<namespace>/<worker>`, the
    /// namespace always the caller's own).
    pub worker: String,
    /// The class the Worker exports whose `fetch` is called, or `None` for
    /// its default export's.
    pub entrypoint: Option<String>,
    /// The binding's `props` as JSON text (an object): the called Worker's
    /// `ctx.props`.
    pub props: Option<String>,
}

/// The namespace a dispatch namespace binding calls into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchTarget {
    /// The Kubernetes namespace whose Workers are called by name.
    pub namespace: String,
    /// Whether that namespace agreed (its Namespace carries the label
    /// `dispatch.isolane.dev/<caller's namespace>: "true"`), as the
    /// operator (or `isolane dev`) saw it: calls into it are refused
    /// otherwise.
    pub consented: bool,
    /// The Worker of the caller's namespace that takes every `fetch()` of
    /// a Worker called through the binding, and the names of `get()`'s
    /// `options.outbound` it sees in its `env` (per call: `CallOutbound`).
    pub outbound: Option<isolane_worker::dispatch::OutboundWorker>,
}

/// A Durable Object class hosted by another Worker of the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedClass {
    /// The hosting Worker's name (its id is `<namespace>/<worker>`, the
    /// namespace always the binding Worker's own).
    pub worker: String,
    /// The class, as the hosting Worker exports and binds it.
    pub class: String,
}

/// Per-request (CPU, wall, subrequests) and per-isolate (memory) limits:
/// the Worker's own (`isolane-worker`), with the CRD's defaults and bounds.
pub use isolane_worker::Limits;

impl WorkerBundle {
    /// The worker's namespace: `id` up to its first `/` (`namespace/name`,
    /// [`isolane_worker::WorkerKey`]'s form), or the whole id when it has
    /// none. The tenant that slots, CPU shares and penalties are counted
    /// by (`schedule.rs`), so that spreading work over many Workers of one
    /// namespace gains nothing.
    pub fn namespace(&self) -> &str {
        namespace_of(&self.id)
    }

    /// Bytes of the Worker's code: its modules', or its one script's.
    pub fn source_bytes(&self) -> usize {
        self.modules
            .as_ref()
            .map_or(self.script.len(), |m| m.total_bytes())
    }

    /// Whether the worker may fetch from `host` (its `allowed_hosts`; the
    /// engine's egress policy applies on top).
    pub fn may_fetch(&self, host: &str) -> bool {
        if self.services.contains_key(GLOBAL_OUTBOUND) {
            return false;
        }
        if self.allowed_hosts.is_empty() {
            return !self.no_network;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed_hosts
            .iter()
            .any(|allowed| match allowed.strip_prefix("*.") {
                Some(domain) => host
                    .strip_suffix(domain)
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
                None => host == *allowed,
            })
    }

    /// Why `what` (`fetch`, `connect`) to `host` is refused when
    /// [`Self::may_fetch`] says no.
    pub fn egress_refusal(&self, what: &str, host: &str) -> String {
        let why = if self.no_network {
            "this code was loaded with globalOutbound: null and has no network"
        } else if self.services.contains_key(GLOBAL_OUTBOUND) {
            "this code was loaded with a service as globalOutbound, which takes its fetch() calls only"
        } else {
            "the host is not in the Worker's egress.allowedHosts"
        };
        format!("{what} to {host} refused: {why}")
    }

    /// A bundle with default limits and no bindings.
    pub fn new(
        id: impl Into<String>,
        revision: impl Into<String>,
        script: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            revision: revision.into(),
            script: script.into(),
            modules: None,
            assets: None,
            env: BTreeMap::new(),
            json_env: BTreeMap::new(),
            kv: BTreeMap::new(),
            durable_objects: BTreeMap::new(),
            sqlite_classes: BTreeSet::new(),
            hosted_objects: BTreeMap::new(),
            services: BTreeMap::new(),
            dispatchers: BTreeMap::new(),
            queues: BTreeMap::new(),
            d1: BTreeMap::new(),
            queue_consumers: Vec::new(),
            images: BTreeSet::new(),
            loaders: BTreeSet::new(),
            no_network: false,
            cpu_ms_per_second: None,
            r2: BTreeMap::new(),
            workflows: BTreeMap::new(),
            limits: Limits::default(),
            allowed_hosts: Vec::new(),
            compat: Compat::default(),
        }
    }
}

impl WorkerBundle {
    /// A bundle of `modules` with default limits and no bindings.
    pub fn from_modules(
        id: impl Into<String>,
        revision: impl Into<String>,
        modules: Modules,
    ) -> Self {
        let mut bundle = Self::new(id, revision, "");
        bundle.modules = Some(Arc::new(modules));
        bundle
    }
}

/// The namespace part of a worker id (see [`WorkerBundle::namespace`]).
pub fn namespace_of(id: &str) -> &str {
    // A byte scan: on every request's path, and names are short.
    match id.bytes().position(|b| b == b'/') {
        Some(slash) => &id[..slash],
        None => id,
    }
}
