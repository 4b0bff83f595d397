//! One instance of each Durable Object per process: an object lives on its
//! *home thread*, `thread_for` of its placement key
//! (`<namespace>/<worker>/<class>/<id>`, `isolane-placement`), in the
//! isolate of its Worker there. A stub call made on another thread leaves
//! the calling isolate as a [`crate::Work::ObjectCall`] (the call and its
//! request), handed to the home thread (never moved by `fairness.rs`;
//! `dispatch.rs`), where the engine delivers it to the object through its
//! input gate, under the Worker's limits, like an [`crate::AlarmEvent`];
//! the answer comes back as the request's response.

use std::sync::{Arc, OnceLock};

use crate::bundle::WorkerBundle;

/// A stub call forwarded to the object's home thread: the request is the
/// `stub.fetch` request, or for a JS RPC call a `POST` whose body is the
/// V8-serialized argument array. The response to an RPC call is a 200
/// whose body is the V8-serialized `[true, result]` or
/// `[false, name, message]` (what the method threw).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectCall {
    /// The class as the Worker's binding names it (`durableObject.className`).
    pub class: String,
    /// The object's id (64 hex digits).
    pub id: String,
    /// The RPC method, or `None` for `stub.fetch`.
    pub method: Option<String>,
}

/// A class of calls an API crate puts on the ring ([`crate::api::Unit::ring_class`]):
/// placed, owned and forwarded as an object's (`host/object_forward.rs`),
/// but the process's, not an isolate's: any thread of its owner serves it.
pub trait RingClass: Sync {
    /// The class its calls carry (`#…`: no JavaScript class is named so).
    fn class(&self) -> &'static str;
    /// The placement key of its object `id` called by Worker `worker_id`.
    fn key(&self, worker_id: &str, id: &str) -> String;
    /// The calling Worker (`None`: none is loaded) and the object its
    /// `name` (as JavaScript sends it) reaches; else a `TypeError`'s message.
    fn resolve<'w>(
        &self,
        worker: Option<&'w Arc<WorkerBundle>>,
        name: &str,
    ) -> Result<(&'w Arc<WorkerBundle>, String), String>;
    /// Object `id` of `worker` is another node's: this process's copy is stale.
    fn owned_elsewhere(&self, store: &isolane_storage::Store, worker: &WorkerBundle, id: &str);
    /// The message of the `Error` a failed call (`error`: why) rejects with.
    fn failure(&self, error: String) -> String;
}

/// The ring classes of this process's units, fixed by its first engine.
static RING_CLASSES: OnceLock<Vec<&'static dyn RingClass>> = OnceLock::new();

pub(crate) fn set_ring_classes(classes: impl Iterator<Item = &'static dyn RingClass>) {
    RING_CLASSES.get_or_init(|| classes.collect());
}

pub(crate) fn ring_class(class: &str) -> Option<&'static dyn RingClass> {
    RING_CLASSES
        .get()?
        .iter()
        .find(|ring| ring.class() == class)
        .copied()
}

/// The placement key of object `id` of `class` of Worker `worker_id`
/// (`<namespace>/<name>`): `<namespace>/<worker>/<class>/<id>`; a
/// [`RingClass`]'s as it says.
pub fn object_key(worker_id: &str, class: &str, id: &str) -> String {
    match ring_class(class) {
        Some(ring) => ring.key(worker_id, id),
        None => format!("{worker_id}/{class}/{id}"),
    }
}

/// The engine thread (of `threads`) that owns object `id` of `class` of
/// Worker `worker_id`.
pub fn home_thread(worker_id: &str, class: &str, id: &str, threads: usize) -> usize {
    let threads = u32::try_from(threads).unwrap_or(u32::MAX);
    isolane_placement::thread_for(&object_key(worker_id, class, id), threads) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_home_is_stable_and_spread() {
        let homes: Vec<usize> = (0..64)
            .map(|i| home_thread("shop/counter", "Counter", &format!("{i:064x}"), 4))
            .collect();
        assert!(homes.iter().all(|&t| t < 4));
        // Every thread is home to some of 64 objects.
        for t in 0..4 {
            assert!(homes.contains(&t), "{homes:?}");
        }
        assert_eq!(
            homes[7],
            home_thread("shop/counter", "Counter", &format!("{:064x}", 7), 4)
        );
        assert_eq!(home_thread("a/b", "C", "d", 1), 0);
    }
}
