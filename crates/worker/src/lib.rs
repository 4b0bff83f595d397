//! What a Worker is, without Kubernetes: the vocabulary the operator, the
//! runtime node, the router and `isolane dev` share.
//!
//! - [`WorkerKey`]: a Worker by namespace and name.
//! - [`Limits`]: per-request limits, their defaults and bounds (the CRD's
//!   schema is generated from this type, and the engine runs with it).
//! - [`Bundle`]: a Worker resolved for execution, and its revision (a
//!   content hash), so the operator and `isolane dev` name the same Worker
//!   the same way.
//! - [`Binding`]: a Worker's bindings to resources (KV namespaces), and
//!   the rule that checks them ([`check_bindings`]).
//! - [`queue`]: Cloudflare Queues' producer binding ([`QueueBinding`]) and
//!   consumers ([`QueueConsumer`]), their defaults and the rules that check
//!   them.
//! - [`compat`]: compatibility dates and flags (workerd's names and rules)
//!   and what they turn on ([`NodeCompat`]).
//! - [`Modules`]: a Worker's code as named modules of wrangler's types
//!   ([`ModuleKind`]) with a main one, and how imports resolve in it.
//! - [`BundleSecret`]: how a bundle is written into a Secret by the operator
//!   and read back by a node, round-trip tested here.
//! - [`Route`]: a host and path prefix a Worker answers on; [`RouteIndex`]:
//!   which route answers a request (the router and `isolane dev`).
//! - [`decide`]: route ownership, the one rule for which Worker holds a
//!   route several claim (a host belongs to one namespace, then the oldest
//!   Worker keeps a host + prefix), used by the operator's status and
//!   webhook and the router's route table; property-tested here.
//!   [`HostOwner`]: a host recorded as a namespace's, so that it stays its
//!   own across redeploys ([`next_owners`], the operator's bookkeeping).
//! - [`Outcome`]: how a request ended, and the one table from outcome to
//!   HTTP status, retry and metric label (the engine's errors map onto it,
//!   the wire's `Outcome` converts to and from it).
//! - [`TailEvent`]: one invocation as a tail shows it, and [`TailFormat`],
//!   the one way `isolane dev` and `isolane tail` print it; [`Inert`], tenant
//!   text with its control characters escaped for a terminal.
//! - [`headers`]: the `x-isolane-*` header names.
//! - [`traffic`]: how requests are split between revisions
//!   ([`TrafficTarget`], [`TrafficStatus`]) and kept on one by an affinity
//!   key ([`VersionAffinity`]): the split resolved (the operator) and the
//!   share a request lands on (the router).
//! - [`policy`]: a cluster admin's tenant policy (ceilings, defaults,
//!   quotas) and how it applies to a Worker's limits ([`policy::apply`]).
//! - [`cron`]: cron schedules of [`Triggers`], parsed and evaluated in a
//!   time zone ([`cron::Schedule`]; the webhook, the router's scheduler and
//!   `isolane dev`).
//!
//! Kubernetes types stay out: `isolane-crds` wraps these into the `Worker`
//! resource (callers import them from here, not through it), the operator
//! and the node turn [`BundleSecret`] into and out of a `Secret`.
#![forbid(unsafe_code)]

mod binding;
mod bundle;
pub mod compat;
pub mod cron;
pub mod d1;
pub mod dispatch;
mod dns_name;
pub mod headers;
mod key;
mod limits;
mod module;
mod outcome;
mod ownership;
pub mod policy;
mod props;
pub mod queue;
pub mod quota;
pub mod r2;
mod route;
mod secret;
mod tail;
pub mod traffic;
pub mod workflow;

pub use binding::{
    BINDING_NAME_PATTERN, Binding, BindingError, DurableObjectBinding, ImagesBinding,
    KV_NAMESPACE_PATTERN, ServiceBinding, WorkerLoaderBinding, check as check_bindings,
    is_identifier, is_kv_namespace, is_worker_name, r2_on_a_cluster,
};
pub use bundle::{
    ArtifactSource, AssetSite, BUNDLE_KEY, BUNDLE_LABEL, Bundle, REVISION_ANNOTATION,
    WORKER_ID_ANNOTATION,
};
pub use compat::{Compat, CompatError, NodeCompat};
pub use cron::Triggers;
pub use d1::D1Binding;
pub use dispatch::{DispatchNamespaceBinding, OutboundWorker};
pub use key::WorkerKey;
pub use limits::{LimitError, Limits};
pub use module::{Module, ModuleKind, Modules, ModulesError, resolve_name};
pub use outcome::Outcome;
pub use ownership::{
    Claim, Holder, HostOwner, Ownership, ParseReservationError, Reservation, decide, next_owners,
    overlap,
};
pub use props::{MAX_PROPS_BYTES, Props};
pub use queue::{QueueBinding, QueueConsumer, QueueError};
pub use route::{ANY_HOST, Route, RouteIndex, normalize_host, prefix_matches};
pub use secret::{BundleSecret, DIGEST_ANNOTATION, SecretError};
pub use tail::{Exception, Inert, LogLine, ParseTailFormatError, TailEvent, TailFormat};
pub use traffic::{TrafficStatus, TrafficTarget, VersionAffinity};
pub use workflow::{WorkflowBinding, WorkflowTarget};
