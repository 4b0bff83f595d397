//! [`Engine`]: starts the engine threads and hands requests to them.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::{mpsc, oneshot, watch};

use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::config::EngineConfig;
use crate::job::Job;
use crate::observer::EngineObserver;
use crate::outcome::{EngineError, ExecuteError};
use crate::thread::{self, ThreadStart};
use crate::thread_ctx::EngineShared;
use crate::work::Work;
use crate::{dispatch, platform, snapshot};

/// The running engine: N pinned threads, each with its own isolate pool.
/// Cheap to clone; every clone drives the same threads.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<EngineShared>,
    observer: Arc<dyn EngineObserver>,
    shutdown: watch::Sender<bool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    config: EngineConfig,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("threads", &self.threads())
            .field("pool_mode", &self.inner.config.pool_mode)
            .finish()
    }
}

impl Engine {
    /// Initialises V8 (once per process), makes the snapshot (once per
    /// process: from `config.snapshot_cache` when it holds this build's) and starts the engine threads, each with one spare isolate
    /// ready (the others follow once it is idle). Call it from the main thread, before spawning other threads
    /// that might run JavaScript (see `platform.rs`).
    pub fn start(
        config: EngineConfig,
        observer: Arc<dyn EngineObserver>,
    ) -> Result<Engine, EngineError> {
        if config.isolates_per_thread == 0 {
            return Err(EngineError::InvalidConfig {
                field: "isolates_per_thread",
            });
        }
        if config.queue_depth == 0 {
            return Err(EngineError::InvalidConfig {
                field: "queue_depth",
            });
        }
        if crate::host::set_families(&config.families).is_err() {
            return Err(EngineError::InvalidConfig { field: "families" });
        }
        let units = crate::host::units().iter();
        crate::object_call::set_ring_classes(units.filter_map(|unit| unit.ring));
        let roots = isolane_egress::roots(&config.egress)?;
        if let Some(server) = &config.egress.dns_over_https {
            let url = url::Url::parse(server).map_err(|_| EngineError::InvalidConfig {
                field: "dns_over_https",
            })?;
            if !matches!(url.scheme(), "https" | "http") {
                return Err(EngineError::InvalidConfig {
                    field: "dns_over_https",
                });
            }
        }
        platform::init();
        let snapshot = snapshot::blob(config.snapshot_cache.as_deref())?;
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        let threads = config.resolved_threads();
        let mut config = config;
        config.threads = threads;

        let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads)
            .map(|_| mpsc::channel::<Job>(config.queue_depth))
            .unzip();
        let slots = crate::thread::worker_slots(&config);
        let shared = Arc::new(EngineShared {
            runtimes: (0..threads).map(|_| std::sync::OnceLock::new()).collect(),
            senders,
            directory: Mutex::new(Default::default()),
            loads: crate::fairness::Loads::new(threads),
            egress: Arc::new(isolane_egress::EgressPolicy::new(&config.egress)),
            roots,
            quotas: Default::default(),
            call_queues: Arc::new(isolane_calltree::queue::CallQueues::new(threads, slots)),
            states: Default::default(),
            crypto: crate::crypto_pool::Pool::for_cores(),
            tail: Arc::new(crate::tail::Tail::new(observer.clone())),
            workers: std::sync::OnceLock::new(),
            code_cache: config.code_cache.as_ref().and_then(|code_cache| {
                crate::code_cache::CodeCache::start(code_cache, observer.clone())
                    .inspect_err(|error| {
                        tracing::warn!(%error, "no code cache: its writer thread did not start");
                    })
                    .ok()
            }),
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut handles = Vec::with_capacity(threads);
        let mut readies = Vec::with_capacity(threads);
        for (index, jobs) in receivers.into_iter().enumerate() {
            let (ready, ready_rx) = std::sync::mpsc::sync_channel(1);
            let start = ThreadStart {
                index,
                core: if config.pin_threads && !cores.is_empty() {
                    Some(cores[index % cores.len()])
                } else {
                    None
                },
                config: config.clone(),
                observer: observer.clone(),
                snapshot,
                jobs,
                shutdown: shutdown_rx.clone(),
                shared: shared.clone(),
                ready,
            };
            let handle = std::thread::Builder::new()
                .name(format!("isolane-engine-{index}"))
                .stack_size(8 << 20)
                .spawn(move || thread::run(start))
                .map_err(|source| EngineError::SpawnThread {
                    thread: index,
                    source,
                })?;
            handles.push(handle);
            readies.push(ready_rx);
        }
        let engine = Engine {
            inner: Arc::new(Inner {
                shared,
                observer,
                shutdown,
                threads: Mutex::new(handles),
                config,
            }),
        };
        for (index, ready) in readies.into_iter().enumerate() {
            match ready.recv() {
                Ok(Ok(())) => {}
                Ok(Err(message)) => {
                    tracing::error!(thread = index, %message, "engine thread failed to start");
                    engine.stop_and_join();
                    return Err(EngineError::ThreadStart { thread: index });
                }
                Err(_) => {
                    engine.stop_and_join();
                    return Err(EngineError::ThreadStart { thread: index });
                }
            }
        }
        tracing::info!(
            threads,
            pool_mode = %engine.inner.config.pool_mode,
            v8 = v8::V8::get_version(),
            "engine started"
        );
        Ok(engine)
    }

    /// What the modules' code cache did so far (zeros without one).
    pub fn code_cache_stats(&self) -> crate::code_cache::CodeCacheStats {
        self.inner
            .shared
            .code_cache
            .as_ref()
            .map(|cache| cache.stats())
            .unwrap_or_default()
    }

    /// Where Durable Object calls to a class another Worker hosts
    /// (`durableObject.worker`) find that Worker; set once (later calls
    /// change nothing). Without it such calls fail with an Error.
    pub fn set_workers(&self, workers: Arc<dyn crate::WorkerLookup>) {
        let _ = self.inner.shared.workers.set(workers);
    }

    /// Number of engine threads.
    pub fn threads(&self) -> usize {
        self.inner.shared.senders.len()
    }

    /// The thread a request of a Worker in `namespace` placed on `thread`
    /// runs on now: `thread`, unless another namespace keeps it busy
    /// (`fairness.rs`). What [`Engine::execute`] decides, for a caller that
    /// needs to know before it sends (a test, a report).
    pub fn serving_thread(&self, thread: usize, namespace: &str) -> usize {
        self.inner.shared.loads.choose(thread, namespace)
    }

    /// Whether `namespace` ran a long turn lately (`fairness.rs`).
    pub fn runs_long_turns(&self, namespace: &str) -> bool {
        self.inner.shared.loads.runs_long_turns(namespace)
    }

    /// The configuration the engine runs with (`threads` resolved).
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Spawns `future` on engine thread `thread`'s own tokio runtime, beside
    /// its requests: a server whose requests all go to that thread (a node's
    /// per-thread gRPC listener) can run there, so `execute` hands a request
    /// over without waking another thread. The future runs between
    /// JavaScript turns; it must not block. It is dropped when the engine
    /// shuts down.
    pub fn spawn_on<F>(
        &self,
        thread: usize,
        future: F,
    ) -> Result<tokio::task::JoinHandle<F::Output>, EngineError>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = self
            .inner
            .shared
            .runtimes
            .get(thread)
            .and_then(|slot| slot.get())
            .filter(|_| !*self.inner.shutdown.borrow())
            .ok_or(EngineError::NoSuchThread { thread })?;
        Ok(handle.spawn(future))
    }

    /// The engine threads' own tokio runtimes, in thread order (those
    /// started so far): a server can serve its connections on them
    /// (`isolane dev`'s HTTP front end), so a request whose Worker lives on
    /// the thread its connection is served on is read, run and answered
    /// there, with no hand-off. What runs on them runs between JavaScript
    /// turns and must not block, as with [`Engine::spawn_on`].
    pub fn runtimes(&self) -> Vec<tokio::runtime::Handle> {
        if *self.inner.shutdown.borrow() {
            return Vec::new();
        }
        self.inner
            .shared
            .runtimes
            .iter()
            .filter_map(|slot| slot.get().cloned())
            .collect()
    }

    /// Tails `worker`'s invocations (`None`: every Worker's) on this
    /// engine: one [`crate::TailEvent`] per invocation that starts from now
    /// on, until the subscription is dropped. Never slows requests: a slow
    /// reader loses events and reads a note of how many (`tail.rs`).
    pub fn tail(&self, worker: Option<&str>) -> Result<crate::TailSubscription, crate::TailError> {
        self.inner.shared.tail.subscribe(worker)
    }

    /// Hands `event` (a queue message dropped, no invocation's) to its Worker's tails.
    pub fn publish_tail(&self, event: crate::TailEvent) {
        self.inner.shared.tail.publish(event);
    }

    /// Runs `request` for `bundle`'s Worker's `fetch` handler on engine
    /// thread `thread`: [`Engine::run`] of a [`Work::Fetch`].
    pub async fn execute(
        &self,
        thread: usize,
        bundle: Arc<WorkerBundle>,
        request: http::Request<Body>,
    ) -> Result<http::Response<Body>, ExecuteError> {
        self.run(thread, bundle, Work::Fetch(request)).await
    }

    /// Runs `work` on engine thread `thread` with `bundle`'s worker.
    /// Which thread serves a worker is the caller's choice (placement),
    /// except while another namespace keeps that thread busy: then the
    /// work runs on a thread clear of it (`fairness.rs`). On its thread
    /// it waits in its namespace's queue (`schedule.rs`). A Durable
    /// Object's work (an alarm, a call) runs on its object's home thread
    /// (`object_call.rs`), not `thread` (`dispatch.rs`).
    pub async fn run(
        &self,
        thread: usize,
        bundle: Arc<WorkerBundle>,
        work: Work,
    ) -> Result<http::Response<Body>, ExecuteError> {
        let threads = self.threads();
        if thread >= threads {
            return Err(ExecuteError::UnknownThread { thread, threads });
        }
        let (shared, observer) = (&self.inner.shared, &*self.inner.observer);
        // An alarm (or a call) for a Durable Object runs on the object's
        // home thread, whatever thread its Worker serves from
        // (`object_call.rs`).
        if let Some(home) = dispatch::home_of(&bundle, &work, threads) {
            return dispatch::run_on(shared, observer, home, bundle, work, true).await;
        }
        // Another namespace keeps this thread busy: run elsewhere instead
        // (see `fairness.rs`).
        let thread = self.serving_thread(thread, bundle.namespace());
        dispatch::run_on(shared, observer, thread, bundle, work, false).await
    }

    /// Drops worker `worker_id`'s warm isolates on every thread: it was
    /// deleted (see `retire.rs`). Returns once every thread has the job
    /// queued (it waits for room in a full queue); a thread drops them when
    /// it takes the job, ahead of any scheduling.
    pub async fn retire(&self, worker_id: &str) {
        let bundle = crate::retire::bundle(worker_id);
        for sender in &self.inner.shared.senders {
            let (reply, _) = oneshot::channel();
            let job = Job {
                bundle: Arc::clone(&bundle),
                work: Work::Retire,
                reply,
                forwarded: true,
            };
            // Closed: the engine is shutting down and drops every isolate.
            if sender.send(job).await.is_err() {
                return;
            }
        }
    }

    /// Stops taking requests, lets those in flight finish (bounded), drops
    /// every isolate and joins the threads. Blocks: call it from a blocking
    /// context (e.g. `spawn_blocking`) or at the end of `main`.
    pub fn shutdown(&self) {
        self.stop_and_join();
    }

    fn stop_and_join(&self) {
        let _ = self.inner.shutdown.send(true);
        join_threads(std::mem::take(
            &mut *self.inner.threads.lock().unwrap_or_else(|p| p.into_inner()),
        ));
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        join_threads(std::mem::take(
            self.threads.get_mut().unwrap_or_else(|p| p.into_inner()),
        ));
    }
}

/// Joins the engine threads. The last handle to the engine can go away on
/// an engine thread itself (a future spawned there with `spawn_on` held it):
/// that thread is already stopping and cannot join itself.
fn join_threads(handles: Vec<JoinHandle<()>>) {
    let me = std::thread::current().id();
    for handle in handles {
        if handle.thread().id() != me {
            let _ = handle.join();
        }
    }
}
