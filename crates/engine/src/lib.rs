//! The V8 engine of Isolane: runs JavaScript workers (Cloudflare-Workers-style
//! `fetch` handlers) in V8 isolates kept in per-core, thread-pinned pools,
//! with the runtime's Web APIs in a startup snapshot and per-request limits.
//!
//! The main type is [`Engine`]: [`Engine::start`] initialises V8 once, builds
//! the snapshot, and starts one pinned thread per core, each with its own
//! current-thread tokio runtime, isolate LRU and watchdog;
//! [`Engine::run`] runs one [`Work`] (a request, a cron tick, a Durable
//! Object's alarm or call, a queue batch, a prewarm…) for a [`WorkerBundle`] on a thread
//! the caller picks (placement is not the engine's job), and
//! [`Engine::execute`] one HTTP request. Bodies stream
//! both ways as [`Body`]. Metrics leave through an [`EngineObserver`]. The
//! runtime node and `isolane dev` compose it; nothing here knows Kubernetes,
//! gRPC or Prometheus.
//!
//! This is the core: it names no API family. The API crates
//! (`isolane-web`, `isolane-nodejs`, `isolane-bindings`) register their
//! units with it as a [`Family`] through [`api`], their door; the binaries
//! pick the families (`EngineConfig::families`;
//! docs/adr/0002-engine-crates.md).
//!
//! With `isolane-web` and `isolane-nodejs` (AWS-LC's C API), the only
//! crates in the workspace allowed to use `unsafe`; each block says why it
//! is sound.
#![allow(unsafe_code)]

mod alarm;
mod alarm_runner;
pub mod api;
mod body;
mod body_cap;
mod bundle;
use isolane_checkedfile as checked_file;
mod code_cache;
mod config;
use isolane_offload as crypto_pool;
mod dispatch;
mod engine;
mod event_object;
mod fairness;
mod host;
mod invocation;
mod isolate;
mod job;
mod limits;
mod memory;
mod modules;
mod native_alloc;
mod node_log;
mod object_call;
mod object_peers;
mod observer;
mod outcome;
mod platform;
mod pool;
mod prewarm;
mod retire;
mod schedule;
mod scheduled;
mod script;
mod service_call;
mod snapshot;
mod socket;
mod spare_demand;
mod tail;
mod thread;
mod thread_ctx;
mod trace;
mod turn_map;
mod unit;
pub mod warm_set;
mod watchdog;
mod work;
mod worker_lookup;

pub use alarm::AlarmEvent;
pub use alarm_runner::{AlarmHost, AlarmRunner};
pub use body::{Body, BodyClosed, BodyError, BodySender};
pub use bundle::{
    Compat, DispatchTarget, GLOBAL_OUTBOUND, HostedClass, Limits, Module, ModuleKind, Modules,
    NodeCompat, ServiceTarget, WorkerBundle, namespace_of,
};
pub use code_cache::{CodeCacheConfig, CodeCacheStats, MIN_SOURCE_BYTES, code_cache_file_name};
pub use config::{
    CacheConfig, DEFAULT_MAX_REQUEST_BODY_BYTES, DEFAULT_OBJECT_IDLE, EngineConfig,
    ParsePoolModeError, PoolMode,
};
pub use engine::Engine;
pub use host::console::{
    BYTES_PER_INVOCATION, BYTES_PER_SECOND, LINES_PER_INVOCATION, LINES_PER_SECOND, MAX_LINE_BYTES,
};
pub use host::host_function_names;
/// The argument and result conversions of `host_fn!` (at the root, where
/// the macro names them from other crates).
pub use host::op::{FromArg, Return};
pub use isolane_egress::{DnsResolverConfig, EgressConfig, EgressRefused, Refusal, TlsConfigError};
pub use isolane_storage::QueueBatch;
pub use node_log::NODE_LOG_PER_SECOND;
pub use object_call::{ObjectCall, home_thread, object_key};
pub use object_peers::{MAX_ATTEMPTS, ObjectPeers, PeerAnswer, PeerError, SharedPeers};
pub use observer::{
    CodeCacheEvent, EngineObserver, EvictionReason, KvOp, KvResult, LogDropReason, NoopObserver,
    ServiceCallKind, ServicePlace, SocketTally, TerminationReason,
};
pub use outcome::{EngineError, ExecuteError, Outcome};
pub use prewarm::{Prewarm, PrewarmOutcome};
pub use schedule::guaranteed;
pub use scheduled::ScheduledEvent;
pub use snapshot::runtime_files;
pub use socket::{
    CloseFrame, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_SOCKETS_PER_OBJECT, ObjectSocketEvent,
    SocketEnd, SocketMessage, WebSocketConfig, WebSocketUpgrade,
};
pub use tail::{
    Exception, LogLine, MAX_TAILS_PER_WORKER, QUEUE as TAIL_QUEUE, TailError, TailEvent, TailItem,
    TailSubscription,
};
pub use trace::RequestTrace;
pub use turn_map::{Previous, TurnMap, TurnMapError};
pub use unit::Family;
pub use work::Work;
pub use worker_lookup::WorkerLookup;

/// The header every outbound `fetch` carries ([`isolane_worker::headers::HOPS`]).
pub use isolane_worker::headers::HOPS as HOPS_HEADER;
/// The V8 bindings the engine is built on, for the API crates and `host_fn!`.
pub use v8;

/// The version of V8 this engine links.
pub fn v8_version() -> &'static str {
    v8::V8::get_version()
}
