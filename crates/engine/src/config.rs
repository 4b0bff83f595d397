//! How the engine is shaped: threads, pool mode, cache sizes, queues.

use std::fmt;
use std::str::FromStr;

/// How isolates are pooled. `Pinned` is the production design; the other two
/// exist so the classic comparison can be reproduced on this engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolMode {
    /// A new isolate (from the snapshot) for every request, dropped after it.
    Legacy,
    /// One engine-wide, mutex-guarded pool. V8 isolates are not `Send` and this
    /// engine uses no `v8::Locker`, so an isolate still runs on the thread that
    /// created it: every request takes the global lock to find its isolate and,
    /// when the isolate lives on another thread, hops there over that thread's
    /// queue. That is the cost profile of a shared pool (a global lock on every
    /// request, cross-core hand-offs, no cache locality) without Locker's
    /// hazards.
    Shared,
    /// Thread-local LRU per pinned thread: no lock, no hop.
    #[default]
    Pinned,
}

impl PoolMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            PoolMode::Legacy => "legacy",
            PoolMode::Shared => "shared",
            PoolMode::Pinned => "pinned",
        }
    }
}

impl fmt::Display for PoolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pool mode name that is not `legacy`, `shared` or `pinned`.
#[derive(Debug, thiserror::Error)]
#[error("unknown pool mode {0:?} (expected legacy, shared or pinned)")]
pub struct ParsePoolModeError(String);

impl FromStr for PoolMode {
    type Err = ParsePoolModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(PoolMode::Legacy),
            "shared" => Ok(PoolMode::Shared),
            "pinned" => Ok(PoolMode::Pinned),
            other => Err(ParsePoolModeError(other.to_owned())),
        }
    }
}

/// The default cap on a request's body: 100 MiB.
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: u64 = 100 << 20;

/// Engine configuration. `Default` gives one thread per core in the affinity
/// mask, pinned, with the pinned pool.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Engine threads; 0 means one per core in the process's affinity mask.
    pub threads: usize,
    /// Pin each engine thread to one core (round-robin over the mask).
    pub pin_threads: bool,
    pub pool_mode: PoolMode,
    /// Warm isolates kept per thread at most (`warm_set.rs`).
    pub isolates_per_thread: usize,
    /// Heap bytes the warm isolates of one thread may hold together before the
    /// least recently used are evicted.
    pub heap_budget_bytes: usize,
    /// Requests waiting per thread before `execute` fails fast with `Overloaded`.
    pub queue_depth: usize,
    /// The most blank isolates (snapshot + context, no worker yet) kept ready
    /// per thread: a thread keeps as many as it loaded new workers in the
    /// last second, at least one (`spare_demand.rs`); 0: none.
    /// (A request's streamed body and its `ctx.waitUntil` work share its
    /// `wall_ms`.)
    pub spare_isolates: usize,
    /// Chunks buffered between a streaming response and its reader.
    pub body_channel_chunks: usize,
    /// Requests one namespace (all its workers together) may have queued or
    /// in flight on one thread; past it its requests are refused
    /// (`Overloaded`) while other namespaces' still run. 0: a quarter of
    /// `queue_depth`.
    pub worker_slots: usize,
    /// The most CPU time a request may use, whatever its worker asks for
    /// (`limits.cpu_ms` is clamped to it): one turn holds its thread for
    /// that long. 0: no cap.
    pub max_cpu_ms: u64,
    /// The largest request body a client may send, in bytes (0: no cap).
    /// A larger one is answered `413` (`body_cap.rs`): the request's
    /// failure, never the Worker's. Cloudflare's is 100 MB on its Free and
    /// Pro plans.
    pub max_request_body_bytes: u64,
    /// Where `fetch` may connect, and the extra CAs it trusts.
    pub egress: isolane_egress::EgressConfig,
    /// The Cache API's store, shared by the engine's threads.
    pub cache: CacheConfig,
    /// WebSocket limits: message size, buffering, idle timeout, sockets
    /// per Worker per thread (`socket.rs`).
    pub websocket: crate::socket::WebSocketConfig,
    /// Where KV bindings read and write (`isolane-bindings`' KV unit,
    /// through `HostState::store`); `None`: a KV operation fails with an
    /// Error saying the node has no store.
    pub store: Option<isolane_storage::Store>,
    /// A folder for the startup snapshot's disk cache (`snapshot/cache.rs`):
    /// the first process of a build writes its blob there, the next ones
    /// read it instead of building it. `None`: built at every start. Only
    /// the process's first `Engine::start` reads it.
    pub snapshot_cache: Option<std::path::PathBuf>,
    /// Where each thread records the Worker in a JavaScript turn
    /// (`turn_map.rs`); `None`: not recorded. Thread `i` takes slot `i`.
    pub turn_map: Option<std::sync::Arc<crate::turn_map::TurnMap>>,
    /// Where big ES modules' V8 code caches are kept (`code_cache.rs`):
    /// the first isolate to compile a module writes its cache, the next
    /// ones (other threads, later processes) compile from it. `None`: none.
    pub code_cache: Option<crate::code_cache::CodeCacheConfig>,
    /// How long a Durable Object instance may sit idle (no event, no
    /// storage operation, no accepted non-hibernatable WebSocket) before it
    /// is dropped from its isolate; the next call makes it again and it
    /// reads its state back from storage. Cloudflare's is about 70 s (up to
    /// twice this here: a sweep every `object_idle`).
    pub object_idle: std::time::Duration,
    /// Which node owns each Durable Object and how calls reach another
    /// node (`object_peers.rs`); `None`: every object is this process's.
    pub objects: Option<crate::object_peers::SharedPeers>,
    /// The API crates' families of units this engine runs with, in order
    /// (`isolane-runtime`'s `families()` gives them all); empty: the core
    /// alone. One set per process: the units, the snapshot and its
    /// external references are made once (`host.rs`), so every engine of a
    /// process must name the same families.
    pub families: Vec<crate::unit::Family>,
}

/// How long an idle Durable Object stays in memory by default.
pub const DEFAULT_OBJECT_IDLE: std::time::Duration = std::time::Duration::from_secs(70);

impl EngineConfig {
    /// Engine threads: `threads`, or one per core when it is 0.
    pub fn resolved_threads(&self) -> usize {
        match self.threads {
            0 => core_affinity::get_core_ids().map_or(1, |cores| cores.len().max(1)),
            threads => threads,
        }
    }

    /// The CPU limit a request of a worker with `limits` runs with:
    /// `limits.cpu_ms`, clamped to `max_cpu_ms`.
    pub fn cpu_limit_ms(&self, limits: &crate::bundle::Limits) -> u64 {
        match self.max_cpu_ms {
            0 => u64::from(limits.cpu_ms),
            max => u64::from(limits.cpu_ms).min(max),
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            threads: 0,
            pin_threads: true,
            pool_mode: PoolMode::Pinned,
            isolates_per_thread: 100,
            heap_budget_bytes: 1 << 30,
            queue_depth: 1024,
            spare_isolates: 4,
            body_channel_chunks: 4,
            worker_slots: 0,
            max_cpu_ms: 5_000,
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            egress: isolane_egress::EgressConfig::default(),
            cache: CacheConfig::default(),
            websocket: crate::socket::WebSocketConfig::default(),
            store: None,
            snapshot_cache: None,
            turn_map: None,
            code_cache: None,
            object_idle: DEFAULT_OBJECT_IDLE,
            objects: None,
            families: Vec::new(),
        }
    }
}

/// The bounds of the Cache API's store (`isolane-web`'s `cache/store.rs`,
/// one per engine, shared by its threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// Bytes all entries may hold together (bodies, headers, keys).
    pub capacity_bytes: usize,
    /// Bytes one namespace's entries may hold together; also the largest
    /// single entry. 0: a quarter of `capacity_bytes`.
    pub namespace_bytes: usize,
    /// Entries (variants) one namespace may hold together.
    pub namespace_entries: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            capacity_bytes: 128 << 20,
            namespace_bytes: 0,
            namespace_entries: 16_384,
        }
    }
}

impl CacheConfig {
    /// Bytes one namespace's entries may hold together (and the largest
    /// single entry): `namespace_bytes`, or a quarter of the capacity.
    pub fn namespace_share(&self) -> usize {
        match self.namespace_bytes {
            0 => self.capacity_bytes / 4,
            n => n.min(self.capacity_bytes),
        }
    }
}
