//! The Isolane runtime node: runs workers for the router.
//!
//! A node watches the bundle Secrets of its namespace into a
//! [`BundleIndex`], serves the `isolane.runtime.v1.Runtime` gRPC service
//! ([`NodeService`]) on one listener per engine thread or one for all
//! ([`ListenerMode`]), runs each request on the pinned engine thread the
//! router chose (`isolane-engine`), bounds requests in flight per thread
//! ([`Admission`]), exports `isolane_node_*` metrics ([`NodeMetrics`], also
//! the engine's observer), and holds a Lease that says where it listens
//! ([`Heartbeat`]). [`Node`] composes these; `main.rs` parses [`Args`] into
//! a [`Config`], starts the engine and runs a [`Node`] until SIGTERM, then
//! drains it. `docs/node.md` covers flags, listener modes, the drain and the
//! metrics.
#![forbid(unsafe_code)]

mod admission;
mod alarms;
mod bundles;
mod config;
mod crash;
mod error;
mod listeners;
mod membership;
mod metrics;
mod node;
mod peers;
mod queues;
mod retire;
mod service;
mod socket;
mod workflows;

pub use admission::{Admission, Permit};
pub use alarms::spawn_alarms;
pub use bundles::{BundleError, BundleIndex, Loaded, parse_secret, watch_bundles, worker_bundle};
pub use config::{
    ADVERTISE_HOST_ENV, Args, BUNDLE_REVISIONS_ENV, CODE_CACHE_MIB_ENV, Config, ConfigError,
    DEFAULT_GRPC_ADDR, DEFAULT_NAMESPACE, DNS_OVER_HTTPS_ENV, DRAIN_TIMEOUT_ENV, GRPC_ADDR_ENV,
    HEAP_BUDGET_MIB_ENV, ISOLATES_PER_THREAD_ENV, LEASE_DURATION_ENV, LISTENERS_ENV, ListenerMode,
    MAX_INFLIGHT_ENV, NAMESPACE_ENV, NODE_NAME_ENV, ObjectArgs, PIN_THREADS_ENV, POOL_MODE_ENV,
    REVISION_WAIT_ENV, SNAPSHOT_CACHE_DIR_ENV, SPARE_ISOLATES_ENV, STATE_DIR_ENV, THREADS_ENV,
    WEBSOCKET_DRAIN_GRACE_ENV, WebSocketArgs, parse_dns_over_https, parse_duration,
};
pub use crash::open_turn_map;
pub use error::Error;
pub use listeners::{BindError, Health, Listeners, Serving};
pub use membership::{FIELD_MANAGER, Heartbeat};
pub use metrics::{ALL as METRICS, NodeMetrics};
pub use node::{Node, RunningNode, StartError};
pub use peers::{EJECTED_FOR, OBJECT_METADATA, Peers, RingWatch, object_of};
pub use queues::{QueueConsumerOf, QueueHost, QueueOutcome, QueueRunner, Verdict, spawn_queues};
pub use retire::retire_deleted;
pub use service::{
    Answered, ExecuteStream, InboundFrames, MAX_CHUNK_BYTES, MAX_MESSAGE_BYTES, NodeService,
};
pub use workflows::spawn_workflows;
