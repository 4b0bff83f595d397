//! Where the caches send the Workers to reconcile: the running controller's
//! queue while this replica leads, nowhere while it stands by.
//!
//! The caches ([`crate::caches`]) outlive leadership, the controller does
//! not: each term attaches its queue ([`Triggers::attach`]) and the queue is
//! detached when the term's [`Attached`] guard drops. What the caches touch
//! while no controller runs is not kept: a new term reconciles every Worker
//! in the store first ([`Triggers::every`]).

use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use isolane_crds::Worker;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::lock;
use crate::routes::WorkerKey;

type Queue = mpsc::UnboundedSender<ObjectRef<Worker>>;

/// The attached controller's queue, if one runs.
#[derive(Clone, Debug, Default)]
pub struct Triggers(Arc<Mutex<Option<Queue>>>);

impl Triggers {
    /// Attaches a new queue (replacing any other); the Workers sent from now
    /// on come out of the returned stream until the guard drops.
    pub fn attach(&self) -> (Attached, mpsc::UnboundedReceiver<ObjectRef<Worker>>) {
        let (queue, requests) = mpsc::unbounded();
        *lock(&self.0) = Some(queue.clone());
        let attached = Attached {
            triggers: self.clone(),
            queue,
        };
        (attached, requests)
    }

    /// Reconciles `worker`, if a controller runs.
    pub fn wake(&self, worker: ObjectRef<Worker>) {
        self.send(|| std::iter::once(worker));
    }

    /// Reconciles each of `workers`.
    pub fn workers(&self, workers: Vec<WorkerKey>) {
        self.send(|| workers.iter().map(object_ref));
    }

    /// Reconciles every Worker in `store`.
    pub fn every(&self, store: &Store<Worker>) {
        self.send(|| {
            store
                .state()
                .into_iter()
                .map(|worker| ObjectRef::from_obj(&*worker))
        });
    }

    /// Sends `workers` to the attached queue under one lock; when none is
    /// attached, does not even list them (a standby's store is not read).
    fn send<I>(&self, workers: impl FnOnce() -> I)
    where
        I: IntoIterator<Item = ObjectRef<Worker>>,
    {
        if let Some(queue) = lock(&self.0).as_ref() {
            for worker in workers() {
                // A closed queue is a controller that stopped; its guard detaches it.
                let _ = queue.unbounded_send(worker);
            }
        }
    }
}

/// The reference the controller's queue takes for `key`.
pub(crate) fn object_ref(key: &WorkerKey) -> ObjectRef<Worker> {
    ObjectRef::new(&key.name).within(&key.namespace)
}

/// Keeps a controller's queue attached; detaches it on drop.
#[derive(Debug)]
pub struct Attached {
    triggers: Triggers,
    queue: Queue,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let mut current = lock(&self.triggers.0);
        if current
            .as_ref()
            .is_some_and(|queue| queue.same_receiver(&self.queue))
        {
            *current = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn key(name: &str) -> WorkerKey {
        WorkerKey {
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[tokio::test]
    async fn only_an_attached_queue_hears_and_a_dropped_one_is_detached() {
        let triggers = Triggers::default();
        triggers.workers(vec![key("before")]);
        let (attached, mut queue) = triggers.attach();
        triggers.workers(vec![key("during")]);
        assert_eq!(queue.next().await.map(|w| w.name), Some("during".into()));
        drop(attached);
        triggers.workers(vec![key("after")]);
        assert!(queue.next().await.is_none(), "the queue closed, empty");
        assert!(lock(&triggers.0).is_none());
    }

    #[tokio::test]
    async fn an_old_terms_guard_does_not_detach_the_new_one() {
        let triggers = Triggers::default();
        let (old, _old_queue) = triggers.attach();
        let (_new, mut new_queue) = triggers.attach();
        drop(old);
        triggers.workers(vec![key("w")]);
        assert_eq!(new_queue.next().await.map(|w| w.name), Some("w".into()));
    }
}
