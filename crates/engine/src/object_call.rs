//! One instance of each Durable Object per process: an object lives on its
//! *home thread*, `thread_for` of its placement key
//! (`<namespace>/<worker>/<class>/<id>`, `isolane-placement`), in the
//! isolate of its Worker there. A stub call made on another thread leaves
//! the calling isolate as a [`crate::Work::ObjectCall`] (the call and its
//! request), handed to the home thread (never moved by `fairness.rs`;
//! `dispatch.rs`), where the engine delivers it to the object through its
//! input gate, under the Worker's limits, like an [`crate::AlarmEvent`];
//! the answer comes back as the request's response.

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

/// The class of a D1 database's calls (`isolane-bindings`' d1 unit): a
/// database is an object of this class, its id the database's name, owned
/// on the ring like any object. No JavaScript class can be named so.
pub const D1_CLASS: &str = "#d1";

/// The placement key of object `id` of `class` of Worker `worker_id`
/// (`<namespace>/<name>`): `<namespace>/<worker>/<class>/<id>`; for a D1
/// database ([`D1_CLASS`]), `<namespace>/#d1/<database>`: every Worker of
/// the namespace reaches the same owner.
pub fn object_key(worker_id: &str, class: &str, id: &str) -> String {
    if class == D1_CLASS {
        let namespace = crate::bundle::namespace_of(worker_id);
        return format!("{namespace}/{class}/{id}");
    }
    format!("{worker_id}/{class}/{id}")
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

    #[test]
    fn a_d1_database_is_keyed_by_namespace_not_worker() {
        assert_eq!(
            object_key("team-a/shop", D1_CLASS, "orders"),
            "team-a/#d1/orders"
        );
        assert_eq!(
            object_key("team-a/shop", D1_CLASS, "orders"),
            object_key("team-a/admin", D1_CLASS, "orders")
        );
        assert_ne!(
            object_key("team-a/shop", D1_CLASS, "orders"),
            object_key("team-b/shop", D1_CLASS, "orders")
        );
    }
}
