//! Metrics leave the engine through [`EngineObserver`]; the engine itself
//! knows nothing of Prometheus. Every label an observer receives is bounded.

use std::time::Duration;

use crate::outcome::Outcome;
use crate::socket::SocketMessage;

/// Why a warm isolate left its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvictionReason {
    /// The pool was at `isolates_per_thread`.
    Capacity,
    /// The thread's warm isolates exceeded `heap_budget_bytes`.
    Memory,
    /// Another revision of the same worker needed room: a thread keeps a
    /// few revisions of a worker warm, the least recently used goes.
    RevisionReplaced,
    /// A limit terminated execution in it (or it was condemned otherwise).
    Terminated,
    /// The engine shut down.
    Shutdown,
    /// The worker is gone (deleted): [`crate::Engine::retire`].
    Retired,
}

impl EvictionReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            EvictionReason::Capacity => "capacity",
            EvictionReason::Memory => "memory",
            EvictionReason::RevisionReplaced => "revision_replaced",
            EvictionReason::Terminated => "terminated",
            EvictionReason::Shutdown => "shutdown",
            EvictionReason::Retired => "retired",
        }
    }
}

/// Why the engine stopped a worker's JavaScript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TerminationReason {
    CpuLimit,
    MemoryLimit,
    WallTimeout,
}

impl TerminationReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            TerminationReason::CpuLimit => "cpu_limit",
            TerminationReason::MemoryLimit => "memory_limit",
            TerminationReason::WallTimeout => "wall_timeout",
        }
    }
}

/// Which log budget dropped a Worker's console line (`host/console.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogDropReason {
    /// Over the lines or bytes one invocation keeps.
    Invocation,
    /// Over the lines or bytes a Worker keeps per second on a thread.
    Rate,
}

impl LogDropReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            LogDropReason::Invocation => "invocation",
            LogDropReason::Rate => "rate",
        }
    }
}

/// What became of a big module's code cache (`code_cache.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeCacheEvent {
    /// V8 compiled the module from its cache file.
    Consumed,
    /// V8 refused a cache file (another V8, other flags, another source).
    Rejected,
    /// A cache file failed its checks (corrupt, truncated, another key).
    Invalid,
    /// A cache file was written.
    Written,
    /// A cache was not written (an I/O error, or the writer's queue full).
    WriteFailed,
}

impl CodeCacheEvent {
    pub fn as_str(&self) -> &'static str {
        match self {
            CodeCacheEvent::Consumed => "consumed",
            CodeCacheEvent::Rejected => "rejected",
            CodeCacheEvent::Invalid => "invalid",
            CodeCacheEvent::Written => "written",
            CodeCacheEvent::WriteFailed => "write_failed",
        }
    }
}

/// A KV operation (`isolane-bindings`' KV unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvOp {
    Get,
    Put,
    Delete,
    List,
}

impl KvOp {
    pub fn as_str(&self) -> &'static str {
        match self {
            KvOp::Get => "get",
            KvOp::Put => "put",
            KvOp::Delete => "delete",
            KvOp::List => "list",
        }
    }
}

/// How a KV operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KvResult {
    /// Done by the store.
    Ok,
    /// A read answered from the node's hot-key cache.
    Cached,
    /// Refused by Cloudflare's limits or the Worker's memory.
    Invalid,
    /// The store failed (unreachable, its schema missing, …).
    Failed,
}

impl KvResult {
    pub fn as_str(&self) -> &'static str {
        match self {
            KvResult::Ok => "ok",
            KvResult::Cached => "cached",
            KvResult::Invalid => "invalid",
            KvResult::Failed => "failed",
        }
    }
}

/// Where a service call ran, relative to its caller (`host/service.rs`).
/// Only [`ServicePlace::SameThread`] today: every call runs on its
/// caller's own engine thread; another thread or node would be a place of
/// its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServicePlace {
    /// On the caller's engine thread, in the called Worker's isolate there.
    SameThread,
}

impl ServicePlace {
    pub fn as_str(&self) -> &'static str {
        match self {
            ServicePlace::SameThread => "same_thread",
        }
    }
}

/// What a service call asked for: `env.SVC.fetch` or a JS RPC call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceCallKind {
    Fetch,
    Rpc,
}

impl ServiceCallKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ServiceCallKind::Fetch => "fetch",
            ServiceCallKind::Rpc => "rpc",
        }
    }
}

/// Receives the engine's measurements. Called on engine threads, on the
/// request path: implementations must be cheap and must not block.
pub trait EngineObserver: Send + Sync {
    /// A request found (`hit`) or did not find its worker's warm isolate.
    fn isolate_cache(&self, _thread: usize, _hit: bool) {}
    /// An isolate was made ready for a worker (snapshot → context → script).
    /// `from_spare` when a pre-created blank isolate was used.
    fn isolate_created(&self, _thread: usize, _duration: Duration, _from_spare: bool) {}
    fn isolate_evicted(&self, _thread: usize, _reason: EvictionReason) {}
    /// What a prewarm ([`crate::Prewarm`]) did. Not counted as a cache
    /// lookup: those are requests'.
    fn isolate_prewarmed(&self, _thread: usize, _outcome: crate::PrewarmOutcome) {}
    /// Gauges of one thread, after each change.
    fn thread_isolates(&self, _thread: usize, _live_isolates: usize, _heap_bytes: usize) {}
    fn request_finished(
        &self,
        _thread: usize,
        _outcome: Outcome,
        _duration: Duration,
        _cpu: Duration,
    ) {
    }
    /// A sampled request (its [`crate::RequestTrace`] named its trace id)
    /// finished, after [`EngineObserver::request_finished`]: the trace is
    /// an exemplar of its wall time. Never called for an untraced request.
    fn request_exemplar(
        &self,
        _thread: usize,
        _outcome: Outcome,
        _duration: Duration,
        _trace_id: [u8; 16],
    ) {
    }
    fn termination(&self, _thread: usize, _reason: TerminationReason) {}
    /// A namespace was penalized on a thread for a turn that ran long past
    /// its limit (see `schedule.rs`).
    fn quarantined(&self, _thread: usize) {}
    /// The egress policy refused a worker's `fetch` (see `isolane-egress`).
    fn egress_refused(&self, _thread: usize, _reason: isolane_egress::Refusal) {}
    /// A tailed Worker's console lines went over a log budget and were
    /// dropped (`host/console.rs`).
    fn log_lines_dropped(&self, _thread: usize, _reason: LogDropReason, _lines: u64) {}
    /// Tail events were dropped for a subscriber that read too slowly
    /// (`tail.rs`). Called on the publishing thread.
    fn tail_events_dropped(&self, _events: u64) {}
    /// A KV operation that reached the store ended (called on the engine
    /// thread of the Worker that asked, as its promise settles).
    fn kv_operation(&self, _op: KvOp, _result: KvResult) {}
    /// A service call (`host/service.rs`) was sent to run at `place`.
    fn service_call(&self, _place: ServicePlace, _kind: ServiceCallKind) {}
    /// The modules' code cache did `event` (`code_cache.rs`).
    fn code_cache(&self, _event: CodeCacheEvent) {}
    /// A Worker on `thread` opened a WebSocket to a server (`fetch` with
    /// `Upgrade`, `new WebSocket`): what counts it until it ends (the
    /// tally is dropped then). Accepted sockets are the front end's to
    /// count.
    fn outbound_socket_opened(&self, _thread: usize) -> Option<Box<dyn SocketTally>> {
        None
    }
}

/// Counts one outbound WebSocket from its open until it is dropped (when
/// the socket ends).
pub trait SocketTally: Send {
    /// A message from the server went to the Worker.
    fn to_worker(&self, message: &SocketMessage);
    /// A message from the Worker went to the server.
    fn to_server(&self, message: &SocketMessage);
    /// The engine closed the socket itself with `code` (1009, 1011), unless
    /// a close went either way before.
    fn closed(&self, code: u16);
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopObserver;

impl EngineObserver for NoopObserver {}
