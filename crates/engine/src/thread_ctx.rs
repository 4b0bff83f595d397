//! What the isolates of an engine thread reach through it: [`ThreadCtx`],
//! the thread's own observer, config, outbound client, watchdog and
//! schedule, and through it [`EngineShared`], what all threads share.
//!
//! Apart from `thread.rs` (the thread's loop, its pool and its requests) so
//! that isolates and host functions depend on this, not on the thread that
//! runs them: the thread holds the pool, the pool holds isolates, and each
//! isolate holds an `Rc<ThreadCtx>`. Thread affinity: a `ThreadCtx` is made
//! by its thread and never leaves it (`Rc`); `EngineShared` is `Arc`.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::config::EngineConfig;
use crate::job::Job;
use crate::observer::EngineObserver;
use crate::schedule::Schedule;
use crate::watchdog::Watchdog;

/// What all threads share. Only `shared` mode touches the directory.
pub(crate) struct EngineShared {
    pub(crate) senders: Vec<mpsc::Sender<Job>>,
    /// Each thread's tokio runtime, set once the thread started (see
    /// `Engine::spawn_on`).
    pub(crate) runtimes: Vec<std::sync::OnceLock<tokio::runtime::Handle>>,
    /// Shared mode: which thread holds each worker's isolate.
    pub(crate) directory: Mutex<HashMap<String, usize>>,
    /// Each thread's long turns, for moving a hog's neighbours elsewhere.
    pub(crate) loads: crate::fairness::Loads,
    /// Where `fetch` may connect.
    pub(crate) egress: Arc<isolane_egress::EgressPolicy>,
    /// The roots outbound TLS trusts.
    pub(crate) roots: rustls::RootCertStore,
    /// The API crates' engine-wide states (the Cache API's store, …).
    pub(crate) states: EngineStates,
    /// Slots for expensive Web Crypto jobs, shared out per namespace
    /// (`isolane-offload`).
    pub(crate) crypto: crate::crypto_pool::Pool,
    /// Invocation events for whoever tails a Worker (`tail.rs`).
    pub(crate) tail: Arc<crate::tail::Tail>,
    /// The Workers this process serves (`Engine::set_workers`), for
    /// classes hosted by another Worker.
    pub(crate) workers: std::sync::OnceLock<Arc<dyn crate::WorkerLookup>>,
    /// The modules' code cache on disk (`code_cache.rs`), if configured.
    pub(crate) code_cache: Option<Arc<crate::code_cache::CodeCache>>,
    /// The namespaces' CPU quotas (docs/policy.md).
    pub(crate) quotas: isolane_worker::quota::CpuQuotas,
    /// Each namespace's share of each thread's queue for its calls.
    pub(crate) call_queues: Arc<isolane_calltree::queue::CallQueues>,
}

/// State an API crate's unit shares among the threads of one engine (a
/// store every isolate of the engine reaches: the Cache API's), made from
/// the engine's config the first time an isolate asks for it
/// (`HostState::engine_state`) and kept as long as the engine.
pub trait EngineState: Send + Sync + 'static {
    /// The state of the engine configured by `config`.
    fn start(config: &EngineConfig) -> Self;
}

/// The engine-wide states, one of each type, found by type (a handful:
/// a scan beats hashing).
#[derive(Default)]
pub(crate) struct EngineStates(Mutex<Vec<(TypeId, Arc<dyn Any + Send + Sync>)>>);

impl EngineStates {
    /// The engine's `T`, made by `T::start(config)` if it is the first ask.
    pub(crate) fn get_or_start<T: EngineState>(&self, config: &EngineConfig) -> Arc<T> {
        // A panic while holding the lock leaves the list whole: keep going.
        let mut states = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let found = states
            .iter()
            .find(|(id, _)| *id == TypeId::of::<T>())
            .and_then(|(_, state)| Arc::clone(state).downcast::<T>().ok());
        found.unwrap_or_else(|| {
            let state = Arc::new(T::start(config));
            states.push((TypeId::of::<T>(), state.clone()));
            state
        })
    }
}

/// What the isolates of one thread need from it (no pool: isolates hold an
/// `Rc` of this, and the pool holds isolates).
pub(crate) struct ThreadCtx {
    pub(crate) index: usize,
    /// What all threads share (their loads; see `fairness.rs`).
    pub(crate) shared: Arc<EngineShared>,
    pub(crate) observer: Arc<dyn EngineObserver>,
    pub(crate) config: EngineConfig,
    /// Outbound `fetch`: HTTPS and HTTP, pooled, through the egress policy.
    pub(crate) client: isolane_egress::FetchClient<crate::body::Body>,
    /// Outbound WebSocket handshakes: the same client, HTTP/1.1 only.
    pub(crate) upgrade_client: isolane_egress::FetchClient<crate::body::Body>,
    pub(crate) watchdog: Watchdog,
    pub(crate) snapshot: &'static [u8],
    /// The requests waiting and in flight, by namespace, with their CPU
    /// shares and penalties (borrowed briefly, never across an await).
    pub(crate) schedule: RefCell<Schedule>,
    /// Bounds what this thread's Workers write to the node's log
    /// (`node_log.rs`).
    pub(crate) node_log: crate::node_log::NodeLogGate,
    /// This thread's slot in the turn map, when the node keeps one.
    pub(crate) turn_slot: Option<crate::turn_map::TurnSlot>,
}
