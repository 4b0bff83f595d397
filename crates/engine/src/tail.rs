//! [`Tail`]: the engine's invocation events ([`TailEvent`]), for whoever
//! tails a Worker (`isolane dev`, a node's tail endpoint).
//!
//! Expected flow: a reader subscribes for one Worker (or all, for `isolane
//! dev`) and gets a [`TailSubscription`]; every invocation of that Worker
//! that starts while it is subscribed becomes one event, with its console
//! lines and uncaught exceptions, published when the invocation ends.
//!
//! Guarantees: requests never wait on a tail. Each subscriber has its own
//! bounded queue ([`QUEUE`] events); publishing is a `try_send`, and an
//! event that does not fit is dropped for that subscriber and counted, and
//! the subscriber reads a [`TailItem::Dropped`] note before its next event
//! (and the observer counts the drops).
//!
//! Cost with nobody tailing: one relaxed atomic load per request (see
//! [`Tail::watching`]); no event is built, no console line is kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::mpsc;

use crate::observer::EngineObserver;

pub use isolane_worker::{Exception, LogLine, TailEvent};

/// Events a subscriber may have queued before more are dropped for it.
pub const QUEUE: usize = 128;

/// Tails one Worker may have open on one engine at a time.
pub const MAX_TAILS_PER_WORKER: usize = 10;

/// The key for a subscriber of every Worker.
const ALL: &str = "*";

/// The engine's tail hub; one per engine, shared by its threads.
pub(crate) struct Tail {
    /// Subscribers of any Worker: 0 is the fast path.
    subscribers: AtomicUsize,
    by_worker: RwLock<HashMap<String, Vec<Arc<Subscriber>>>>,
    observer: Arc<dyn EngineObserver>,
}

struct Subscriber {
    id: u64,
    queue: mpsc::Sender<Arc<TailEvent>>,
    dropped: AtomicU64,
}

/// What a subscriber reads.
#[derive(Debug, Clone)]
pub enum TailItem {
    Event(Arc<TailEvent>),
    /// This many events were dropped for this subscriber: it read too
    /// slowly.
    Dropped(u64),
}

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    #[error("worker {worker} already has {MAX_TAILS_PER_WORKER} tails open on this node")]
    TooManyTails { worker: String },
}

impl Tail {
    pub(crate) fn new(observer: Arc<dyn EngineObserver>) -> Self {
        Self {
            subscribers: AtomicUsize::new(0),
            by_worker: RwLock::default(),
            observer,
        }
    }

    /// Whether anyone tails `worker` now. With no subscriber at all, one
    /// relaxed load: that is the whole cost on the request path.
    pub(crate) fn watching(&self, worker: &str) -> bool {
        if self.subscribers.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let map = self.by_worker.read().unwrap_or_else(|p| p.into_inner());
        map.contains_key(worker) || map.contains_key(ALL)
    }

    /// Hands `event` to every subscriber of its Worker, never waiting.
    pub(crate) fn publish(&self, event: TailEvent) {
        let event = Arc::new(event);
        let map = self.by_worker.read().unwrap_or_else(|p| p.into_inner());
        let subscribers = [event.worker.as_str(), ALL]
            .into_iter()
            .filter_map(|key| map.get(key))
            .flatten();
        for subscriber in subscribers {
            if subscriber.queue.try_send(event.clone()).is_err() {
                subscriber.dropped.fetch_add(1, Ordering::Relaxed);
                self.observer.tail_events_dropped(1);
            }
        }
    }

    /// Subscribes to `worker`'s events (`None`: every Worker's).
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        worker: Option<&str>,
    ) -> Result<TailSubscription, TailError> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = worker.unwrap_or(ALL).to_owned();
        let (queue, events) = mpsc::channel(QUEUE);
        let subscriber = Arc::new(Subscriber {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            queue,
            dropped: AtomicU64::new(0),
        });
        {
            let mut map = self.by_worker.write().unwrap_or_else(|p| p.into_inner());
            let list = map.entry(key.clone()).or_default();
            if worker.is_some() && list.len() >= MAX_TAILS_PER_WORKER {
                return Err(TailError::TooManyTails { worker: key });
            }
            list.push(subscriber.clone());
        }
        self.subscribers.fetch_add(1, Ordering::Relaxed);
        Ok(TailSubscription {
            tail: self.clone(),
            key,
            subscriber,
            events,
        })
    }

    fn unsubscribe(&self, key: &str, id: u64) {
        let mut map = self.by_worker.write().unwrap_or_else(|p| p.into_inner());
        if let Some(list) = map.get_mut(key) {
            list.retain(|s| s.id != id);
            if list.is_empty() {
                map.remove(key);
            }
        }
        self.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One reader's events; unsubscribes when dropped.
pub struct TailSubscription {
    tail: Arc<Tail>,
    key: String,
    subscriber: Arc<Subscriber>,
    events: mpsc::Receiver<Arc<TailEvent>>,
}

impl std::fmt::Debug for TailSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailSubscription")
            .field("worker", &self.key)
            .finish()
    }
}

impl TailSubscription {
    /// The next item: a note of the events dropped for this subscriber
    /// since its last read, if any, else the next event (it waits for one).
    pub async fn next(&mut self) -> Option<TailItem> {
        match self.subscriber.dropped.swap(0, Ordering::Relaxed) {
            0 => self.events.recv().await.map(TailItem::Event),
            n => Some(TailItem::Dropped(n)),
        }
    }
}

impl Drop for TailSubscription {
    fn drop(&mut self) {
        self.tail.unsubscribe(&self.key, self.subscriber.id);
    }
}
